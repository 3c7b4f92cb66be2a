"""robots.txt, with the RFC 9309 rules: fetched once per host, each page allowed or refused."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.http import Request
from scrapy.http.request import NO_CALLBACK
from scrapy.robotstxt import ProtegoRobotParser
from scrapy.utils.httpobj import urlparse_cached
from twisted.python.failure import Failure

from sitewalk.failures import Failed, RobotsDisallowed, RobotsUnreachable, describe
from sitewalk.kinds import KIND, Kind, kind_of

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

__all__ = ["RobotsTxtMiddleware"]


class RobotsTxtMiddleware:
    """Obeys each host's robots.txt (``ROBOTSTXT_OBEY``), with the RFC 9309 rules.

    The file is fetched once per host, before the first page request to it, and parsed with
    Scrapy's :class:`~scrapy.robotstxt.ProtegoRobotParser` for ``ROBOTSTXT_USER_AGENT``
    (default ``sitewalk``); the ``robots_parsed`` signal tells who needs it (the walk's pace takes
    its Crawl-delay). A robots.txt answered with 4xx allows everything; one answered with 5xx, or
    that cannot be fetched at all (connection error, timeout), disallows everything (RFC 9309
    §2.3.1.4: the crawler MUST assume complete disallow). A refused page raises
    :class:`RobotsDisallowed`, a page of a host whose robots.txt could not be read
    :class:`RobotsUnreachable`. The robots.txt request is of kind :attr:`sitewalk.kinds.Kind.ROBOTS`; a request
    with Scrapy's ``dont_obey_robotstxt`` meta (a link check on another site) is not checked.

    Stats: ``robotstxt/request_count``, ``robotstxt/response_status_count/<status>``,
    ``robotstxt/forbidden``, ``sitewalk/robots/unreachable``.
    """

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured
        self.crawler = crawler
        self._user_agent: str = crawler.settings.get("ROBOTSTXT_USER_AGENT") or "sitewalk"
        # Per host (netloc): its parser, why its robots.txt could not be read, or the fetch
        # still under way.
        self._hosts: dict[str, ProtegoRobotParser | Failed | asyncio.Future[ProtegoRobotParser | Failed]] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_request(self, request: Request) -> None:
        if kind_of(request.meta) is Kind.ROBOTS or request.meta.get("dont_obey_robotstxt"):
            return
        rules = await self._rules(request)
        if isinstance(rules, Failed):
            self.crawler.stats.inc_value("robotstxt/forbidden")
            raise RobotsUnreachable(rules)
        if not rules.allowed(request.url, self._user_agent):
            self.crawler.stats.inc_value("robotstxt/forbidden")
            raise RobotsDisallowed("disallowed by the site's robots.txt")

    async def _rules(self, request: Request) -> ProtegoRobotParser | Failed:
        url = urlparse_cached(request)
        netloc = url.netloc
        known = self._hosts.get(netloc)
        if known is None:
            known = self._hosts[netloc] = asyncio.ensure_future(self._fetch(f"{url.scheme}://{netloc}/robots.txt"))
        if isinstance(known, asyncio.Future):
            rules = await asyncio.shield(known)
            self._hosts[netloc] = rules
            return rules
        return known

    async def _fetch(self, url: str) -> ProtegoRobotParser | Failed:
        request = Request(url, meta={KIND: Kind.ROBOTS}, callback=NO_CALLBACK)
        stats = self.crawler.stats
        stats.inc_value("robotstxt/request_count")
        try:
            response = await self.crawler.engine.download_async(request)
        except Exception as exc:  # noqa: BLE001 - any failure to fetch it is RFC 9309's "unreachable"
            return self._unreachable(url, describe(Failure(exc), request))
        stats.inc_value(f"robotstxt/response_status_count/{response.status}")
        if response.status >= 500:
            return self._unreachable(url, Failed("robots", f"it answered {response.status}", ("ROBOTSTXT_OBEY", False)))
        body = response.body if 200 <= response.status < 300 else b""
        parser = ProtegoRobotParser.from_crawler(self.crawler, body)
        await self.crawler.signals.send_catch_log_async(
            signal=signals.robots_parsed, robotparser=parser, request=request
        )
        return parser

    def _unreachable(self, url: str, failed: Failed) -> Failed:
        logger.warning("%s could not be fetched (%s): treating every page as disallowed (RFC 9309)", url, failed.reason)
        self.crawler.stats.inc_value("sitewalk/robots/unreachable")
        return failed
