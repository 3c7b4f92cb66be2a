"""Each request's share of the walk's budget, given when the walk's pace lets it start."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals

from sitewalk.downloadermiddlewares.robots import ROBOTS_META
from sitewalk.linkcheck import CHECK_META, OTHER_ORIGIN
from sitewalk.sitemaps import SITEMAP_META
from sitewalk.state import WalkComponent

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

__all__ = ["BudgetMiddleware"]

# Where Scrapy warns of a download larger than its max size, and how: while it downloads, and
# while it decompresses a body sent with a Content-Encoding.
_HANDLER_LOGGER = logging.getLogger("scrapy.core.downloader.handlers.http11")
_MAXSIZE_WARNING = "bytes which is larger than download max size"
_COMPRESSION_LOGGER = logging.getLogger("scrapy.downloadermiddlewares.httpcompression")
_DECOMPRESSION_WARNING = "during decompression."


class BudgetMiddleware(WalkComponent):
    """Gives each request what is left of the walk's budget, so limits bite mid-download, and
    holds it until the walk's pace lets it start.

    Every request to the site (pages, robots.txt, sitemaps, redirect hops, a page asked again
    after a 429, link checks; not a link check on another site, paced by :mod:`sitewalk.linkcheck`)
    waits here until ``delay`` seconds after the previous one started and until a pause is over (:meth:`sitewalk.gate.Gate.may_start`); a page request that a stop came upon
    meanwhile is dropped (listed as unvisited). Then it sets meta ``download_timeout`` to the
    seconds left before the deadline and ``download_maxsize`` to the body bytes left under
    max_bytes (never more than DOWNLOAD_TIMEOUT / DOWNLOAD_MAXSIZE), and ``sitewalk_started`` to
    when it started. Meta ``sitewalk_budget_maxsize`` says the size limit is the budget's, so a
    page cut off by it stops the walk with "max-bytes". robots.txt requests get the time limit
    too but are not pages.

    A page cut off by max_bytes is the walk's own stop, which its summary tells: Scrapy's
    warnings that the download, or its body as it is decompressed (Content-Encoding), exceeds
    its max size are kept out of the log for those requests (filters on the HTTP handler's and
    HttpCompressionMiddleware's loggers while the walk runs; Scrapy has no other way to silence
    them). A page larger than DOWNLOAD_MAXSIZE keeps Scrapy's warnings; a sitemap file whose
    body grows past either limit as it is decompressed is said in the walk's line
    (:mod:`sitewalk.sitemaps`) and keeps none.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._timeout = crawler.settings.getfloat("DOWNLOAD_TIMEOUT")
        self._maxsize = crawler.settings.getint("DOWNLOAD_MAXSIZE")
        # How Scrapy's warning names each request whose size limit is the budget's, while it is downloaded.
        self._budget_bound: set[str] = set()
        # How HttpCompressionMiddleware's warning names each response whose size limit is the
        # budget's, or that is a sitemap file's, from its download until it is decompressed.
        self._budget_bound_responses: set[str] = set()
        _HANDLER_LOGGER.addFilter(self._not_budget_cut)
        _COMPRESSION_LOGGER.addFilter(self._not_budget_cut_decompressed)
        crawler.signals.connect(self.response_received, signal=signals.response_received)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    async def process_request(self, request: Request) -> None:
        await self.walk.gate.start(request.meta, paced=request.meta.get(CHECK_META) != OTHER_ORIGIN)
        budget = self.walk.budget
        seconds = max(budget.seconds_left(), 0.001)
        request.meta["download_timeout"] = min(seconds, self._timeout) if self._timeout else seconds
        if not request.meta.get(ROBOTS_META):
            left = max(budget.bytes_left(), 1)
            budget_bound = not self._maxsize or left <= self._maxsize
            request.meta["download_maxsize"] = left if budget_bound else self._maxsize
            request.meta["sitewalk_budget_maxsize"] = budget_bound
            if budget_bound:
                self._budget_bound.add(f"in request {request}.")

    def process_response(self, request: Request, response: Response) -> Response:
        self._budget_bound.discard(f"in request {request}.")
        said_here = request.meta.get("sitewalk_budget_maxsize") or request.meta.get(SITEMAP_META)
        if said_here and response.headers.get(b"Content-Encoding"):
            self._budget_bound_responses.add(f"Ignored response {response} ")
        return response

    def response_received(self, response: Response) -> None:
        self._budget_bound_responses.discard(f"Ignored response {response} ")

    def process_exception(self, request: Request, exception: Exception) -> None:
        self._budget_bound.discard(f"in request {request}.")

    def spider_closed(self) -> None:
        _HANDLER_LOGGER.removeFilter(self._not_budget_cut)
        _COMPRESSION_LOGGER.removeFilter(self._not_budget_cut_decompressed)

    def _not_budget_cut(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (_MAXSIZE_WARNING in message and message.endswith(tuple(self._budget_bound)))

    def _not_budget_cut_decompressed(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if not message.endswith(_DECOMPRESSION_WARNING):
            return True
        said = next((name for name in self._budget_bound_responses if message.startswith(name)), None)
        self._budget_bound_responses.discard(said or "")
        return said is None
