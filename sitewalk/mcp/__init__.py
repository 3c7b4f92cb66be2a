"""sitewalk-mcp: the walk as MCP tools (web_fetch, web_crawl, web_grep), served over stdio."""

from __future__ import annotations

from sitewalk.mcp.cli import main
from sitewalk.mcp.options import ServerOptions
from sitewalk.mcp.server import build_server

__all__ = ["ServerOptions", "build_server", "main"]
