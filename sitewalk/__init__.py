"""sitewalk: walk one web site breadth-first from a seed URL and hand each page to a consumer."""

from __future__ import annotations

__version__ = "0.1.0"

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
