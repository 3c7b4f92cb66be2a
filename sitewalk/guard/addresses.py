"""Which IP addresses the walk may connect to, and which address a URL's host spells."""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, TypeAlias
from urllib.parse import unquote_to_bytes

from sitewalk.exceptions import SitewalkError

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["literal_ip", "parse_networks", "refusal"]

_Address: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
_Network: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network


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


def parse_networks(
    value: str | list[str] | tuple[str, ...] | None, given_as: str = _SETTING
) -> tuple[_Network, ...]:
    """Parse SITEWALK_GUARD_ALLOW_NETWORKS: comma-separated CIDRs or a list of them.

    A bare address is a /32 or /128 network. A network with host bits set
    (``10.1.2.3/8``) is refused rather than widened, as it is more likely a typo.
    The error names the value as the user gave it (``given_as``, e.g. ``--allow-networks``).
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
                f"{given_as}: {text!r} is not an IP network"
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
    return f"refused address {address} (not a public address)"


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
