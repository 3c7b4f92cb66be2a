"""The address guard: which addresses a walk may reach, and the resolver that enforces it.

Pure unit tests: name resolution is stubbed and connections go to Twisted's memory reactor,
so no test opens a socket or asks DNS.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import pytest
import twisted.internet
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.base import PluggableResolverMixin
from twisted.internet.endpoints import HostnameEndpoint
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IHostnameResolver, IResolutionReceiver
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.testing import MemoryReactorClock
from zope.interface import implementer

from sitewalk import guard
from sitewalk.exceptions import SitewalkError
from sitewalk.guard import (
    GuardResolver,
    allow_networks_for_crawl,
    install_guard_resolver,
    last_refusal,
    literal_ip,
    parse_networks,
    refusal,
    release_crawl,
)


def reason(address: str) -> str:
    return f"refused address {address} (not a public address)"


# -- refusal ------------------------------------------------------------------------------------

REFUSED = [
    # IPv4: loopback, RFC 1918, link-local and cloud metadata, CGNAT, "this network",
    # broadcast, multicast, reserved, documentation, benchmarking, 6to4 relay, IETF protocol.
    "127.0.0.1",
    "127.255.255.254",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "169.254.0.1",
    "100.64.0.1",
    "100.127.255.254",
    "0.0.0.0",
    "0.1.2.3",
    "255.255.255.255",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "192.0.2.1",
    "198.51.100.7",
    "203.0.113.9",
    "198.18.0.1",
    "198.19.255.254",
    "192.88.99.1",
    "192.0.0.8",
    "192.0.0.9",
    "192.0.0.100",
    "192.0.0.170",
    # IPv6: unspecified, loopback, unique-local, link-local (with zone), site-local,
    # multicast, documentation (old and RFC 9637), discard-only, reserved.
    "::",
    "::1",
    "fc00::1",
    "fd12:3456::1",
    "fe80::1",
    "fe80::1%eth0",
    "fec0::1",
    "ff02::1",
    "ff0e::1",
    "2001:db8::1",
    "3fff::1",
    "100::1",
    "5f00::1",
    # IPv6 carrying a non-public IPv4: mapped, translated, NAT64, 6to4, Teredo, compatible.
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "::ffff:0:127.0.0.1",
    "64:ff9b::7f00:1",
    "64:ff9b::a9fe:a9fe",
    "2002:7f00:1::1",
    "2002:a00:1::1",
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo client 127.0.0.1
    "2001:0:c000:201:8000:63bf:f7f7:f7f7",  # Teredo server 192.0.2.1
    "::127.0.0.1",
    "::10.0.0.1",
    "::169.254.169.254",
    # Local-use NAT64 is refused whatever it carries.
    "64:ff9b:1::808:808",
]

PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "192.31.196.1",
    "2606:4700::1111",
    "2001:4860:4860::8888",
    "::ffff:8.8.8.8",
    "::ffff:0:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
    "2001:0:4136:e378:8000:63bf:f7f7:f7f7",  # Teredo server and client public
    "::8.8.8.8",
]


@pytest.mark.parametrize("ip", REFUSED)
def test_refusal_refuses_non_public(ip: str) -> None:
    assert refusal(ip) == reason(str(ipaddress.ip_address(ip)))


@pytest.mark.parametrize("ip", PUBLIC)
def test_refusal_allows_public(ip: str) -> None:
    assert refusal(ip) is None


@pytest.mark.parametrize(
    ("ip", "networks", "allowed"),
    [
        ("127.0.0.1", "127.0.0.1/32", True),
        ("127.0.0.2", "127.0.0.1/32", False),
        ("127.0.0.2", "127.0.0.1", False),
        ("10.1.2.3", "10.0.0.0/8", True),
        ("10.1.2.3", "192.168.0.0/16", False),
        ("169.254.169.254", "10.0.0.0/8,127.0.0.1/32", False),
        ("192.168.7.7", "10.0.0.0/8, 192.168.0.0/16", True),
        ("::1", "::1/128", True),
        ("::1", "127.0.0.1/32", False),
        # ::1 is loopback, not the IPv4-compatible form of 0.0.0.1.
        ("::1", "0.0.0.0/8", False),
        ("fe80::1%eth0", "fe80::/10", True),
        ("fd00::5", "fd00::/8", True),
        # Embedded IPv4: allowed by the IPv4 network or by the IPv6 address itself.
        ("::ffff:127.0.0.1", "127.0.0.1/32", True),
        ("::ffff:127.0.0.2", "127.0.0.1/32", False),
        ("::ffff:127.0.0.1", "::ffff:127.0.0.1/128", True),
        ("64:ff9b::a00:5", "10.0.0.0/8", True),
        ("::ffff:0:10.0.0.5", "10.0.0.0/8", True),
        ("2002:7f00:1::1", "127.0.0.1/32", True),
        ("::127.0.0.1", "127.0.0.0/8", True),
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "127.0.0.1/32", True),
        # The local-use NAT64 prefix hides where its IPv4 sits: only the IPv6 network allows it.
        ("64:ff9b:1::7f00:1", "127.0.0.1/32", False),
        ("64:ff9b:1::7f00:1", "64:ff9b:1::/48", True),
        # An IPv4 network never allows an IPv6 address that carries no IPv4, and vice versa.
        ("fd00::1", "0.0.0.0/0", False),
        ("10.0.0.1", "::/0", False),
    ],
)
def test_refusal_with_allowed_networks(ip: str, networks: str, allowed: bool) -> None:
    result = refusal(ip, parse_networks(networks))
    assert (result is None) is allowed
    if not allowed:
        assert result == reason(str(ipaddress.ip_address(ip)))


def test_refusal_takes_address_objects() -> None:
    assert refusal(ipaddress.IPv4Address("10.0.0.1")) == reason("10.0.0.1")
    assert refusal(ipaddress.IPv6Address("2606:4700::1111")) is None


def test_refusal_rejects_a_name() -> None:
    with pytest.raises(ValueError, match="example.com"):
        refusal("example.com")


# -- literal_ip ---------------------------------------------------------------------------------

LITERALS = [
    ("127.0.0.1", "127.0.0.1"),
    ("2130706433", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"),
    ("0X7F000001", "127.0.0.1"),
    ("0x7f.0.0.1", "127.0.0.1"),
    ("0x7F.0x0.0x0.0x1", "127.0.0.1"),
    ("0177.0.0.1", "127.0.0.1"),
    ("017700000001", "127.0.0.1"),
    ("0177.1", "127.0.0.1"),
    ("127.1", "127.0.0.1"),
    ("127.0.1", "127.0.0.1"),
    ("1.256", "1.0.1.0"),
    ("4294967295", "255.255.255.255"),
    ("0", "0.0.0.0"),
    ("169.254.43518", "169.254.169.254"),
    # Forms inet_aton refuses but browsers take: trailing dot, bare "0x", percent-encoding,
    # full-width digits and ideographic full stops.
    ("127.0.0.1.", "127.0.0.1"),
    ("2130706433.", "127.0.0.1"),
    ("0x7f.1.", "127.0.0.1"),
    ("0x", "0.0.0.0"),
    ("%31%32%37.0.0.1", "127.0.0.1"),
    ("１２７.０.０.１", "127.0.0.1"),
    ("127。0。0。1", "127.0.0.1"),
    # IPv6, bracketed as in a URL or bare as Twisted hands it to the resolver.
    ("[::1]", "::1"),
    ("::1", "::1"),
    ("[::ffff:127.0.0.1]", "::ffff:7f00:1"),
    ("[0:0:0:0:0:FFFF:7F00:1]", "::ffff:7f00:1"),
    ("[64:ff9b::a9fe:a9fe]", "64:ff9b::a9fe:a9fe"),
    ("2606:4700::1111", "2606:4700::1111"),
]

NOT_LITERALS = [
    # Names.
    "example.com",
    "example.com.",
    "localhost",
    "1.2.3.com",
    "0x1g",
    "sub.0x7f.example",
    "1.2.3.4 ",
    "",
    # Hosts a browser rejects as invalid IPv4: too many parts, a part or the whole too big,
    # bad octal, empty part, non-numbers before a numeric last label.
    "1.2.3.4.5",
    "256.1.1.1",
    "1.2.3.256",
    "4294967296",
    "09.1.1.1",
    "08",
    "1..2",
    "a.0x7f",
    # Broken or zoned IPv6 (a browser rejects zone IDs in URLs).
    "[::1",
    "[1::2::3]",
    "[fe80::1%25eth0]",
    "[::ffff:127.0.0.01]",
]


@pytest.mark.parametrize(("host", "expected"), LITERALS)
def test_literal_ip(host: str, expected: str) -> None:
    assert literal_ip(host) == ipaddress.ip_address(expected)


@pytest.mark.parametrize("host", NOT_LITERALS)
def test_literal_ip_not_an_address(host: str) -> None:
    assert literal_ip(host) is None


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "2130706433", "0x7f000001", "0x7f.0.0.1", "0177.0.0.1", "017700000001", "127.1", "1.256"],
)
def test_literal_ip_agrees_with_inet_aton(host: str) -> None:
    assert literal_ip(host) == ipaddress.IPv4Address(socket.inet_aton(host))


@pytest.mark.parametrize("host", ["1.2.3.4 junk", "1.2.3.4\tx"])
def test_literal_ip_refuses_junk_inet_aton_takes(host: str) -> None:
    # Some C libraries stop at the first space and call the rest an address.
    assert literal_ip(host) is None


# -- parse_networks -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ()),
        ("", ()),
        ("  ", ()),
        ([], ()),
        ("127.0.0.1/32", ("127.0.0.1/32",)),
        ("127.0.0.1/32,10.0.0.0/8", ("127.0.0.1/32", "10.0.0.0/8")),
        (" 10.0.0.0/8 ,, ::1 ", ("10.0.0.0/8", "::1/128")),
        ("192.168.0.1", ("192.168.0.1/32",)),
        (["10.0.0.0/8", " fd00::/8 "], ("10.0.0.0/8", "fd00::/8")),
        (("169.254.169.254",), ("169.254.169.254/32",)),
    ],
)
def test_parse_networks(value: Any, expected: tuple[str, ...]) -> None:
    assert parse_networks(value) == tuple(ipaddress.ip_network(text) for text in expected)


@pytest.mark.parametrize(
    ("value", "bad"),
    [
        ("xyz", "xyz"),
        ("10.0.0.0/8,nope", "nope"),
        ("10.0.0.0/33", "10.0.0.0/33"),
        # Host bits set: refused rather than silently widened to 10.0.0.0/8.
        ("10.1.2.3/8", "10.1.2.3/8"),
        (["10.0.0.0/8", "::1/129"], "::1/129"),
        ("localhost", "localhost"),
    ],
)
def test_parse_networks_rejects(value: Any, bad: str) -> None:
    with pytest.raises(SitewalkError) as raised:
        parse_networks(value)
    message = str(raised.value)
    assert "SITEWALK_GUARD_ALLOW_NETWORKS" in message
    assert repr(bad) in message
    assert "\n" not in message


# -- GuardResolver ------------------------------------------------------------------------------


@implementer(IHostnameResolver)
class StubResolver:
    """Answers from a table, synchronously, and records what it was asked."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def resolveHostName(
        self,
        resolutionReceiver: Any,
        hostName: str,
        portNumber: int = 0,
        addressTypes: Any = None,
        transportSemantics: str = "TCP",
    ) -> Any:
        self.asked.append(hostName)
        resolutionReceiver.resolutionBegan(object())
        for host in self.answers.get(hostName, []):
            kind = IPv6Address if ":" in host else IPv4Address
            if addressTypes is None or kind in addressTypes:
                resolutionReceiver.addressResolved(kind("TCP", host, portNumber))
        resolutionReceiver.resolutionComplete()
        return None


