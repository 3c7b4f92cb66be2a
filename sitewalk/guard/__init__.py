"""Address guard: never connect to a non-public IP address unless its network is allowed.

``addresses`` decides which addresses are public and reads the address a URL's host spells in
any form; ``resolver`` enforces it where every connection is made (TWISTED_DNS_RESOLVER).
"""

from __future__ import annotations

from sitewalk.guard.addresses import literal_ip, parse_networks, refusal
from sitewalk.guard.resolver import (
    GuardResolver,
    allow_networks_for_crawl,
    install_guard_resolver,
    last_refusal,
    release_crawl,
)

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
