"""Every page once: redirect targets checked against the URLs the walk's frontier knows."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.dupefilters import BaseDupeFilter

from sitewalk.links import normalize
from sitewalk.state import Walk

if TYPE_CHECKING:
    # typing.Self requires Python 3.11
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

__all__ = ["WalkDupeFilter"]


class WalkDupeFilter(BaseDupeFilter):
    """Remembers URLs (fragment dropped), not request fingerprints.

    The frontier admits each link once, when it is first seen, so a request it made is never a
    duplicate. A redirect hop is checked here, in the form links are kept in, and recorded in the
    frontier: a page reached by a redirect is not fetched again. Comparing URL strings, instead of
    building a fingerprint per link, keeps the per-link cost to one set lookup.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._frontier = Walk.of(crawler).frontier

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def request_seen(self, request: Request) -> bool:
        if not request.meta.get("redirect_urls"):
            return False
        return not self._frontier.record(normalize(request.url))

    def log(self, request: Request, spider: object = None) -> None:
        self.crawler.stats.inc_value("sitewalk/dupefilter/filtered")
        logger.debug("Redirect to an already known URL not followed: %(request)s", {"request": request})
