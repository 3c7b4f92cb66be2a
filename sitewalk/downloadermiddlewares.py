"""Downloader middlewares of the walk: same origin, robots.txt, and the shared budget per request."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
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
from sitewalk.tickets import TICKET, Dropped, Ticket

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

__all__ = [
    "BROWSER_META", "ROBOTS_META", "AddressGuardMiddleware", "BudgetMiddleware", "RetryAfterMiddleware", "RobotsTxtMiddleware",
    "SameOriginMiddleware", "WalkRedirectMiddleware",
]

# Meta key of the robots.txt requests this module makes: they are not pages of the walk.
ROBOTS_META = "sitewalk_robots"
# Meta key of the requests a browser makes for a page it renders (sitewalk.render): the page's URL.
BROWSER_META = "sitewalk_browser"
# Where Scrapy warns of a download larger than its max size, and how.
_HANDLER_LOGGER = logging.getLogger("scrapy.core.downloader.handlers.http11")
_MAXSIZE_WARNING = "bytes which is larger than download max size"


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
    ``redirected off-origin to <url>``. The requests a browser makes for a page it renders
    (meta ``sitewalk_browser``) may go to any origin, as a browser's do: the guard and each
    host's robots.txt still decide.
    """

    def process_request(self, request: Request) -> None:
        if request.meta.get("sitewalk_seed") or request.meta.get(ROBOTS_META) or request.meta.get(BROWSER_META):
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
    """Gives each request what is left of the walk's budget, so limits bite mid-download, and
    holds it until the walk's pace lets it start.

    Every request to the site (pages, robots.txt, sitemaps, redirect hops, a page asked again
    after a 429) waits here until ``delay`` seconds after the previous one started and until a
    pause is over (:meth:`sitewalk.gate.Gate.may_start`); a page request that a stop came upon
    meanwhile is dropped (listed as unvisited). Then it sets meta ``download_timeout`` to the
    seconds left before the deadline and ``download_maxsize`` to the body bytes left under
    max_bytes (never more than DOWNLOAD_TIMEOUT / DOWNLOAD_MAXSIZE), and ``sitewalk_started`` to
    when it started. Meta ``sitewalk_budget_maxsize`` says the size limit is the budget's, so a
    page cut off by it stops the walk with "max-bytes". robots.txt requests get the time limit
    too but are not pages.

    A page cut off by max_bytes is the walk's own stop, which its summary tells: Scrapy's
    warning that the download exceeds its max size is kept out of the log for those requests
    (a filter on the HTTP handler's logger while the walk runs; Scrapy has no other way to
    silence it). A page larger than DOWNLOAD_MAXSIZE keeps Scrapy's warning.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._timeout = crawler.settings.getfloat("DOWNLOAD_TIMEOUT")
        self._maxsize = crawler.settings.getint("DOWNLOAD_MAXSIZE")
        # How Scrapy's warning names each request whose size limit is the budget's, while it is downloaded.
        self._budget_bound: set[str] = set()
        _HANDLER_LOGGER.addFilter(self._not_budget_cut)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    async def process_request(self, request: Request) -> None:
        gate = self.walk.gate
        await gate.may_start()
        if gate.stopping and isinstance(request.meta.get(TICKET), Ticket):
            raise Dropped
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
        request.meta["sitewalk_started"] = gate.request_started()

    def process_response(self, request: Request, response: Response) -> Response:
        self._budget_bound.discard(f"in request {request}.")
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        self._budget_bound.discard(f"in request {request}.")

    def spider_closed(self) -> None:
        _HANDLER_LOGGER.removeFilter(self._not_budget_cut)

    def _not_budget_cut(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (_MAXSIZE_WARNING in message and message.endswith(tuple(self._budget_bound)))


class RetryAfterMiddleware(WalkComponent):
    """A page answered 429 (Too Many Requests) or 503 (Service Unavailable) pauses the whole
    walk, then is asked again.

    The pause is the answer's ``Retry-After`` (seconds, or an HTTP date; 0 or a value that cannot
    be read counts as absent), else 1 second, doubled for each pause in a row (an answer with
    another status ends the row); at most ``SITEWALK_RETRY_AFTER_MAX`` seconds (default 120). No
    request starts meanwhile, a page's or robots.txt's (:meth:`sitewalk.gate.Gate.pause`). One
    clock for the walk: the answers to requests that were in flight when a pause began belong to
    it and start no other. Each page is asked at most ``SITEWALK_RETRY_TIMES`` times more
    (default 3), still one page in max_pages; its last answer is the page (429 or 503 status, in
    the feed and the report). A pause that would outlast the deadline is not waited for: the
    answer is the page.

    Meta: ``sitewalk_retries``. Stats: ``sitewalk/retry/pauses``, ``sitewalk/retry/requests``.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._times = crawler.settings.getint("SITEWALK_RETRY_TIMES")
        self._most = crawler.settings.getfloat("SITEWALK_RETRY_AFTER_MAX")
        self._in_a_row = 0

    def process_response(self, request: Request, response: Response) -> Request | Response:
        if request.meta.get("sitewalk_depth") is None:
            return response  # robots.txt, a sitemap: not a page of the walk
        if response.status not in (429, 503):
            self._in_a_row = 0
            return response
        retries = request.meta.get("sitewalk_retries", 0)
        if retries >= self._times:
            return response
        asked = _retry_after(response.headers.get(b"Retry-After"))
        wait = min(asked if asked is not None else 2.0 ** self._in_a_row, self._most)
        if wait >= self.walk.budget.seconds_left():
            return response
        if self.walk.gate.pause(wait, request.meta.get("sitewalk_started", float("-inf"))):
            self._in_a_row += 1
            self.crawler.stats.inc_value("sitewalk/retry/pauses")
            logger.info("%s answered %d: pausing the walk for %gs, then asking again", request.url, response.status, wait)
        self.crawler.stats.inc_value("sitewalk/retry/requests")
        retry = request.replace(dont_filter=True)
        retry.meta["sitewalk_retries"] = retries + 1
        return retry


def _retry_after(value: bytes | None) -> float | None:
    """The seconds a Retry-After header asks for; None when absent, 0 or unreadable (RFC 9110 10.2.3)."""
    if not value:
        return None
    text = value.decode("latin-1").strip()
    if text.isdigit():
        seconds = float(text)
    else:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            return None
        seconds = (when - datetime.now(UTC)).total_seconds()
    return seconds if seconds > 0 else None


class WalkRedirectMiddleware(RedirectMiddleware):
    """Scrapy's redirect middleware, except that a redirect hop keeps the ``Referer`` of the
    request it replaces (the page that linked to it, as a browser keeps it); Scrapy's would name
    the redirecting URL."""

    def handle_referer(self, request: Request, response: Response) -> None:
        pass
