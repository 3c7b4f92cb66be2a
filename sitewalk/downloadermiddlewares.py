"""Downloader middlewares of the walk: same origin, robots.txt, and the shared budget per request."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import ada_url

from protego import Protego
from scrapy import signals
from scrapy.exceptions import CannotResolveHostError
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.http import Request, Response
from scrapy.http.request import NO_CALLBACK
from scrapy.robotstxt import ProtegoRobotParser
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred
from twisted.internet.error import DNSLookupError
from twisted.python.failure import Failure

from sitewalk import guard
from sitewalk.failures import OffOrigin, Refused, RobotsDisallowed, describe

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.robotstxt import RobotParser

    # typing.Self requires Python 3.11
    from typing_extensions import Self

    from sitewalk.extensions import WalkBudget

logger = logging.getLogger(__name__)

__all__ = ["AddressGuardMiddleware", "BudgetMiddleware", "SameOriginMiddleware", "WalkRobotsTxtMiddleware"]

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
                raise Refused(reason)

    def process_exception(self, request: Request, exception: Exception) -> None:
        if isinstance(exception, (CannotResolveHostError, DNSLookupError)):
            reason = guard.last_refusal(urlparse_cached(request).hostname or "")
            if reason is not None:
                self.crawler.stats.inc_value("sitewalk/guard/refused")
                raise Refused(reason) from None


class SameOriginMiddleware:
    """Keeps the walk on the origin of the seed's final URL (after its redirects).

    The seed and its redirect hops (meta ``sitewalk_seed``) pass: a seed that redirects to another
    host walks that host. Any later request off that origin, which can only be a redirect since the
    spider queues same-origin links only, is refused with the reason
    ``redirected off-origin to <url>``.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._origin_text: str | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    @property
    def origin(self) -> str | None:
        """``scheme://host[:port]`` as a browser serialises it (default port omitted); None until
        the seed arrived."""
        return self._origin_text

    @property
    def prefix(self) -> str:
        """What every same-origin URL in normalised (WHATWG) form starts with: ``origin + "/"``."""
        return f"{self._origin_text}/"

    def set_origin(self, url: str) -> None:
        self._origin_text = ada_url.URL(url).origin

    def process_request(self, request: Request) -> None:
        if request.meta.get("sitewalk_seed") or request.meta.get("dont_obey_robotstxt"):
            return
        if self._origin_text is not None and ada_url.URL(request.url).origin == self._origin_text:
            return
        self.crawler.stats.inc_value("sitewalk/origin/refused")
        raise OffOrigin(f"redirected off-origin to {request.url}")