@implementer(IResolutionReceiver)
class Receiver:
    def __init__(self) -> None:
        self.began = False
        self.addresses: list[Any] = []
        self.completed = False

    def resolutionBegan(self, resolution: Any) -> None:
        self.began = True

    def addressResolved(self, address: Any) -> None:
        self.addresses.append(address)

    def resolutionComplete(self) -> None:
        self.completed = True


class FakeReactor(PluggableResolverMixin):
    """Just the name-resolver slots of a reactor."""


class EndpointReactor(MemoryReactorClock):
    """Records connection attempts instead of making them, with a replaceable name resolver."""

    def installNameResolver(self, resolver: Any) -> Any:
        previous, self.nameResolver = self.nameResolver, resolver
        return previous


ANSWERS = {
    "mixed.example": ["93.184.216.34", "10.0.0.5", "2606:4700::1111", "fd00::1"],
    "metadata.example": ["169.254.169.254"],
    "private.example": ["10.0.0.5", "::ffff:10.0.0.5"],
    "loopback.example": ["127.0.0.1"],
    "flip.example": ["10.0.0.5"],
}


@pytest.fixture
def stub() -> StubResolver:
    return StubResolver(ANSWERS)


def make_guard(stub: StubResolver, networks: str = "", cache_size: int = 0) -> GuardResolver:
    reactor = FakeReactor()
    reactor.installNameResolver(stub)
    return GuardResolver(reactor, parse_networks(networks), cache_size)


