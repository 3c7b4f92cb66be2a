"""The address guard's reasons, for every request: an IP literal refused early, a refused host name said."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import CannotResolveHostError
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.error import DNSLookupError

from sitewalk import guard
from sitewalk.failures import Refused
from sitewalk.hints import CLI
from sitewalk.state import Walk

if TYPE_CHECKING:
    from ipaddress import IPv4Network, IPv6Network
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Request

__all__ = ["AddressGuardMiddleware"]


class AddressGuardMiddleware:
    """The address guard's reasons, for every request, robots.txt and redirect hops included.

    The enforcement is :class:`sitewalk.guard.GuardResolver` (TWISTED_DNS_RESOLVER), which sees
    every address a connection is made to. This middleware refuses early what the URL itself
    shows (an IP literal in any spelling outside the allowed networks) and turns the resolver's
    refusal of a host name into the readable reason. It registers the crawl's
    ``SITEWALK_GUARD_ALLOW_NETWORKS`` with the resolver from the crawl's first request until its
    engine stops: a crawl whose later component refuses to be built never runs, and must leave
    nothing allowed behind in a process that goes on (the Python API's).
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._networks = _allowed_networks(crawler)
        self._registered = False
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def engine_stopped(self) -> None:
        guard.release_crawl(self)

    def process_request(self, request: Request) -> None:
        if not self._registered:
            # Every request of the crawl comes through here before its connection is made.
            guard.allow_networks_for_crawl(self, self._networks)
            self._registered = True
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


def _allowed_networks(crawler: Crawler) -> tuple[IPv4Network | IPv6Network, ...]:
    """The crawl's ``SITEWALK_GUARD_ALLOW_NETWORKS``; networks that do not parse fail as the
    crawl is built, before any request, in the words of the walk's front end (scrapy crawl's
    for another spider)."""
    name = "SITEWALK_GUARD_ALLOW_NETWORKS"
    networks = crawler.settings.get(name)
    walk = getattr(crawler.spider, "walk", None)
    surface = walk.surface if isinstance(walk, Walk) else CLI
    return guard.parse_networks(networks, given_as=surface.setting(name, networks))