class WalkRobotsTxtMiddleware(RobotsTxtMiddleware):
    """Scrapy's robots.txt middleware with the RFC 9309 rules for an unreadable robots.txt.

    A robots.txt answered with 4xx allows everything; one answered with 5xx, or that cannot be
    fetched at all (connection error, timeout), disallows everything for the walk (RFC 9309 §2.3.1.4:
    the crawler MUST assume complete disallow). Refusals raise :class:`RobotsDisallowed`, which the
    spider lists in ``robots_skipped``. The ``Crawl-delay`` for our user agent is passed to the
    budget, which never lets it shorten the walk's own delay. No traceback is logged for a failed
    robots.txt download: it is an expected outcome.
    """

    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        self._robots_ua: str = crawler.settings.get("ROBOTSTXT_USER_AGENT") or "sitewalk"
        self._unreachable: dict[str, str] = {}

    def process_request_2(self, rp: RobotParser | None, request: Request) -> None:
        if rp is None:
            return
        if not rp.allowed(request.url, self._robots_ua):
            self._stats.inc_value("robotstxt/forbidden")
            unreachable = self._unreachable.get(urlparse_cached(request).netloc)
            if unreachable is not None:
                raise RobotsDisallowed(f"robots.txt could not be fetched ({unreachable})", unreachable=True)
            raise RobotsDisallowed(f"disallowed by robots.txt: {request.url}")

    async def robot_parser(self, request: Request) -> RobotParser | None:
        url = urlparse_cached(request)
        netloc = url.netloc
        if netloc not in self._parsers:
            waiting: Deferred[RobotParser | None] = Deferred()
            self._parsers[netloc] = waiting
            robots_request = Request(
                f"{url.scheme}://{netloc}/robots.txt",
                priority=self.DOWNLOAD_PRIORITY,
                meta={"dont_obey_robotstxt": True, "sitewalk_robots": True},
                callback=NO_CALLBACK,
            )
            parser: RobotParser
            try:
                response = await self.crawler.engine.download_async(robots_request)
            except Exception as exc:
                reason = describe(Failure(exc), robots_request)
                logger.warning(
                    "robots.txt of %s could not be fetched (%s): treating every page as disallowed (RFC 9309)",
                    netloc, reason,
                )
                self._stats.inc_value("sitewalk/robots/unreachable")
                self._unreachable[netloc] = reason
                parser = _disallow_all(self.crawler)
            else:
                parser = self._parser_for(response, netloc)
            self._stats.inc_value("robotstxt/request_count")
            self._parsers[netloc] = parser
            waiting.callback(parser)
        parser_or_wait = self._parsers[netloc]
        if isinstance(parser_or_wait, Deferred):
            return await maybe_deferred_to_future(parser_or_wait)
        return parser_or_wait

    def _parser_for(self, response: Response, netloc: str) -> RobotParser:
        self._stats.inc_value(f"robotstxt/response_status_count/{response.status}")
        if response.status >= 500:
            logger.warning(
                "robots.txt of %s answered %d: treating every page as disallowed (RFC 9309)",
                netloc, response.status,
            )
            self._stats.inc_value("sitewalk/robots/unreachable")
            self._unreachable[netloc] = f"it answered {response.status}"
            return _disallow_all(self.crawler)
        body = response.body if 200 <= response.status < 300 else b""
        parser = ProtegoRobotParser.from_crawler(self.crawler, body)
        self.crawler.signals.send_catch_log(
            signal=signals.robots_parsed, robotparser=parser, request=response.request
        )
        delay = parser.rp.crawl_delay(self._robots_ua)
        if delay:
            self._budget().slow_down(float(delay))
        return parser

    def _budget(self) -> WalkBudget:
        from sitewalk.extensions import WalkBudget

        budget = self.crawler.get_extension(WalkBudget)
        assert budget is not None
        return budget


def _disallow_all(crawler: Crawler) -> RobotParser:
    parser = ProtegoRobotParser.from_crawler(crawler, b"")
    parser.rp = Protego.parse("User-agent: *\nDisallow: /\n")
    return parser


class BudgetMiddleware:
    """Gives each request what is left of the walk's budget, so limits bite mid-download.

    Sets meta ``download_timeout`` to the seconds left before the deadline and ``download_maxsize``
    to the body bytes left under max_bytes (never more than DOWNLOAD_TIMEOUT / DOWNLOAD_MAXSIZE),
    and tells the budget when a page request starts, for the delay between requests. Meta
    ``sitewalk_budget_maxsize`` says the size limit is the budget's, so a page cut off by it stops
    the walk with "max-bytes". robots.txt requests get the time limit too but are not pages.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._timeout = crawler.settings.getfloat("DOWNLOAD_TIMEOUT")
        self._maxsize = crawler.settings.getint("DOWNLOAD_MAXSIZE")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        from sitewalk.extensions import WalkBudget

        budget = self.crawler.get_extension(WalkBudget)
        assert budget is not None
        seconds = max(budget.seconds_left(), 0.001)
        request.meta["download_timeout"] = min(seconds, self._timeout) if self._timeout else seconds
        if not request.meta.get("sitewalk_robots"):
            left = max(budget.bytes_left(), 1)
            budget_bound = not self._maxsize or left <= self._maxsize
            request.meta["download_maxsize"] = left if budget_bound else self._maxsize
            request.meta["sitewalk_budget_maxsize"] = budget_bound
            budget.request_started()
