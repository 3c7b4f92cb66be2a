"""``python -m sitewalk URL``: the ``sitewalk`` command."""

from sitewalk.cli import main

raise SystemExit(main())
