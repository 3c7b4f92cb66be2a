"""The guard's resolver: connections go only to addresses the walk may reach."""

from __future__ import annotations

import logging
from itertools import chain
from typing import TYPE_CHECKING, TypeAlias, cast

import attr
from scrapy.resolver import HostResolution
from scrapy.utils.datatypes import LocalCache
from scrapy.utils.reactor import is_reactor_installed
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.interfaces import IAddress, IHostnameResolver, IResolutionReceiver
from zope.interface import implementer

from sitewalk.exceptions import SitewalkError
from sitewalk.guard.addresses import _SETTING, _Network, literal_ip, parse_networks, refusal

if TYPE_CHECKING:
    from collections.abc import Hashable, Iterable, Sequence
    from typing import Protocol, Self

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from twisted.internet.base import ReactorBase

    # Structural stand-ins for Twisted's zope interfaces, which mypy cannot
    # check without the mypy-zope plugin.
    class _Receiver(Protocol):
        def resolutionBegan(self, resolution: HostResolution) -> None: ...
        def addressResolved(self, address: IPv4Address | IPv6Address) -> None: ...
        def resolutionComplete(self) -> None: ...

    class _NameResolver(Protocol):
        def resolveHostName(
            self,
            resolutionReceiver: _Collector,
            hostName: str,
            portNumber: int,
            addressTypes: Sequence[type[IAddress]] | None,
            transportSemantics: str,
        ) -> object: ...

__all__ = [
    "GuardResolver",
    "allow_networks_for_crawl",
    "install_guard_resolver",
    "last_refusal",
    "release_crawl",
]

logger = logging.getLogger(__name__)
_SocketAddress: TypeAlias = IPv4Address | IPv6Address
_CacheKey: TypeAlias = tuple[str, frozenset[type[IAddress]] | None, str]

# Enough to outlive the gap between a refused resolution and the middleware
# reading the reason, without letting a long walk grow the table.
_REFUSALS_KEPT = 1024

_crawl_networks: dict[Hashable, tuple[_Network, ...]] = {}
_refusals: LocalCache[str, str] = LocalCache(_REFUSALS_KEPT)


def allow_networks_for_crawl(key: Hashable, networks: Iterable[_Network]) -> None:
    """Let every GuardResolver in the process allow ``networks`` until ``release_crawl(key)``."""
    _crawl_networks[key] = tuple(networks)


def release_crawl(key: Hashable) -> None:
    """Withdraw the networks registered under ``key``; unknown keys are ignored."""
    _crawl_networks.pop(key, None)


def last_refusal(host: str) -> str | None:
    """The address the guard refused when the latest resolution of ``host`` yielded none it may
    connect to (the first of them; :func:`refusal` of it says why), else None.

    ``host`` is compared without case and with or without IPv6 brackets, so
    ``urlparse_cached(request).hostname`` finds the entry.
    """
    return _refusals.get(_host_key(host))


def _host_key(host: str) -> str:
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host.lower()


def install_guard_resolver(settings: BaseSettings) -> None:
    """Install a GuardResolver on the installed reactor unless one is there already.

    For walks started through the Python API, where nothing reads TWISTED_DNS_RESOLVER.
    """
    if not is_reactor_installed():
        message = (
            "the address guard needs the Twisted reactor, but none is installed"
            " (keep TWISTED_REACTOR_ENABLED=True and install the guard once the crawler runs)"
        )
        raise SitewalkError(message)
    from twisted.internet import reactor

    installed = cast("ReactorBase", reactor)
    if not isinstance(installed.nameResolver, GuardResolver):
        GuardResolver(installed, *_resolver_args(settings)).install_on_reactor()


def _resolver_args(settings: BaseSettings) -> tuple[tuple[_Network, ...], int]:
    return parse_networks(settings.get(_SETTING)), _cache_size(settings)


def _cache_size(settings: BaseSettings) -> int:
    return settings.getint("DNSCACHE_SIZE") if settings.getbool("DNSCACHE_ENABLED") else 0


