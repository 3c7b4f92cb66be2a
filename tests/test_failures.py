"""Failures over real HTTP: one page per kind of failure, its reason in words and its kind."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest
from OpenSSL.SSL import Error as TLSError
from scrapy import Request
from scrapy.exceptions import DownloadCancelledError, DownloadFailedError, IgnoreRequest
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.interfaces import IHostnameResolver
from twisted.python.failure import Failure
from twisted.web.client import ResponseNeverReceived
from zope.interface import implementer

from sitewalk import SeedError, walk
from sitewalk.failures import KINDS, describe
from tests.conftest import LOOPBACK

# kind, the failing page, its reason (a regular expression, matched in full), the settings of the
# walk, and how many requests for the page the server received.
TABLE: list[tuple[str, dict[str, Any], str, dict[str, Any], int]] = [
    ("network", {"size": 5000, "cut": 100, "content_type": "text/plain"},
     "connection closed before the response ended", {}, 1),
    # Sent on the connection the seed used, it is sent once more on a new one (no byte of a
    # response arrived), which the server closes too.
    ("network", {"close": True}, "connection closed before a response arrived", {}, 2),
    ("protocol", {"raw": "SPAM/9 nope\r\n\r\n"}, re.escape("invalid HTTP status line 'SPAM/9 nope'"), {}, 1),
    ("protocol", {"raw": "HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nhello"},
     re.escape("invalid HTTP response (ValueError: Value contains non-decimal digits: b'abc')"), {}, 1),
    ("timeout", {"sleep": 3}, re.escape("timed out after 0.5s"), {"DOWNLOAD_TIMEOUT": 0.5}, 1),
    ("redirect-loop", {"status": 302, "headers": {"Location": "/loop"}},
     r"redirect loop: http://\S+/page -> http://\S+/loop -> http://\S+/page", {}, 1),
    ("too-many-redirects", {"status": 302, "headers": {"Location": "/hop1"}},
     re.escape("more than 2 redirects (REDIRECT_MAX_TIMES=2)"), {"REDIRECT_MAX_TIMES": 2}, 1),
    ("off-origin", {"status": 302, "headers": {"Location": "{elsewhere}/landing"}},
     r"redirected off-origin to http://\S+/landing", {}, 1),
    ("too-large", {"size": 100_000, "content_type": "text/plain"},
     re.escape("larger than the download size limit (DOWNLOAD_MAXSIZE=1000)"), {"DOWNLOAD_MAXSIZE": 1000}, 1),
    ("budget", {"size": 100_000, "content_type": "text/plain"},
     r"cut off at max_bytes \(max_bytes=5000, \d+ left for this page\)", {"max_bytes": 5000}, 1),
]
SITE = {
    "/": {"title": "Home", "links": ["/page"]},
    "/loop": {"status": 302, "headers": {"Location": "/page"}},
    "/hop1": {"status": 302, "headers": {"Location": "/hop2"}},
    "/hop2": {"status": 302, "headers": {"Location": "/hop3"}},
    "/hop3": {"status": 302, "headers": {"Location": "/hop4"}},
}


@pytest.mark.parametrize(("kind", "page", "reason", "settings", "requests"), TABLE)
def test_each_failure_has_its_kind_and_a_reason_in_words(make_site, kind, page, reason, settings, requests):
    elsewhere = make_site({})
    if "headers" in page:
        page = {**page, "headers": {"Location": page["headers"]["Location"].replace("{elsewhere}", elsewhere.url)}}
    site = make_site({**SITE, "/page": page})
    arguments = {name: settings.pop(name) for name in list(settings) if name.islower()}
    report = walk(site("/"), delay=0, settings={**LOOPBACK, **settings}, **arguments)
    assert [(f["url"], f["kind"], f["found_on"]) for f in report.failures] == [(site("/page"), kind, site("/"))]
    assert re.fullmatch(reason, report.failures[0]["reason"]), report.failures[0]["reason"]
    assert Counter(site.paths())["/page"] == requests
    assert elsewhere.requests() == []


def test_the_table_covers_every_kind_a_page_of_the_site_can_fail_with():
    # The kinds only a seed can have (a host that cannot be reached, its robots.txt) are below;
    # read and consumer, a component's fault on a page, in tests/test_walk_odd_pages.py; render in
    # tests/test_render.py.
    assert {row[0] for row in TABLE} | {"refused", "dns", "guard", "robots", "other", "read", "consumer", "render"} == KINDS


@implementer(IHostnameResolver)
class StubDNS:
    """Answers from a table (no answer for other names), and records what it was asked."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def resolveHostName(self, receiver: Any, hostName: str, portNumber: int = 0, addressTypes: Any = None,
                        transportSemantics: str = "TCP") -> None:
        self.asked.append(hostName)
        receiver.resolutionBegan(None)
        for host in self.answers.get(hostName, []):
            receiver.addressResolved((IPv6Address if ":" in host else IPv4Address)("TCP", host, portNumber))
        receiver.resolutionComplete()


