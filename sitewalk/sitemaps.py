"""Sitemap seeding (``sitemap=true``): the sitemap files of the walk's origin, read with Scrapy's sitemap parser."""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING

from scrapy.utils.gz import gunzip, gzip_magic_number
from scrapy.utils.sitemap import Sitemap, sitemap_urls_from_robots

from sitewalk.links import normalize

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response
    from scrapy.robotstxt import RobotParser

__all__ = ["Sitemaps"]

logger = logging.getLogger(__name__)


class Sitemaps:
    """The sitemap files a walk reads, in order, and the page URLs they list.

    Once the seed has arrived (the walk's origin is known), the files are the ``Sitemap:`` lines
    of the origin's robots.txt — as the robots.txt middleware parsed it (``robots_parsed``), else
    fetched here — or ``/sitemap.xml`` when it names none. A sitemap index adds the sitemaps it
    lists; gzip'd files are unpacked. Only files on the walk's origin are read, at most
    ``max_files`` of them. Their ``<loc>`` URLs are for the frontier, at depth 1.
    """

    def __init__(self, max_files: int, read: list[str]) -> None:
        self._max_files = max_files
        # The sitemap files read, in order (the walk's report lists them).
        self._read = read
        self._queue: deque[str] = deque()
        self._from_robots: dict[str, list[str]] = {}
        self._origin: str | None = None
        # The robots.txt fetched here for its Sitemap: lines (robots.txt not obeyed), if any.
        self._robots_url: str | None = None
        self._queued = 0

    def robots_parsed(self, robotparser: RobotParser, request: Request) -> None:
        """The robots.txt middleware read a host's robots.txt: keep its Sitemap: lines."""
        # Protego (Scrapy's ProtegoRobotParser.rp) keeps them; RobotParser's interface has no name for them.
        rules = getattr(robotparser, "rp", None)
        origin = request.url[: -len("/robots.txt")]
        self._from_robots[origin] = list(getattr(rules, "sitemaps", ()))

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

    def read(self, response: Response, max_size: int) -> list[str] | None:
        """The page URLs a sitemap file lists (normalised, in its order; the file is recorded as read);
        none from robots.txt or an index (their sitemaps are queued), None if it is not a sitemap."""
        if response.url == self._robots_url:
            self._robots_url = None
            found = list(sitemap_urls_from_robots(response.body, base_url=response.url)) if response.status == 200 else []
            self._add(found or [f"{self._origin}/sitemap.xml"])
            return []
        if not 200 <= response.status < 300:
            logger.info("sitemap %s not read: it answered %d", response.url, response.status)
            return None
        body = response.body
        if gzip_magic_number(response):
            try:
                body = gunzip(body, max_size=max_size)
            except (OSError, ValueError) as exc:
                logger.info("sitemap %s not read: it is not a whole gzip file (%s)", response.url, exc)
                return None
        sitemap = Sitemap(body)
        if sitemap.type not in ("sitemapindex", "urlset"):
            logger.info("sitemap %s not read: it is not a sitemap (root element %r)", response.url, sitemap.type)
            return None
        self._read.append(response.url)
        locations = [entry["loc"] for entry in sitemap if entry.get("loc")]
        if sitemap.type == "sitemapindex":
            self._add(locations)
            return []
        return _normalised(locations)

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