def resolve(resolver: GuardResolver, host: str, port: int = 80, types: Any = None) -> Receiver:
    receiver = Receiver()
    resolver.resolveHostName(receiver, host, port, types)
    assert receiver.began and receiver.completed
    return receiver


@pytest.fixture
def crawl_key() -> Iterator[object]:
    key = object()
    yield key
    release_crawl(key)


def test_resolver_drops_private_addresses_of_a_mixed_name(stub: StubResolver) -> None:
    received = resolve(make_guard(stub), "mixed.example", 443)
    assert received.addresses == [
        IPv4Address("TCP", "93.184.216.34", 443),
        IPv6Address("TCP", "2606:4700::1111", 443),
    ]
    assert last_refusal("mixed.example") is None


def test_resolver_refuses_a_name_with_only_private_addresses(stub: StubResolver) -> None:
    received = resolve(make_guard(stub), "metadata.example")
    assert received.addresses == []
    assert last_refusal("metadata.example") == "169.254.169.254"
    assert last_refusal("METADATA.Example") == "169.254.169.254"


@pytest.mark.parametrize(
    ("host", "judged"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("127.0.0.1", "127.0.0.1"),
        ("0251.0376.0251.0376", "169.254.169.254"),
        ("::ffff:127.0.0.1", "::ffff:7f00:1"),
        ("[::1]", "::1"),
    ],
)
def test_resolver_judges_literal_hosts_without_looking_them_up(
    stub: StubResolver, host: str, judged: str
) -> None:
    received = resolve(make_guard(stub), host)
    assert received.addresses == []
    assert stub.asked == []
    assert last_refusal(host) == judged


