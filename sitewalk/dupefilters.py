"""Every page once: the set of URLs the walk has queued, requested or been redirected to."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.dupefilters import BaseDupeFilter

from sitewalk.links import normalize

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    # typing.Self requires Python 3.11
    from typing_extensions import Self

logger = logging.getLogger(__name__)

__all__ = ["WalkDupeFilter"]


class WalkDupeFilter(BaseDupeFilter):
    """Remembers URLs (fragment dropped), not request fingerprints.

    The frontier adds each link once, when it is first seen, so a page reachable by two paths is
    queued once. A request the frontier made is therefore not a duplicate; a redirect hop is checked
    here and recorded, so a page reached by a redirect is not fetched again, and the final URL of
    every response is known. Comparing URL strings, instead of building a fingerprint per link,
    keeps the per-link cost to one set lookup. Built by the scheduler, it attaches itself to the
    spider as ``spider.dupefilter``.
    """

    def __init__(self, crawler: Crawler | None = None) -> None:
        self.crawler = crawler
        self._seen: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        dupefilter = cls(crawler)
        # The spider's frontier records links here as it finds them.
        crawler.spider.dupefilter = dupefilter  # type: ignore[union-attr]
        return dupefilter

    @staticmethod
    def key(url: str) -> str:
        return url.partition("#")[0]

    def add(self, url: str) -> bool:
        """Record ``url``; True when it was not known before."""
        key = self.key(url)
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def seen_urls(self) -> set[str]:
        return self._seen

    def __contains__(self, url: str) -> bool:
        return self.key(url) in self._seen

    def __len__(self) -> int:
        return len(self._seen)

    def request_seen(self, request: Request) -> bool:
        if not request.meta.get("redirect_urls"):
            # Made by the frontier, which recorded the URL when it queued it.
            return False
        # A redirect target, resolved by Scrapy: compare it in the form links are kept in.
        return not self.add(normalize(request.url))

    def log(self, request: Request, spider: object = None) -> None:
        if self.crawler is not None:
            self.crawler.stats.inc_value("sitewalk/dupefilter/filtered")
        logger.debug("Redirect to an already known URL not followed: %(request)s", {"request": request})