@pytest.fixture
def stub_dns(make_site, monkeypatch):
    """The name resolver the walk's guard asks, answering from a table: no query leaves the machine."""
    site = make_site({})
    walk(site("/"), delay=0, settings=LOOPBACK)  # installs the reactor and the guard's resolver
    from twisted.internet import reactor

    stub = StubDNS({"intranet.test": ["10.0.0.1"], "metadata.test": ["169.254.169.254", "fd00::1"]})
    monkeypatch.setattr(reactor.nameResolver, "original_resolver", stub)
    return stub


@pytest.mark.parametrize(
    ("host", "kind", "reason"),
    [
        ("intranet.test", "guard", "refused address 10.0.0.1 (not a public address)"),
        ("metadata.test", "guard", "refused address 169.254.169.254 (not a public address)"),
        ("nowhere.test", "dns", "DNS lookup failed: no address for nowhere.test"),
    ],
)
def test_a_seed_whose_host_cannot_be_reached_names_the_hosts_problem(stub_dns, host, kind, reason):
    with pytest.raises(SeedError) as raised:
        walk(f"http://{host}:8080/", delay=0, settings=LOOPBACK)
    # The host's problem, not "robots.txt could not be fetched", though robots.txt was asked for first.
    assert (raised.value.kind, raised.value.reason) == (kind, reason)
    assert host in stub_dns.asked


def test_a_refused_connection_is_the_seeds_own_problem(unused_port):
    with pytest.raises(SeedError) as raised:
        walk(f"http://127.0.0.1:{unused_port}/", delay=0, settings=LOOPBACK)
    assert str(raised.value) == f"seed http://127.0.0.1:{unused_port}/ could not be fetched: connection refused"
    assert (raised.value.kind, raised.value.reason) == ("refused", "connection refused")


def test_a_robots_txt_that_fails_otherwise_is_named(make_site):
    site = make_site({"/robots.txt": {"status": 503}, "/": {}})
    with pytest.raises(SeedError) as raised:
        walk(site("/"), delay=0, settings=LOOPBACK)
    assert (raised.value.kind, raised.value.reason) == ("robots", "robots.txt could not be fetched (it answered 503)")
    assert site.paths() == []


def _failure(exc: BaseException, cause: BaseException | None = None) -> Failure:
    exc.__cause__ = cause
    return Failure(exc)


_TLS = ResponseNeverReceived([Failure(TLSError([("SSL routines", "", "wrong version number")]))])
# Failures the table above cannot produce over loopback, built as Scrapy 2.19 raises them.
DESCRIBED: list[tuple[Failure, dict[str, Any], tuple[str, str]]] = [
    (_failure(DownloadFailedError(str(_TLS)), _TLS), {},
     ("protocol", "TLS failed: [('SSL routines', '', 'wrong version number')]")),
    # A cancelled download without a size limit is not "too large".
    (_failure(DownloadCancelledError("cancelled")), {}, ("other", "DownloadCancelledError: cancelled")),
    (_failure(DownloadCancelledError("cancelled")), {"download_maxsize": 10},
     ("too-large", "larger than the download size limit (DOWNLOAD_MAXSIZE=10)")),
    # A bare IgnoreRequest is too many redirects only when the chain has used up its ttl.
    (_failure(IgnoreRequest("some middleware")), {}, ("other", "IgnoreRequest: some middleware")),
    (_failure(IgnoreRequest("max redirections reached")), {"redirect_ttl": 0, "redirect_times": 20},
     ("too-many-redirects", "more than 20 redirects (REDIRECT_MAX_TIMES=20)")),
    (_failure(ValueError("odd")), {}, ("other", "ValueError: odd")),
]


@pytest.mark.parametrize(("failure", "meta", "expected"), DESCRIBED)
def test_describe_tells_kinds_apart_by_type_and_meta(failure, meta, expected):
    described = describe(failure, Request("http://site.test/p", meta=meta))
    assert (described.kind, described.reason) == expected
    assert described.kind in KINDS
