"""Downloader middlewares of the walk: same origin, robots.txt, and the shared budget per request."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.exceptions import CannotResolveHostError, NotConfigured
from scrapy.http import Request
from scrapy.http.request import NO_CALLBACK
from scrapy.robotstxt import ProtegoRobotParser
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.error import DNSLookupError
from twisted.python.failure import Failure

from sitewalk import guard
from sitewalk.failures import Failed, OffOrigin, Refused, RobotsDisallowed, RobotsUnreachable, describe
from sitewalk.state import WalkComponent

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

__all__ = [
    "ROBOTS_META", "AddressGuardMiddleware", "BudgetMiddleware", "RobotsTxtMiddleware", "SameOriginMiddleware",
    "WalkRedirectMiddleware",
]

# Meta key of the robots.txt requests this module makes: they are not pages of the walk.
ROBOTS_META = "sitewalk_robots"


class AddressGuardMiddleware:
    """The address guard's reasons, for every request, robots.txt and redirect hops included.

    The enforcement is :class:`sitewalk.guard.GuardResolver` (TWISTED_DNS_RESOLVER), which sees
    every address a connection is made to. This middleware refuses early what the URL itself
    shows (an IP literal in any spelling outside the allowed networks) and turns the resolver's
    refusal of a host name into the readable reason. It registers the crawl's
    ``SITEWALK_GUARD_ALLOW_NETWORKS`` with the resolver for as long as the crawl runs.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._networks = guard.parse_networks(crawler.settings.get("SITEWALK_GUARD_ALLOW_NETWORKS"))
        guard.allow_networks_for_crawl(self, self._networks)
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def engine_stopped(self) -> None:
        guard.release_crawl(self)

    def process_request(self, request: Request) -> None:
        host = urlparse_cached(request).hostname or ""
        address = guard.literal_ip(host)
        if address is not None:
            reason = guard.refusal(address, self._networks)
            if reason is not None:
                self.crawler.stats.inc_value("sitewalk/guard/refused")
                raise Refused(reason, str(address))

    def process_exception(self, request: Request, exception: Exception) -> None:
        if isinstance(exception, (CannotResolveHostError, DNSLookupError)):
            address = guard.last_refusal(urlparse_cached(request).hostname or "")
            if address is not None:
                self.crawler.stats.inc_value("sitewalk/guard/refused")
                reason = guard.refusal(address, self._networks) or f"refused address {address}"
                raise Refused(reason, address) from None


class SameOriginMiddleware(WalkComponent):
    """Keeps the walk on the origin of the seed's final URL (after its redirects).

    The seed and its redirect hops (meta ``sitewalk_seed``) pass: a seed that redirects to another
    host walks that host. Any later request off that origin, which can only be a redirect since the
    frontier admits same-origin links only, is refused with the reason
    ``redirected off-origin to <url>``.
    """

    def process_request(self, request: Request) -> None:
        if request.meta.get("sitewalk_seed") or request.meta.get(ROBOTS_META):
            return
        if self.walk.frontier.same_origin(request.url):
            return
        self.crawler.stats.inc_value("sitewalk/origin/refused")
        raise OffOrigin(f"redirected off-origin to {request.url}")


class RobotsTxtMiddleware:
    """Obeys each host's robots.txt (``ROBOTSTXT_OBEY``), with the RFC 9309 rules.

    The file is fetched once per host, before the first page request to it, and parsed with
    Scrapy's :class:`~scrapy.robotstxt.ProtegoRobotParser` for ``ROBOTSTXT_USER_AGENT``
    (default ``sitewalk``); the ``robots_parsed`` signal tells who needs it (the walk's pace takes
    its Crawl-delay). A robots.txt answered with 4xx allows everything; one answered with 5xx, or
    that cannot be fetched at all (connection error, timeout), disallows everything (RFC 9309
    §2.3.1.4: the crawler MUST assume complete disallow). A refused page raises
    :class:`RobotsDisallowed`, a page of a host whose robots.txt could not be read
    :class:`RobotsUnreachable`. The robots.txt request carries meta ``sitewalk_robots``.

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
        if request.meta.get(ROBOTS_META):
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
        request = Request(url, meta={ROBOTS_META: True}, callback=NO_CALLBACK)
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


class BudgetMiddleware(WalkComponent):
    """Gives each request what is left of the walk's budget, so limits bite mid-download.

    Sets meta ``download_timeout`` to the seconds left before the deadline and ``download_maxsize``
    to the body bytes left under max_bytes (never more than DOWNLOAD_TIMEOUT / DOWNLOAD_MAXSIZE),
    and tells the walk's gate when a page request starts, for the pace between requests. Meta
    ``sitewalk_budget_maxsize`` says the size limit is the budget's, so a page cut off by it stops
    the walk with "max-bytes". robots.txt requests get the time limit too but are not pages.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._timeout = crawler.settings.getfloat("DOWNLOAD_TIMEOUT")
        self._maxsize = crawler.settings.getint("DOWNLOAD_MAXSIZE")

    def process_request(self, request: Request) -> None:
        budget = self.walk.budget
        seconds = max(budget.seconds_left(), 0.001)
        request.meta["download_timeout"] = min(seconds, self._timeout) if self._timeout else seconds
        if not request.meta.get(ROBOTS_META):
            left = max(budget.bytes_left(), 1)
            budget_bound = not self._maxsize or left <= self._maxsize
            request.meta["download_maxsize"] = left if budget_bound else self._maxsize
            request.meta["sitewalk_budget_maxsize"] = budget_bound
            self.walk.gate.request_started()


class WalkRedirectMiddleware(RedirectMiddleware):
    """Scrapy's redirect middleware, except that a redirect hop keeps the ``Referer`` of the
    request it replaces (the page that linked to it, as a browser keeps it); Scrapy's would name
    the redirecting URL."""

    def handle_referer(self, request: Request, response: Response) -> None:
        pass
