"""Address guard: never connect to a non-public IP address unless its network is allowed."""

from __future__ import annotations

import ipaddress
import logging
from itertools import chain
from typing import TYPE_CHECKING, TypeAlias, cast
from urllib.parse import unquote_to_bytes

import attr
from scrapy.resolver import HostResolution
from scrapy.utils.datatypes import LocalCache
from scrapy.utils.reactor import is_reactor_installed
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.interfaces import IAddress, IHostnameResolver, IResolutionReceiver
from zope.interface import implementer

from sitewalk.exceptions import SitewalkError

if TYPE_CHECKING:
    from collections.abc import Hashable, Iterable, Sequence
    from typing import Protocol

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from twisted.internet.base import ReactorBase
    from typing_extensions import Self

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
    "literal_ip",
    "parse_networks",
    "refusal",
    "release_crawl",
]

logger = logging.getLogger(__name__)

_Address: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
_Network: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network
_SocketAddress: TypeAlias = IPv4Address | IPv6Address
_CacheKey: TypeAlias = tuple[str, frozenset[type[IAddress]] | None, str]

# Ranges that Python 3.11's is_global calls global but that a walker must not reach:
# the IETF protocol assignments (3.11 marks only 192.0.0.0/29 and 192.0.0.170/31; the
# two anycast services IANA calls global, .9 and .10, are no web host either), the
# deprecated 6to4 relay anycast (RFC 7526), the 2024 IPv6 documentation prefix
# (RFC 9637) and the local-use NAT64 prefix (RFC 8215), whose translator is local and
# whose IPv4 position depends on a prefix length we cannot know.
_NOT_PUBLIC = (
    ipaddress.IPv4Network("192.0.0.0/24"),
    ipaddress.IPv4Network("192.88.99.0/24"),
    ipaddress.IPv6Network("3fff::/20"),
    ipaddress.IPv6Network("64:ff9b:1::/48"),
)
# IPv6 forms whose last 32 bits are an IPv4 address the packet ends up at;
# is_global judges them by the IPv6 prefix, which says nothing about that address.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_IPV4_DIGITS = {10: "0123456789", 8: "01234567", 16: "0123456789abcdefABCDEF"}

_SETTING = "SITEWALK_GUARD_ALLOW_NETWORKS"
# Enough to outlive the gap between a refused resolution and the middleware
# reading the reason, without letting a long walk grow the table.
_REFUSALS_KEPT = 1024

_crawl_networks: dict[Hashable, tuple[_Network, ...]] = {}
_refusals: LocalCache[str, str] = LocalCache(_REFUSALS_KEPT)


def parse_networks(value: str | list[str] | tuple[str, ...] | None) -> tuple[_Network, ...]:
    """Parse SITEWALK_GUARD_ALLOW_NETWORKS: comma-separated CIDRs or a list of them.

    A bare address is a /32 or /128 network. A network with host bits set
    (``10.1.2.3/8``) is refused rather than widened, as it is more likely a typo.
    """
    if not value:
        return ()
    entries = value.split(",") if isinstance(value, str) else value
    networks = []
    for entry in entries:
        text = entry.strip()
        if not text:
            continue
        try:
            networks.append(ipaddress.ip_network(text))
        except ValueError:
            message = (
                f"{_SETTING}: {text!r} is not an IP network"
                " (use CIDRs such as 127.0.0.1/32,10.0.0.0/8)"
            )
            raise SitewalkError(message) from None
    return tuple(networks)


def refusal(ip: str | _Address, allowed: Sequence[_Network] = ()) -> str | None:
    """Return None if ``ip`` may be connected to, else the reason it is refused.

    An address may be connected to when it is globally routable or inside one of
    ``allowed``. IPv6 forms that carry an IPv4 address (mapped, translated, NAT64,
    6to4, Teredo, IPv4-compatible) are judged by that IPv4 address unless the IPv6
    address itself is allowed. Raises ValueError if ``ip`` is not an IP address.
    """
    address = ipaddress.ip_address(ip) if isinstance(ip, str) else ip
    if _permitted(address, allowed):
        return None
    return (
        f"refused address {address} (not a public address; allow it with {_SETTING})"
    )


def _permitted(address: _Address, allowed: Sequence[_Network]) -> bool:
    if any(address in network for network in allowed):
        return True
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded:
            return all(_permitted(ipv4, allowed) for ipv4 in embedded)
    return _is_public(address)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    if address.ipv4_mapped is not None:
        return (address.ipv4_mapped,)
    if address.sixtofour is not None:
        return (address.sixtofour,)
    if address.teredo is not None:
        # Server and client: packets may reach either, so both must pass.
        return address.teredo
    if (
        address in _NAT64
        or address in _IPV4_TRANSLATED
        # :: and ::1 are the unspecified and loopback addresses, not IPv4-compatible ones.
        or (address in _IPV4_COMPATIBLE and int(address) > 1)
    ):
        return (ipaddress.IPv4Address(int(address) & 0xFFFFFFFF),)
    return ()


