"""Every page once: redirect targets checked against the URLs the walk's frontier knows."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.dupefilters import BaseDupeFilter

from sitewalk.links import normalize
from sitewalk.state import WalkComponent

if TYPE_CHECKING:
    from scrapy import Request

logger = logging.getLogger(__name__)

__all__ = ["WalkDupeFilter"]


class WalkDupeFilter(WalkComponent, BaseDupeFilter):
    """Remembers URLs (fragment dropped), not request fingerprints.

    The frontier admits each link once, when it is first seen, so a request it made is never a
    duplicate. A redirect hop is checked here, in the form links are kept in, and recorded in the
    frontier: a page reached by a redirect is not fetched again. Comparing URL strings, instead of
    building a fingerprint per link, keeps the per-link cost to one set lookup.
    """

    def request_seen(self, request: Request) -> bool:
        if not request.meta.get("redirect_urls"):
            return False
        return not self.walk.frontier.record(normalize(request.url))

    def log(self, request: Request, spider: object = None) -> None:
        self.crawler.stats.inc_value("sitewalk/dupefilter/filtered")
        logger.debug("Redirect to an already known URL not followed: %(request)s", {"request": request})
