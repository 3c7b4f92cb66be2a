"""Start-up work kept cheap: importing Scrapy's HTTP/1.1 download handler."""

from __future__ import annotations

import sys

from sitewalk._compat import deprecated_classes_without_stack

__all__ = ["import_http11_handler"]


def import_http11_handler() -> None:
    """Import ``scrapy.core.downloader.handlers.http11`` without its ``inspect.stack()`` calls
    (:func:`sitewalk._compat.deprecated_classes_without_stack`): 0.1-0.3 s of a walk's start-up,
    spent by Scrapy to learn the module of three deprecated aliases the import defines."""
    if "scrapy.core.downloader.handlers.http11" in sys.modules:
        return
    with deprecated_classes_without_stack():
        import scrapy.core.downloader.handlers.http11  # noqa: F401
