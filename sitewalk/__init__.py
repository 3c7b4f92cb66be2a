"""sitewalk: walk one web site breadth-first from a seed URL and hand each page to a consumer."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from sitewalk.api import extract, extract_async, grep, grep_async, walk, walk_async
    from sitewalk.config import WalkConfig
    from sitewalk.exceptions import SeedError, SitewalkError
    from sitewalk.items import Extract, IndexEntry, Match, Page, Report

__all__ = [
    "Extract",
    "IndexEntry",
    "Match",
    "Page",
    "Report",
    "SeedError",
    "SitewalkError",
    "WalkConfig",
    "__version__",
    "extract",
    "extract_async",
    "grep",
    "grep_async",
    "walk",
    "walk_async",
]

# The public names are imported on first use: the page-reading helper process imports
# sitewalk.pagereader, which must not cost Scrapy's import time.
_MODULES = {
    "Extract": "sitewalk.items",
    "IndexEntry": "sitewalk.items",
    "Match": "sitewalk.items",
    "Page": "sitewalk.items",
    "Report": "sitewalk.items",
    "SeedError": "sitewalk.exceptions",
    "SitewalkError": "sitewalk.exceptions",
    "WalkConfig": "sitewalk.config",
    "extract": "sitewalk.api",
    "extract_async": "sitewalk.api",
    "grep": "sitewalk.api",
    "grep_async": "sitewalk.api",
    "walk": "sitewalk.api",
    "walk_async": "sitewalk.api",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'sitewalk' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