def test_resolver_connects_an_allowed_literal_at_its_address(stub: StubResolver) -> None:
    received = resolve(make_guard(stub, "127.0.0.1/32"), "2130706433", 8080)
    assert received.addresses == [IPv4Address("TCP", "127.0.0.1", 8080)]
    assert stub.asked == []
    assert last_refusal("2130706433") is None


def test_resolver_allows_a_name_in_an_allowed_network(stub: StubResolver) -> None:
    received = resolve(make_guard(stub, "127.0.0.1/32"), "loopback.example")
    assert received.addresses == [IPv4Address("TCP", "127.0.0.1", 80)]


def test_resolver_allows_networks_of_registered_crawls(stub: StubResolver, crawl_key: object) -> None:
    resolver = make_guard(stub)
    assert resolve(resolver, "private.example").addresses == []
    allow_networks_for_crawl(crawl_key, parse_networks("10.0.0.0/8"))
    assert resolve(resolver, "private.example").addresses == [
        IPv4Address("TCP", "10.0.0.5", 80),
        IPv6Address("TCP", "::ffff:10.0.0.5", 80),
    ]
    release_crawl(crawl_key)
    assert resolve(resolver, "private.example").addresses == []


def test_resolver_cache_keeps_answers_and_filters_each_use(stub: StubResolver, crawl_key: object) -> None:
    resolver = make_guard(stub, cache_size=10)
    assert resolve(resolver, "flip.example").addresses == []
    assert last_refusal("flip.example") == "10.0.0.5"
    allow_networks_for_crawl(crawl_key, parse_networks("10.0.0.0/8"))
    assert resolve(resolver, "flip.example", 8443).addresses == [IPv4Address("TCP", "10.0.0.5", 8443)]
    assert stub.asked == ["flip.example"]
    # The newer, successful resolution replaces the refusal a middleware could misreport.
    assert last_refusal("flip.example") is None


def test_resolver_without_cache_asks_every_time(stub: StubResolver) -> None:
    resolver = make_guard(stub)
    resolve(resolver, "mixed.example")
    resolve(resolver, "mixed.example")
    assert stub.asked == ["mixed.example", "mixed.example"]


def test_resolver_honours_address_types(stub: StubResolver) -> None:
    resolver = make_guard(stub, "::1/128")
    assert resolve(resolver, "mixed.example", types=[IPv4Address]).addresses == [
        IPv4Address("TCP", "93.184.216.34", 80)
    ]
    assert resolve(resolver, "::1", types=[IPv4Address]).addresses == []
    assert resolve(resolver, "::1", types=[IPv6Address]).addresses == [IPv6Address("TCP", "::1", 80)]


def test_resolver_built_from_settings(stub: StubResolver) -> None:
    reactor = FakeReactor()
    reactor.installNameResolver(stub)
    crawler = get_crawler(
        settings_dict={"SITEWALK_GUARD_ALLOW_NETWORKS": "127.0.0.1/32", "DNSCACHE_SIZE": 5}
    )
    resolver = build_from_crawler(GuardResolver, crawler, reactor=reactor)
    resolver.install_on_reactor()
    assert reactor.nameResolver is resolver
    assert resolver.original_resolver is stub
    assert resolve(resolver, "loopback.example").addresses == [IPv4Address("TCP", "127.0.0.1", 80)]
    resolve(resolver, "loopback.example")
    assert stub.asked == ["loopback.example"]