@implementer(IHostnameResolver)
class GuardResolver:
    """Name resolver that hands out only addresses the walk may connect to.

    Set ``TWISTED_DNS_RESOLVER = "sitewalk.guard.GuardResolver"`` (or call
    ``install_guard_resolver``). It wraps the reactor's name resolver, through which
    HostnameEndpoint sends every host, IP literals included. A host spelling an IP
    literal in any browser form is judged as that address and never looked up.
    Every resolved address goes through ``refusal``: refused ones are dropped, so a
    name resolving to a public and a private address connects only to the public one.

    Allowed: public addresses, the networks in SITEWALK_GUARD_ALLOW_NETWORKS read
    when the resolver is built, and the networks of every crawl registered with
    ``allow_networks_for_crawl``. The resolver is one per reactor and cannot tell
    which crawl a connection belongs to, so a network allowed for one running crawl
    is allowed for all of them.

    When every address of a host is refused, the receiver gets none and
    HostnameEndpoint fails with DNSLookupError (Scrapy's HTTP handlers re-raise it as
    ``scrapy.exceptions.CannotResolveHostError``); ``last_refusal(host)`` then returns
    the refused address. A later resolution of the host clears or replaces it.

    With DNSCACHE_ENABLED, up to DNSCACHE_SIZE answers are cached as the wrapped
    resolver gave them, before filtering, so each use is judged against the networks
    allowed at that moment.
    """

    def __init__(
        self,
        reactor: ReactorBase,
        networks: Sequence[_Network] = (),
        cache_size: int = 0,
    ) -> None:
        self.reactor: ReactorBase = reactor
        self.original_resolver = cast("_NameResolver", reactor.nameResolver)
        self.networks: tuple[_Network, ...] = tuple(networks)
        self._cache: LocalCache[_CacheKey, list[_SocketAddress]] | None = (
            LocalCache(cache_size) if cache_size else None
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler, reactor: ReactorBase) -> Self:
        # CrawlerProcess passes itself as crawler: only its settings are used. It builds the
        # resolver before any crawl's components, with no walk to word an error for: networks
        # that do not parse allow none here, and each crawl's AddressGuardMiddleware refuses them,
        # before any request, in the words of the walk's front end.
        settings = crawler.settings
        try:
            networks = parse_networks(settings.get(_SETTING))
        except SitewalkError:
            networks = ()
        return cls(reactor, networks, _cache_size(settings))

    def install_on_reactor(self) -> None:
        self.reactor.installNameResolver(cast("IHostnameResolver", self))

    def resolveHostName(
        self,
        resolutionReceiver: _Receiver,
        hostName: str,
        portNumber: int = 0,
        addressTypes: Sequence[type[IAddress]] | None = None,
        transportSemantics: str = "TCP",
    ) -> HostResolution:
        resolution = HostResolution(hostName)
        resolutionReceiver.resolutionBegan(resolution)
        literal = literal_ip(hostName)
        key: _CacheKey = (
            hostName,
            None if addressTypes is None else frozenset(addressTypes),
            transportSemantics,
        )
        if literal is not None:
            address_type = IPv4Address if literal.version == 4 else IPv6Address
            wanted = addressTypes is None or address_type in addressTypes
            found = [address_type("TCP", str(literal), portNumber)] if wanted else []
            self._deliver(resolutionReceiver, hostName, found)
        elif self._cache is not None and key in self._cache:
            cached = self._cache[key]
            self._deliver(
                resolutionReceiver,
                hostName,
                [attr.evolve(address, port=portNumber) for address in cached],
            )
        else:
            self.original_resolver.resolveHostName(
                _Collector(self, resolutionReceiver, key),
                hostName,
                portNumber,
                addressTypes,
                transportSemantics,
            )
        return resolution

    def _answered(
        self,
        receiver: _Receiver,
        key: _CacheKey,
        addresses: list[_SocketAddress],
    ) -> None:
        """Cache the wrapped resolver's answer for ``key``, then deliver what passes."""
        if self._cache is not None and addresses:
            # Port-agnostic, like Scrapy's own cache: the port is set again on a hit.
            self._cache[key] = [attr.evolve(address, port=0) for address in addresses]
        self._deliver(receiver, key[0], addresses)

    def _deliver(
        self,
        receiver: _Receiver,
        host: str,
        addresses: list[_SocketAddress],
    ) -> None:
        """Pass the addresses that may be connected to, record why if none may, complete."""
        allowed = self.networks + tuple(chain.from_iterable(_crawl_networks.values()))
        reasons = []
        refused = []
        for address in addresses:
            reason = refusal(address.host, allowed)
            if reason is None:
                receiver.addressResolved(address)
            else:
                reasons.append(reason)
                refused.append(address.host)
        # Re-inserted rather than overwritten, so the table evicts the stalest host first.
        key = _host_key(host)
        _refusals.pop(key, None)
        if reasons and len(reasons) == len(addresses):
            _refusals[key] = refused[0]
        if reasons:
            logger.debug("Guard dropped %d address(es) of %s: %s", len(reasons), host, reasons[0])
        receiver.resolutionComplete()


@implementer(IResolutionReceiver)
class _Collector:
    """Gathers the wrapped resolver's whole answer so the guard can cache and filter it."""

    def __init__(
        self,
        guard: GuardResolver,
        receiver: _Receiver,
        key: _CacheKey,
    ) -> None:
        self.guard = guard
        self.receiver = receiver
        self.key = key
        self.addresses: list[_SocketAddress] = []

    def resolutionBegan(self, resolution: object) -> None:
        # The guard already told the receiver, before deciding where to look.
        pass

    def addressResolved(self, address: object) -> None:
        # HostnameEndpoint connects only to IP addresses; anything else is dropped.
        if isinstance(address, (IPv4Address, IPv6Address)):
            self.addresses.append(address)

    def resolutionComplete(self) -> None:
        self.guard._answered(self.receiver, self.key, self.addresses)
