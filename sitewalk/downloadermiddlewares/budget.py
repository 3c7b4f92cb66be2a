"""Each request's share of the walk's budget: its start after the pace, its bytes charged as they arrive."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.downloadermiddlewares.stats import get_header_size, get_status_size

from sitewalk._compat import (
    DECOMPRESSION_WARNING_LOGGER,
    MAXSIZE_WARNING_LOGGER,
    decompression_warning_response,
    maxsize_warning_request,
)
from sitewalk.kinds import BUDGET_MAXSIZE, WIRE_BYTES, Kind, kind_of
from sitewalk.ledger import BytesSpent
from sitewalk.state import WalkComponent

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Headers, Request, Response

__all__ = ["BudgetMiddleware"]

# Where Scrapy warns of a download larger than its max size: while it downloads, and while it
# decompresses a body sent with a Content-Encoding (its texts are read in sitewalk._compat).
_HANDLER_LOGGER = logging.getLogger(MAXSIZE_WARNING_LOGGER)
_COMPRESSION_LOGGER = logging.getLogger(DECOMPRESSION_WARNING_LOGGER)
# A status line's bytes besides its reason phrase, and the blank line after the headers, as
# Scrapy's downloader/response_bytes counts them (scrapy.downloadermiddlewares.stats).
_STATUS_LINE = get_status_size(0)
_HEADERS_END = 4


class BudgetMiddleware(WalkComponent):
    """Starts each request when the walk's pace lets it, and charges the walk's ledger
    (:class:`sitewalk.ledger.Ledger`) for every byte the site sends, as it arrives.

    Every request to the site (every kind of :mod:`sitewalk.kinds`: pages, robots.txt,
    sitemaps, redirect hops, a page asked again after a 429, link checks, a browser's requests)
    waits here for its kind's pace and a pause (:meth:`sitewalk.gate.Gate.start`); a page request
    that a stop came upon meanwhile is dropped (listed as unvisited), and once max_bytes is spent
    no request starts (it fails with :class:`~sitewalk.ledger.BytesSpent`). Then meta
    ``download_timeout`` is the seconds left before the deadline (never more than
    DOWNLOAD_TIMEOUT), and ``download_maxsize`` max_bytes (never more than DOWNLOAD_MAXSIZE),
    which bounds a body as it is decompressed; meta
    ``sitewalk_budget_maxsize`` says that bound is the budget's, so a body that grows past it
    stops the walk with "max-bytes".

    The bytes are charged on the download side, from Scrapy's ``headers_received`` and
    ``bytes_received`` signals: the status line and headers when they arrive (and the whole
    answer at once when its Content-Length already passes what is left), each piece of the body
    as it arrives. A charge past max_bytes raises :class:`~sitewalk.ledger.BytesSpent`, which
    Scrapy turns into a closed connection and the request's failure. The reason phrase of the
    status line, which the headers signal does not carry, is charged with the whole response.

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
        # Each request whose size limit is the budget's, as Scrapy's warning names it, while it is downloaded.
        self._budget_bound: set[str] = set()
        # How HttpCompressionMiddleware's warning names each response whose size limit is the
        # budget's, or that is a sitemap file's, from its download until it is decompressed.
        self._budget_bound_responses: set[str] = set()
        _HANDLER_LOGGER.addFilter(self._not_budget_cut)
        _COMPRESSION_LOGGER.addFilter(self._not_budget_cut_decompressed)
        crawler.signals.connect(self.headers_received, signal=signals.headers_received)
        crawler.signals.connect(self.bytes_received, signal=signals.bytes_received)
        crawler.signals.connect(self.response_received, signal=signals.response_received)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    async def process_request(self, request: Request) -> None:
        await self.walk.gate.start(request.meta)
        ledger = self.walk.ledger
        if ledger.refused or ledger.bytes_left() <= 0:
            raise BytesSpent(f"not started: max_bytes is spent (max_bytes={ledger.max_bytes})")
        seconds = max(ledger.seconds_left(), 0.001)
        request.meta["download_timeout"] = min(seconds, self._timeout) if self._timeout else seconds
        # A body may unpack to max_bytes at most: the same bound whenever the request starts, so
        # which page a bomb cuts does not depend on the pages in flight beside it.
        budget_bound = not self._maxsize or ledger.max_bytes <= self._maxsize
        request.meta["download_maxsize"] = ledger.max_bytes if budget_bound else self._maxsize
        request.meta[BUDGET_MAXSIZE] = budget_bound
        if budget_bound:
            self._budget_bound.add(str(request))

    def headers_received(self, headers: Headers, body_length: object, request: Request) -> None:
        """A response's status line and headers arrived: charged, and refused at once when its
        Content-Length says the whole answer would pass max_bytes."""
        request.meta[WIRE_BYTES] = 0
        # A link check's GET stops at its headers (sitewalk.linkcheck): its body never comes.
        body_comes = kind_of(request.meta) not in (Kind.CHECK, Kind.CHECK_OTHER) or request.method != "GET"
        coming = body_length if body_comes and isinstance(body_length, int) and body_length > 0 else 0
        self.walk.ledger.charge(request.meta, _STATUS_LINE + get_header_size(headers) + _HEADERS_END, coming=coming)

    def bytes_received(self, data: bytes, request: Request) -> None:
        self.walk.ledger.charge(request.meta, len(data))

    def process_response(self, request: Request, response: Response) -> Response:
        self._budget_bound.discard(str(request))
        # The status line's reason phrase, which the headers signal does not carry.
        self.walk.ledger.charge(request.meta, get_status_size(response.status) - _STATUS_LINE, refusable=False)
        said_here = request.meta.get(BUDGET_MAXSIZE) or kind_of(request.meta) is Kind.SITEMAP
        if said_here and response.headers.get(b"Content-Encoding"):
            self._budget_bound_responses.add(str(response))
        return response

    def response_received(self, response: Response) -> None:
        self._budget_bound_responses.discard(str(response))

    def process_exception(self, request: Request, exception: Exception) -> None:
        self._budget_bound.discard(str(request))

    def spider_closed(self) -> None:
        _HANDLER_LOGGER.removeFilter(self._not_budget_cut)
        _COMPRESSION_LOGGER.removeFilter(self._not_budget_cut_decompressed)

    def _not_budget_cut(self, record: logging.LogRecord) -> bool:
        return maxsize_warning_request(record.getMessage()) not in self._budget_bound

    def _not_budget_cut_decompressed(self, record: logging.LogRecord) -> bool:
        response = decompression_warning_response(record.getMessage())
        if response is None or response not in self._budget_bound_responses:
            return True
        self._budget_bound_responses.discard(response)
        return False
