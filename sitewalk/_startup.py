"""Start-up work kept cheap: importing Scrapy's HTTP/1.1 download handler."""

from __future__ import annotations

import inspect
import sys
from types import SimpleNamespace
from typing import Any

__all__ = ["import_http11_handler"]


def import_http11_handler() -> None:
    """Import ``scrapy.core.downloader.handlers.http11`` without its ``inspect.stack()`` calls.

    Importing it defines three deprecated aliases with ``scrapy.utils.deprecate.
    create_deprecated_class``, which calls ``inspect.stack()`` only to learn the module that
    defines the alias. ``inspect.stack()`` reads the source of every frame on the stack and maps
    every loaded module to its file: 0.1-0.3 s of a walk's start-up, for three module names. While
    the handler is imported, ``inspect.stack`` returns just the caller's caller, with the same
    ``__module__`` answer the full stack would give.
    """
    if "scrapy.core.downloader.handlers.http11" in sys.modules:
        return
    full_stack = inspect.stack

    def defining_module(context: int = 1) -> list[Any]:
        # [0] is create_deprecated_class, [1] the module that calls it.
        caller = sys._getframe(2)
        return [None, (SimpleNamespace(__module__=caller.f_globals.get("__name__")),)]

    inspect.stack = defining_module
    try:
        import scrapy.core.downloader.handlers.http11  # noqa: F401
    finally:
        inspect.stack = full_stack
