"""The walk's progress on a terminal: one line at the bottom, updated in place."""

from __future__ import annotations

import logging
import os
import shutil
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from sitewalk.exceptions import SitewalkError
from sitewalk.items import human_bytes
from sitewalk.state import WalkComponent

if TYPE_CHECKING:
    from typing import IO

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

    from sitewalk.hints import Surface
    from sitewalk.ledger import Ledger

__all__ = ["TerminalProgress", "budgets_spent", "progress_interval", "terminal_handler"]

# Back to the start of the line, and erase it.
_ERASE = "\r\x1b[K"


def progress_interval(settings: BaseSettings, surface: Surface) -> float:
    """``SITEWALK_PROGRESS_INTERVAL``: the seconds between the walk's progress lines. A value that
    is not a number fails as its extension is built, before any request, in the words of the
    walk's front end (``surface``)."""
    name = "SITEWALK_PROGRESS_INTERVAL"
    interval = settings.get(name)
    try:
        return float(interval)
    except (TypeError, ValueError):
        raise SitewalkError(
            f"{surface.setting(name, interval)} is not a number of seconds (give e.g. {surface.setting(name, 10)}; "
            "0 = a progress line at each new depth only)"
        ) from None


def budgets_spent(ledger: Ledger) -> str:
    """How much of each of the walk's budgets the ``ledger`` says was spent, for the summary of a
    walk that one of them stopped: ``budgets spent: pages 20/20, 3.1 MB/20 MB, 12.0s/60s``."""
    return (
        f"budgets spent: pages {ledger.pages}/{ledger.max_pages}, {human_bytes(ledger.bytes)}/{human_bytes(ledger.max_bytes)}, "
        f"{ledger.elapsed():.1f}s/{ledger.deadline:g}s"
    )


def terminal_handler(settings: BaseSettings) -> logging.StreamHandler[IO[str]] | None:
    """The log's handler that shows INFO records on a terminal (stderr, as the ``sitewalk``
    command and ``scrapy crawl`` log), if there is one; None for a log file, a pipe, a log above
    INFO and ``SITEWALK_PROGRESS_INTERVAL=0``."""
    if settings.getfloat("SITEWALK_PROGRESS_INTERVAL") <= 0 or settings.get("LOG_FILE"):
        return None
    for handler in logging.getLogger().handlers:
        stream = getattr(handler, "stream", None)
        if isinstance(handler, logging.StreamHandler) and handler.level <= logging.INFO and _is_terminal(stream):
            return handler
    return None


def _is_terminal(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except ValueError:  # a closed stream
        return False


class TerminalProgress(WalkComponent):
    """When the log shows on a terminal (:func:`terminal_handler`), the progress line
    (:meth:`sitewalk.ledger.Ledger.progress`: pages, depth, bytes, time, rate, time left) is
    drawn on the terminal's last line and updated in place every second, instead of a new line
    every ``SITEWALK_PROGRESS_INTERVAL`` seconds; a log record erases it first, so the log reads
    as elsewhere (the lines at each new depth included), and it is erased when the walk ends.
    NotConfigured anywhere else: a log file or a pipe keeps the progress lines.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        if progress_interval(crawler.settings, self.walk.surface) <= 0 or terminal_handler(crawler.settings) is None:
            raise NotConfigured
        self._handler: logging.StreamHandler[IO[str]] | None = None
        self._shown = False
        self._tick = create_looping_call(self._draw)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    def spider_opened(self) -> None:
        # Scrapy replaces its log handler once the crawler's components are built: this one is the log's.
        self._handler = terminal_handler(self.crawler.settings)
        if self._handler is not None:
            self._handler.addFilter(self._erase_for)
            self._tick.start(1.0, now=False)

    def spider_closed(self) -> None:
        if self._tick.running:
            self._tick.stop()
        if self._handler is not None:
            self._handler.removeFilter(self._erase_for)
            self._erase()

    def _draw(self) -> None:
        assert self._handler is not None
        try:
            width = os.get_terminal_size(self._handler.stream.fileno()).columns
        except (OSError, ValueError):
            width = 0
        width = width or shutil.get_terminal_size().columns
        # One character short of the width: a full line would wrap on some terminals.
        self._write(_ERASE + self.walk.ledger.progress()[: max(width - 1, 1)])
        self._shown = True

    def _erase_for(self, record: logging.LogRecord) -> bool:
        self._erase()
        return True

    def _erase(self) -> None:
        if self._shown:
            self._shown = False
            self._write(_ERASE)

    def _write(self, text: str) -> None:
        assert self._handler is not None
        stream = self._handler.stream
        stream.write(text)
        stream.flush()
