"""``python -m sitewalk.mcp``: the same as the sitewalk-mcp command."""

from sitewalk.mcp.cli import main

main()