def _is_public(address: _Address) -> bool:
    # is_global alone passes multicast, IPv6 site-local and the IETF-reserved
    # IPv6 space, none of which is a public unicast host.
    if not address.is_global or address.is_multicast or address.is_reserved:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return False
    return not any(address in network for network in _NOT_PUBLIC)


def literal_ip(host: str) -> _Address | None:
    """Return the IP address a URL host spells, or None for a host name.

    Follows the WHATWG URL host parser, so every number form a browser accepts is
    an address: ``2130706433``, ``0x7f.1``, ``0177.0.0.1``, ``127.1``, a trailing
    dot, percent-encoding and full-width digits. IPv6 may be bracketed or bare (the
    resolver sees it bare). A host a browser rejects (``1.2.3.4.5``, ``256.1.1.1``,
    an IPv6 zone ID) is not an address and returns None: the resolver then hands it
    to the system resolver and still judges every address that comes back.
    """
    if host.startswith("[") and host.endswith("]"):
        return _ipv6_literal(host[1:-1])
    if ":" in host:
        return _ipv6_literal(host)
    domain = _domain_to_ascii(host)
    return None if domain is None else _ipv4_literal(domain)


def _ipv6_literal(text: str) -> ipaddress.IPv6Address | None:
    if "%" in text:
        return None
    try:
        return ipaddress.IPv6Address(text)
    except ValueError:
        return None


def _domain_to_ascii(host: str) -> str | None:
    try:
        domain = unquote_to_bytes(host).decode("utf-8")
        # The stdlib IDNA codec is what getaddrinfo applies to non-ASCII names;
        # like the browsers' UTS 46 it maps full-width digits and dots to ASCII.
        return domain if domain.isascii() else domain.encode("idna").decode("ascii")
    except UnicodeError:
        return None


def _ipv4_literal(domain: str) -> ipaddress.IPv4Address | None:
    parts = domain.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    # A host whose last label is not a number is a name, whatever comes before.
    if not (parts[-1].isdigit() or _ipv4_number(parts[-1]) is not None):
        return None
    if len(parts) > 4:
        return None
    values = []
    for part in parts:
        value = _ipv4_number(part)
        if value is None:
            return None
        values.append(value)
    if any(value > 255 for value in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        return None
    head = sum(value << (8 * (3 - index)) for index, value in enumerate(values[:-1]))
    return ipaddress.IPv4Address(head + values[-1])


def _ipv4_number(part: str) -> int | None:
    if not part:
        return None
    radix = 10
    if part[:2] in ("0x", "0X"):
        part, radix = part[2:], 16
    elif len(part) > 1 and part[0] == "0":
        part, radix = part[1:], 8
    if not part:
        return 0
    # int() alone would also take signs, underscores and surrounding whitespace.
    if any(char not in _IPV4_DIGITS[radix] for char in part):
        return None
    return int(part, radix)


def allow_networks_for_crawl(key: Hashable, networks: Iterable[_Network]) -> None:
    """Let every GuardResolver in the process allow ``networks`` until ``release_crawl(key)``."""
    _crawl_networks[key] = tuple(networks)


def release_crawl(key: Hashable) -> None:
    """Withdraw the networks registered under ``key``; unknown keys are ignored."""
    _crawl_networks.pop(key, None)


def last_refusal(host: str) -> str | None:
    """The reason the latest resolution of ``host`` yielded no address, if the guard refused them all.

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
    cache_size = settings.getint("DNSCACHE_SIZE") if settings.getbool("DNSCACHE_ENABLED") else 0
    return parse_networks(settings.get(_SETTING)), cache_size


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
    the reason. A later resolution of the host clears or replaces it.

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
        # CrawlerProcess passes itself as crawler: only its settings are used.
        return cls(reactor, *_resolver_args(crawler.settings))

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
        for address in addresses:
            reason = refusal(address.host, allowed)
            if reason is None:
                receiver.addressResolved(address)
            else:
                reasons.append(reason)
        # Re-inserted rather than overwritten, so the table evicts the stalest host first.
        key = _host_key(host)
        _refusals.pop(key, None)
        if reasons and len(reasons) == len(addresses):
            _refusals[key] = reasons[0]
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