def test_resolver_built_from_bad_allow_networks_setting_allows_none(stub: StubResolver) -> None:
    # The crawl's AddressGuardMiddleware refuses the setting (tests/test_downloadermiddleware_guard.py).
    reactor = FakeReactor()
    reactor.installNameResolver(stub)
    crawler = get_crawler(settings_dict={"SITEWALK_GUARD_ALLOW_NETWORKS": "127.0.0.1/32,intranet"})
    resolver = build_from_crawler(GuardResolver, crawler, reactor=reactor)
    assert resolver.networks == ()
    assert resolve(resolver, "loopback.example").addresses == []


def test_installed_resolver_also_guards_the_simple_resolver(stub: StubResolver) -> None:
    # reactor.resolve() and connectTCP() with a host name go through reactor.resolver.
    reactor = FakeReactor()
    reactor.installNameResolver(stub)
    GuardResolver(reactor).install_on_reactor()
    results: list[Any] = []
    reactor.resolver.getHostByName("0x7f.1").addBoth(results.append)
    reactor.resolver.getHostByName("mixed.example").addBoth(results.append)
    assert results[0].check(DNSLookupError)
    assert results[1] == "93.184.216.34"


# -- through Twisted's HostnameEndpoint, as Scrapy's HTTP/1.1 handler connects -------------------


def endpoint_reactor(stub: StubResolver, networks: str = "") -> EndpointReactor:
    reactor = EndpointReactor()
    reactor.installNameResolver(stub)
    GuardResolver(reactor, parse_networks(networks)).install_on_reactor()
    return reactor


def connect(reactor: EndpointReactor, host: str, port: int = 80) -> list[Any]:
    results: list[Any] = []
    HostnameEndpoint(reactor, host, port).connect(Factory.forProtocol(Protocol)).addBoth(results.append)
    reactor.advance(1)
    return results


def test_endpoint_connects_only_to_the_public_address(stub: StubResolver) -> None:
    reactor = endpoint_reactor(stub)
    connect(reactor, "mixed.example")
    reactor.advance(10)
    assert [(host, port) for host, port, *_ in reactor.tcpClients] == [
        ("93.184.216.34", 80),
        ("2606:4700::1111", 80),
    ]


@pytest.mark.parametrize("host", ["127.0.0.1", "2130706433", "::1", "metadata.example"])
def test_endpoint_fails_with_dns_lookup_error_when_all_refused(stub: StubResolver, host: str) -> None:
    # HostnameEndpoint sends literal IPs through the name resolver too, so the guard sees them.
    reactor = endpoint_reactor(stub)
    results = connect(reactor, host)
    assert results[0].check(DNSLookupError)
    assert reactor.tcpClients == []
    assert last_refusal(host) is not None


def test_endpoint_connects_to_allowed_literal(stub: StubResolver) -> None:
    reactor = endpoint_reactor(stub, "127.0.0.1/32")
    connect(reactor, "0x7f000001", 8080)
    assert [(host, port) for host, port, *_ in reactor.tcpClients] == [("127.0.0.1", 8080)]
    assert stub.asked == []


# -- install_guard_resolver ---------------------------------------------------------------------


def test_install_guard_resolver_is_idempotent(stub: StubResolver, monkeypatch: pytest.MonkeyPatch) -> None:
    reactor = FakeReactor()
    reactor.installNameResolver(stub)
    monkeypatch.setattr(guard.resolver, "is_reactor_installed", lambda: True)
    monkeypatch.setattr(twisted.internet, "reactor", reactor, raising=False)
    settings = get_crawler(settings_dict={"SITEWALK_GUARD_ALLOW_NETWORKS": "10.0.0.0/8"}).settings
    install_guard_resolver(settings)
    installed = reactor.nameResolver
    assert isinstance(installed, GuardResolver)
    assert installed.original_resolver is stub
    assert installed.networks == parse_networks("10.0.0.0/8")
    install_guard_resolver(settings)
    assert reactor.nameResolver is installed


def test_install_guard_resolver_needs_a_reactor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guard.resolver, "is_reactor_installed", lambda: False)
    with pytest.raises(SitewalkError, match="TWISTED_REACTOR_ENABLED"):
        install_guard_resolver(get_crawler().settings)
