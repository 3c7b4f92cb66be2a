"""Sitemap seeding (``sitemap=true``): the sitemap files of the walk's origin, read with Scrapy's sitemap parser."""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.utils.gz import gunzip, gzip_magic_number
from scrapy.utils.sitemap import Sitemap, sitemap_urls_from_robots

from sitewalk._compat import DecompressionMaxSizeExceeded, robots_sitemaps
from sitewalk.failures import Failed, describe
from sitewalk.kinds import BUDGET_MAXSIZE
from sitewalk.ledger import BytesSpent
from sitewalk.linkreport import http_reason
from sitewalk.links import normalize
from sitewalk.tickets import TICKET, Dropped

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.robotstxt import RobotParser
    from twisted.python.failure import Failure

    from sitewalk.state import Walk

__all__ = ["Sitemaps"]

logger = logging.getLogger(__name__)

# The root elements of a sitemap and of a sitemap index.
_KINDS = ("urlset", "sitemapindex")


class Sitemaps:
    """The sitemap files a walk reads, in order, and the page URLs they list.

    Once the seed has arrived (the walk's origin is known), the files are the ``Sitemap:`` lines
    of the origin's robots.txt — as the robots.txt middleware parsed it (``robots_parsed``), else
    fetched here — or ``/sitemap.xml`` when it names none. A sitemap index adds the sitemaps it
    lists; gzip'd files are unpacked. Only files on the walk's origin are read, at most
    ``SITEWALK_SITEMAP_MAX_FILES`` of them. Their ``<loc>`` URLs are for the frontier, at depth 1.

    A file's bytes count in max_bytes as a page's do, as they arrive (its requests are of kind
    :attr:`sitewalk.kinds.Kind.SITEMAP`); a gzip'd file is unpacked only up to its request's
    ``download_maxsize`` (max_bytes, at most
    ``DOWNLOAD_MAXSIZE``), and Scrapy's warning past ``DOWNLOAD_WARNSIZE`` applies. A file that
    max_bytes cuts off stops the walk (``max-bytes``), as a page does. A file whose body grows
    past its size limit while it is decompressed (Content-Encoding) is said in the walk's own
    line: Scrapy's warning is kept out (:mod:`sitewalk.downloadermiddlewares.budget`). A file fetched and not
    read — cut off, an HTTP error status, not gzip or not a sitemap — is in the report's
    ``sitemaps_not_read`` (url, kind, reason; the kinds of :mod:`sitewalk.failures`, ``http``
    for a status) and said in one log line.
    """

    def __init__(self, crawler: Crawler, walk: Walk) -> None:
        self._max_files = crawler.settings.getint("SITEWALK_SITEMAP_MAX_FILES")
        self._warn_size = crawler.settings.getint("DOWNLOAD_WARNSIZE")
        self._walk = walk
        self._queue: deque[str] = deque()
        self._from_robots: dict[str, list[str]] = {}
        self._origin: str | None = None
        # The robots.txt fetched here for its Sitemap: lines (robots.txt not obeyed), if any.
        self._robots_url: str | None = None
        self._queued = 0
        crawler.signals.connect(self.robots_parsed, signal=signals.robots_parsed)

    def robots_parsed(self, robotparser: RobotParser, request: Request) -> None:
        """The robots.txt middleware read a host's robots.txt: keep its Sitemap: lines."""
        origin = request.url[: -len("/robots.txt")]
        self._from_robots[origin] = robots_sitemaps(robotparser)

    def start(self, origin: str) -> None:
        """The seed arrived on ``origin``: queue its robots.txt's sitemaps, or robots.txt itself
        when the robots.txt middleware did not read it."""
        self._origin = origin
        if origin in self._from_robots:
            self._add(self._from_robots[origin] or [f"{origin}/sitemap.xml"])
        else:
            self._robots_url = f"{origin}/robots.txt"
            self._queue.append(self._robots_url)

    def __len__(self) -> int:
        return len(self._queue)

    def next_file(self) -> str:
        return self._queue.popleft()

    def read(self, response: Response) -> list[str]:
        """The page URLs a sitemap file lists (normalised, in its order; the file is recorded as
        read); none from robots.txt or an index (their sitemaps are queued), nor from a file that
        is not read (recorded with why)."""
        body = response.body
        if response.url == self._robots_url:
            self._robots_url = None
            found = list(sitemap_urls_from_robots(body, base_url=response.url)) if response.status == 200 else []
            self._add(found or [f"{self._origin}/sitemap.xml"])
            return []
        if not 200 <= response.status < 300:
            return self._not_read(response.url, Failed("http", f"it answered {http_reason(response.status)}"))
        if gzip_magic_number(response):
            try:
                body = gunzip(body, max_size=response.meta.get("download_maxsize", 0))
            except DecompressionMaxSizeExceeded:
                return self._too_large(response.url, response.meta)
            except Exception as exc:  # noqa: BLE001 - any fault of unpacking is the file's: it is not read
                return self._not_read(response.url, Failed("read", f"not a whole gzip file ({type(exc).__name__}: {exc})"))
            warn_size = response.meta.get("download_warnsize", self._warn_size)
            if len(response.body) < warn_size <= len(body):
                # As Scrapy's SitemapSpider warns.
                logger.warning("%s body size after decompression (%d B) is larger than the download warning size (%d B).",
                               response, len(body), warn_size)
        try:
            sitemap = Sitemap(body)
            kind = sitemap.type
            locations = [entry["loc"] for entry in sitemap if entry.get("loc")] if kind in _KINDS else []
        except Exception as exc:  # noqa: BLE001 - any fault of the parser is the file's: it is not read
            return self._not_read(response.url, Failed("read", f"not a sitemap ({type(exc).__name__}: {exc})"))
        if kind not in _KINDS:
            return self._not_read(response.url, Failed("read", f"not a sitemap (root element {kind!r})"))
        self._walk.results.sitemaps.append(response.url)
        if kind == "sitemapindex":
            self._add(locations)
            return []
        return _normalised(locations)

    def parsed(self, response: Response) -> None:
        """The callback of a sitemap file (not a page: no item, not in max_pages, in max_bytes
        as it arrived): its URLs join the frontier at depth 1, in its order, at its turn."""
        urls = self.read(response)

        def admit() -> None:
            if urls:
                self._walk.admit_links(urls, 1, response.url)

        self._walk.gate.request_over(response.meta[TICKET], admit)

    def failed(self, failure: Failure) -> None:
        """The errback of a sitemap file: it could not be fetched."""
        self._fetch_failed(failure)
        self._walk.gate.request_over(failure.request.meta[TICKET])  # type: ignore[attr-defined]

    def _fetch_failed(self, failure: Failure) -> None:
        """Record why a sitemap file could not be fetched (the budget's cut also stops the walk)."""
        request: Request = failure.request  # type: ignore[attr-defined]  # Scrapy sets it on an errback's failure
        if failure.check(Dropped):
            return  # the walk let go of it when it stopped: the stop is the report's
        if request.url == self._robots_url:
            self._robots_url = None
            logger.info("sitemap %s not read: %s", request.url, describe(failure, request).reason)
            return
        cut = self._walk.ledger.cut_off(failure, request)
        if cut is None:
            self._not_read(request.url, describe(failure, request))
        elif cut[0] == "max-bytes" and not failure.check(BytesSpent):
            self._too_large(request.url, request.meta)
        else:
            self._not_read(request.url, Failed("budget", cut[1]), stop=cut[0])

    def _too_large(self, url: str, meta: dict[str, Any]) -> list[str]:
        """The file ``url`` grew past its request's size limit (``meta``): the budget's, which
        stops the walk, or DOWNLOAD_MAXSIZE."""
        size = meta["download_maxsize"]
        if not meta.get(BUDGET_MAXSIZE):
            return self._not_read(url, Failed("too-large", f"larger than the download size limit (DOWNLOAD_MAXSIZE={size})"))
        cut = Failed("budget", f"cut off at max_bytes (max_bytes={self._walk.ledger.max_bytes}, passed as it was unpacked)")
        return self._not_read(url, cut, stop="max-bytes")

    def _not_read(self, url: str, failed: Failed, stop: str | None = None) -> list[str]:
        """Record the file ``url`` as not read, and say so; ``stop``: the walk stops, for this reason."""
        logger.info("sitemap %s not read: %s%s", url, failed.reason, ": stopping the walk" if stop else "")
        self._walk.results.sitemaps_not_read.append({"url": url, "kind": failed.kind, "reason": failed.reason})
        if stop is not None:
            self._walk.stop(stop, left_unfetched=True)
        return []

    def _add(self, urls: list[str]) -> None:
        for url in _normalised(urls):
            if self._origin is None or not url.startswith(f"{self._origin}/"):
                logger.info("sitemap %s not read: it is not on the walk's origin %s", url, self._origin)
            elif self._queued >= self._max_files:
                logger.info("sitemap %s not read: %d sitemap files were (SITEWALK_SITEMAP_MAX_FILES)", url, self._max_files)
            else:
                self._queued += 1
                self._queue.append(url)


def _normalised(urls: list[str]) -> list[str]:
    found = []
    for url in urls:
        try:
            found.append(normalize(url.strip()))
        except ValueError:
            logger.debug("not a URL in a sitemap: %r", url)
    return found
