"""One budget for the whole walk: pages, time and bytes, the pace between requests, and the report."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy import Request, signals
from scrapy.exceptions import DownloadCancelledError, DownloadTimeoutError, IgnoreRequest, NotConfigured
from scrapy.utils.asyncio import create_looping_call
from twisted.internet import error as twisted_errors
from twisted.internet.defer import CancelledError

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

    # typing.Self requires Python 3.11
    from typing_extensions import Self

    from sitewalk.spiders.sitewalk import SitewalkSpider

logger = logging.getLogger(__name__)

__all__ = ["WalkBudget"]


class WalkBudget:
    """The walk's limits, shared by every page, and the report written when the walk ends.

    Limits come from the spider's config: ``max_pages`` (fetched pages, any status, seed
    included), ``deadline`` (seconds for the whole walk) and ``max_bytes`` (body bytes, after
    decompression, for the whole walk). Consumers call :meth:`stop` to end the walk after the page
    they are looking at. The pace: each page request starts at least ``delay`` seconds after the
    previous one started, or the robots.txt ``Crawl-delay`` when that is longer.

    Settings: ``SITEWALK_PROGRESS_INTERVAL`` (seconds between progress lines, default 10; 0 = only
    at each new depth). Stats: ``sitewalk/budget/pages``, ``sitewalk/budget/bytes``,
    ``sitewalk/budget/stopped/<reason>``.
    """

    def __init__(self, crawler: Crawler) -> None:
        spider = crawler.spider
        config = getattr(spider, "config", None)
        if config is None:
            raise NotConfigured("WalkBudget works with the sitewalk spider only")
        self.crawler = crawler
        self.spider: SitewalkSpider = spider  # type: ignore[assignment]
        self.max_pages: int = config.max_pages
        self.deadline: float = config.deadline
        self.max_bytes: int = config.max_bytes
        self.delay: float = config.delay
        self.max_depth: int = config.max_depth
        self.report_path: str | None = config.report
        self.pages = 0
        self.bytes = 0
        self._started = time.monotonic()
        self._last_request: float | None = None
        self._requested_stop: str | None = None
        self._final: str | None = None
        self._depth = -1
        self._progress_interval = crawler.settings.getfloat("SITEWALK_PROGRESS_INTERVAL")
        self._progress = create_looping_call(self._log_progress)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    # -- the budget, as the frontier and the middlewares see it
    def seconds_left(self) -> float:
        return self.deadline - (time.monotonic() - self._started)

    def bytes_left(self) -> int:
        return self.max_bytes - self.bytes

    def slow_down(self, crawl_delay: float) -> None:
        """robots.txt asked for ``crawl_delay`` seconds between requests: it can only slow us."""
        if crawl_delay > self.delay:
            logger.info("robots.txt Crawl-delay %gs is longer than delay=%gs: using it", crawl_delay, self.delay)
            self.delay = crawl_delay

    def resume(self, pages: int, byte_count: int, elapsed: float) -> None:
        """Carry over what an interrupted walk (JOBDIR) already spent."""
        self.pages, self.bytes = pages, byte_count
        self._started = time.monotonic() - elapsed

    def request_started(self) -> None:
        self._last_request = time.monotonic()

    async def wait_turn(self) -> None:
        """Sleep until the next request may start (never past the deadline)."""
        if self._last_request is None:
            return
        wait = self._last_request + self.delay - time.monotonic()
        if wait > 0:
            await asyncio.sleep(min(wait, max(self.seconds_left(), 0)))

    def page_fetched(self, byte_count: int, depth: int) -> None:
        self.pages += 1
        self.bytes += byte_count
        self.crawler.stats.inc_value("sitewalk/budget/pages")
        self.crawler.stats.inc_value("sitewalk/budget/bytes", byte_count)
        if depth != self._depth:
            self._depth = depth
            self._log_progress()

    def stop(self, reason: str = "callback") -> None:
        """End the walk after the current page: no further page is requested."""
        if self._requested_stop is None:
            self._requested_stop = reason

    def reason_to_stop(self) -> str | None:
        if self._requested_stop is not None:
            return self._requested_stop
        if self.pages >= self.max_pages:
            return "max-pages"
        if self.seconds_left() <= 0:
            return "deadline"
        if self.bytes_left() <= 0:
            return "max-bytes"
        return None

    def cut_off(self, failure: Failure, request: Request) -> str | None:
        """If the budget cut this download short, stop the walk and say so; else None."""
        if failure.check(DownloadTimeoutError, twisted_errors.TimeoutError) and self.seconds_left() <= 0.05:
            self.stop("deadline")
            return f"cut off at the deadline (deadline={self.deadline:g}s)"
        if request.meta.get("sitewalk_budget_maxsize") and (
            failure.check(DownloadCancelledError, CancelledError)
            or (failure.check(IgnoreRequest) and "DOWNLOAD_MAXSIZE" in str(failure.value))
        ):
            self.stop("max-bytes")
            return f"cut off at max_bytes (max_bytes={self.max_bytes}, {self.bytes_left()} left for this page)"
        return None

    def finish(self, reason: str | None) -> None:
        """The frontier ended: ``reason`` is the stop that left pages unfetched, if any."""
        if reason is not None:
            self._final = reason
        elif self._requested_stop in ("deadline", "max-bytes"):
            self._final = self._requested_stop  # the cut-off page itself was left unfetched
        else:
            self._final = None

    # -- signals
    def spider_opened(self) -> None:
        self._started = time.monotonic()
        if self._progress_interval > 0:
            self._progress.start(self._progress_interval, now=False)

    def spider_closed(self, reason: str) -> None:
        if self._progress.running:
            self._progress.stop()
        stopped = "interrupted" if reason == "shutdown" else self._final
        if stopped:
            self.crawler.stats.inc_value(f"sitewalk/budget/stopped/{stopped}")
        elapsed = time.monotonic() - self._started
        report = self.spider.build_report(stopped, elapsed)
        self.spider.report = report
        self.spider.save_state(finished=stopped != "interrupted", elapsed=elapsed)
        if self.report_path:
            Path(self.report_path).write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
        logger.info("sitewalk: %s", report.summary())
        if report.robots_skipped:
            logger.info(
                "sitewalk: %d pages skipped because robots.txt disallows them "
                "(set -s ROBOTSTXT_OBEY=false to fetch them)",
                len(report.robots_skipped),
            )

    def _log_progress(self) -> None:
        logger.info(
            "progress: pages %d/%d, depth %d/%d, bytes %d/%d, elapsed %.1fs/%gs",
            self.pages, self.max_pages, max(self._depth, 0), self.max_depth,
            self.bytes, self.max_bytes, time.monotonic() - self._started, self.deadline,
        )
