"""The walk's budgets as the site sees them: over real HTTP, what the server SENT (issue 31).

``max_bytes`` bounds the bytes the site sends for the whole walk, counted on the wire: status
line, headers and body as sent (before any decompression), Scrapy's ``downloader/response_bytes``
formula. Every response counts (pages, pages downloaded ahead of their turn, robots.txt, redirect
hops); bytes are charged as they arrive, a download that would pass the budget is cut, and once
the budget is spent no request starts. ``max_pages`` counts the page requests the server received.

The site counts what it writes as the socket takes it (tests/mockserver.py, ``wire_bytes``) and
writes each body a few KiB at a time, each piece only once the walk has read everything before it
(``--wait-for-reads``): so what it wrote is what the walk read, give or take :data:`SLACK_WRITES`
pieces for each download in flight when the walk cut it.
"""

from __future__ import annotations

import json
import re
import time
from itertools import pairwise
from typing import Any, NamedTuple

import pytest
from scrapy import signals

from sitewalk import Page, Report, SeedError, walk
from tests.conftest import LOOPBACK, SERVER_LAG, Site, allow_loopback, run_cli

# Each body goes WRITE_SIZE bytes at a time, through a small send buffer, each write once the walk
# has read the one before (mockserver.py: --wait-for-reads): a slow link, where the bytes the server
# writes are the bytes the walk reads. Without the wait the walk's kernel takes 128 KiB and more of
# each connection into its receive buffer, unasked: with 4 KiB writes and SO_SNDBUF 4 KiB alone,
# a page cut off after ~100 kB still cost the server 130-220 kB past the cut (measured).
WRITE_SIZE = 4096


def wire(write_size: int = WRITE_SIZE) -> tuple[str, ...]:
    """mockserver.py's options for a server that writes no faster than the walk reads."""
    return ("--send-buffer", "4096", "--write-size", str(write_size), "--wait-for-reads")


WIRE = wire()
# What the server may write past what the walk charged, in writes, for each download in flight
# when the budget was spent: the write the walk read that passed the budget (not charged) and the
# one the server wrote while the walk decided to cut (taken by the walk's kernel, never read).
# Measured with the walk's own cut of one page (a seed, then a page larger than what is left;
# 10 kB, 250 kB and 1 MB budgets; fixed-size, chunked and gzip pages; 4 KiB writes): at most 7,922
# bytes past the budget, the two answers' header blocks (~300 bytes) included, so under two
# writes; nothing past the headers when the page's Content-Length told the walk to cut before
# the body. With the ledger's cut, several downloads in flight: 192,443 bytes past 10 MB for 6
# downloads of 16 KiB writes (1.96 writes each), 11,345 past 10 kB for 8 of 1 KiB writes. Header
# blocks, which arrive whole, are allowed for separately.
SLACK_WRITES = 2
# Twisted keeps hop-by-hop headers (Connection, Keep-Alive, ...) out of a response's headers, so
# Scrapy's downloader/response_bytes formula does not count the "Connection: close" line of an
# answer that ends its connection (the chunked pages here, which end with it): 19 bytes each that
# the server sent and a walk charging by the formula does not see.
CONNECTION_CLOSE = len(b"Connection: close\r\n")

KINDS = {
    "content-length": {},
    "chunked": {"chunked": True},  # no Content-Length: the body ends when the connection closes
    "gzip": {"gzip": True},  # random letters: gzip takes them to ~76% on the wire
}
# max_bytes: (pages the seed links to, bytes in each, the server's write size): enough pages that
# the budget bites; writes small beside the budget (the slack is two of them) and few for 10 MB.
BUDGETS = {
    10_000: (12, 4_000, 1024),
    250_000: (9, 100_000, 4096),
    1_000_000: (8, 300_000, 4096),
    10_000_000: (6, 3_000_000, 16384),
}


class Answer(NamedTuple):
    path: str
    wire: int  # status line, headers and body, as the socket took them
    head: int  # status line and headers


def written(site: Site, timeout: float = 5) -> list[Answer]:
    """What the server wrote for each request, in the order it finished answering, from its log
    (the answers still being written when the walk returned are waited for)."""
    ends = ("sent", "headers_sent", "reset", "dropped")
    deadline = time.monotonic() + timeout
    while True:
        log = site.log()
        requests = sum("method" in entry for entry in log)
        if sum(any(end in entry for end in ends) for entry in log) >= requests:
            break
        assert time.monotonic() < deadline, f"the server is still answering {requests} requests: {log[-3:]}"
        time.sleep(0.02)
    return [
        Answer(entry.get("sent") or entry.get("headers_sent") or entry["reset"], entry["wire_bytes"],
               entry["wire_bytes"] - entry.get("bytes_sent", 0))
        for entry in log if "wire_bytes" in entry
    ]


def sent(site: Site) -> int:
    """Every byte the server wrote."""
    return sum(answer.wire for answer in written(site))


def wire_size(site: Site, path: str) -> int:
    """What the server wrote for ``path`` (its one answer)."""
    (size,) = [answer.wire for answer in written(site) if answer.path == path]
    return size


class KeepStats:
    """An extension keeping the crawl's stats when it closes (the Python API returns none)."""

    stats: dict[str, Any] = {}

    def __init__(self, crawler: Any) -> None:
        self._stats = crawler.stats
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Any) -> KeepStats:
        return cls(crawler)

    def spider_closed(self) -> None:
        KeepStats.stats = dict(self._stats.get_stats())


def run(site: Site, settings: dict[str, Any] | None = None, **options: Any) -> tuple[Report, list[Page], dict[str, Any]]:
    """Walk ``site`` from its seed with the Python API: the report, the pages in order, and Scrapy's stats.

    ``on_page_stops=False``: as the CLI's feed, the consumer never stops the walk, so pages are
    downloaded ahead of their turn (up to sitewalk.gate.AHEAD in hand) while earlier ones are read."""
    pages: list[Page] = []
    KeepStats.stats = {}
    options.setdefault("delay", 0)
    extensions = {"EXTENSIONS": {f"{__name__}.KeepStats": 900}}
    report = walk(site("/"), on_page=pages.append, on_page_stops=False,
                  settings={**LOOPBACK, **extensions, **(settings or {})}, **options)
    return report, pages, KeepStats.stats


def pages_site(count: int, size: int, **page: Any) -> dict[str, Any]:
    """A seed linking to /p0 ... /p<count-1>, each a page of ``size`` bytes with ``page``'s keys."""
    return {"/": {"title": "Home", "links": [f"/p{i}" for i in range(count)]},
            **{f"/p{i}": {"size": size, **page} for i in range(count)}}


def walk_order(site: Site, count: int) -> list[str]:
    return [site("/"), *(site(f"/p{i}") for i in range(count))]


def allowed(site: Site, max_bytes: int, concurrency: int, delivered: int, *, closing: bool = False,
            write_size: int = WRITE_SIZE) -> int:
    """What the server may send for ``max_bytes``: the budget, and for each download in flight when
    it was spent (at most ``concurrency``; pages requested and not delivered were) its header block,
    which arrives whole, and :data:`SLACK_WRITES` writes; with ``closing`` pages (each answered with
    Connection: close), :data:`CONNECTION_CLOSE` for each page request."""
    in_flight = min(concurrency, len(site.paths()) - delivered)
    unseen = CONNECTION_CLOSE * len(site.paths()) if closing else 0
    head = max(answer.head for answer in written(site))
    return max_bytes + in_flight * (head + SLACK_WRITES * write_size) + unseen


def summary(site: Site, report: Report, pages: list[Page]) -> str:
    return (f"server sent {sent(site):,} bytes in {len(written(site))} answers ({len(site.paths())} page requests); "
            f"walk: stopped {report.stopped}, {len(pages)} pages, report bytes {report.bytes:,}, "
            f"byte_count {sum(page.byte_count for page in pages):,}")


@pytest.mark.parametrize("concurrency", [1, 4, 16])
@pytest.mark.parametrize("max_bytes", list(BUDGETS))
@pytest.mark.parametrize("kind", list(KINDS))
def test_the_server_sends_at_most_max_bytes(make_site, kind, max_bytes, concurrency):
    count, size, write_size = BUDGETS[max_bytes]
    site = make_site(pages_site(count, size, random=True, **KINDS[kind]), options=wire(write_size))
    report, pages, _ = run(site, max_bytes=max_bytes, max_depth=1, concurrency=concurrency)
    said = summary(site, report, pages)
    limit = allowed(site, max_bytes, concurrency, len(pages), closing=kind == "chunked", write_size=write_size)
    assert sent(site) <= limit, f"{said}; allowed {limit:,}"
    assert report.stopped == "max-bytes", said
    assert report.bytes <= max_bytes, said
    assert sum(page.byte_count for page in pages) <= report.bytes, said
    # The pages delivered are the walk's first ones, in its order.
    assert [page.url for page in pages] == walk_order(site, count)[:len(pages)], said


def test_the_issues_first_row(make_site, tmp_path):
    # scrapy crawl sitewalk -a max_bytes=250000 -a max_depth=1 on 9 pages of 100 kB, one request at
    # a time: the pages downloaded ahead of their turn (while earlier ones are read) are charged
    # when they arrive, not at their turn; the server sends about 250 kB, not 9 pages.
    site = make_site(pages_site(9, 100_000), options=WIRE)
    result = run_cli("-a", f"seed={site('/')}", "-a", "max_bytes=250000", "-a", "max_depth=1", "-a", "delay=0",
                     "-a", "concurrency=1", "-a", "report=r.json", "-o", "p.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    feed = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    said = f"server sent {sent(site):,} bytes, {len(site.paths())} page requests; report {report['bytes']:,} bytes, {len(feed)} pages"
    assert sent(site) <= allowed(site, 250_000, 1, len(feed)), said
    assert report["stopped"] == "max-bytes"
    assert sum(item["byte_count"] for item in feed) <= report["bytes"] <= 250_000


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("concurrency", [4, 16])
def test_requests_in_flight_deliver_a_prefix_of_the_one_at_a_time_walk(make_site, kind, concurrency):
    spec = pages_site(9, 100_000, random=True, **KINDS[kind])
    one_site, many_site = make_site(spec, options=WIRE), make_site(spec, options=WIRE)
    one, one_pages, _ = run(one_site, max_bytes=250_000, max_depth=1, concurrency=1)
    many, many_pages, _ = run(many_site, max_bytes=250_000, max_depth=1, concurrency=concurrency)
    path = lambda pages, site: [page.url.removeprefix(site.url) for page in pages]  # noqa: E731
    assert path(many_pages, many_site) == path(one_pages, one_site)[:len(many_pages)]
    assert many.stopped == one.stopped == "max-bytes"


@pytest.mark.parametrize("concurrency", [1, 4, 16])
def test_max_pages_counts_the_page_requests_the_server_received(make_site, concurrency):
    site = make_site(pages_site(30, 2_000), options=WIRE)
    report, pages, _ = run(site, max_pages=5, max_depth=1, concurrency=concurrency)
    assert len(site.paths()) == len(set(site.paths())) == 5 == report.fetched == len(pages)
    assert report.stopped == "max-pages"


@pytest.mark.parametrize("kind", list(KINDS))
def test_report_bytes_byte_counts_and_scrapys_response_bytes_agree(make_site, kind):
    # robots.txt off, no page cut: what the walk charged is what its pages cost, what Scrapy
    # counted (downloader/response_bytes) and what the server sent.
    spec = pages_site(5, 20_000, random=True, **KINDS[kind])
    spec["/"]["links"].append("/missing")  # a 404 page: its answer counts as any other
    site = make_site({**spec, "/missing": {"status": 404, "body": "not here"}}, options=WIRE)
    report, pages, stats = run(site, max_depth=1, settings={"ROBOTSTXT_OBEY": False})
    assert report.stopped is None and report.fetched == 7
    byte_counts = sum(page.byte_count for page in pages)
    said = (f"report bytes {report.bytes:,}, byte_count {byte_counts:,}, "
            f"downloader/response_bytes {stats['downloader/response_bytes']:,}, server sent {sent(site):,}")
    assert report.bytes == byte_counts == stats["downloader/response_bytes"], said
    closing = {f"/p{i}" for i in range(5)} if kind == "chunked" else set()
    assert sent(site) == stats["downloader/response_bytes"] + CONNECTION_CLOSE * len(closing), said
    # Each page's byte_count is its answer on the wire (less a Connection: close line Scrapy does not see).
    paths = [page.url.removeprefix(site.url) for page in pages]
    assert [page.byte_count for page in pages] == [
        wire_size(site, path) - (CONNECTION_CLOSE if path in closing else 0) for path in paths
    ], said


def test_the_feed_the_report_and_the_stats_dump_agree(make_site, tmp_path):
    site = make_site(pages_site(4, 30_000, random=True, gzip=True), options=WIRE)
    result = run_cli("-a", f"seed={site('/')}", "-a", "max_depth=1", "-a", "delay=0", "-a", "report=r.json",
                     "-o", "p.jsonl", "-s", "ROBOTSTXT_OBEY=false", "-s", "LOG_LEVEL=DEBUG", *allow_loopback(),
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    feed = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    # Scrapy's stats dump at the end of the log (shown at DEBUG): "'downloader/response_bytes': N,"
    (response_bytes,) = map(int, re.findall(r"'downloader/response_bytes': (\d+)", result.stderr))
    assert report["stopped"] is None and len(feed) == 5
    said = f"report {report['bytes']:,}, feed {sum(item['byte_count'] for item in feed):,}, stats {response_bytes:,}, server {sent(site):,}"
    assert report["bytes"] == sum(item["byte_count"] for item in feed) == response_bytes == sent(site), said


def test_the_page_after_the_cut_is_never_requested(make_site):
    # Chunked pages of 30 kB (no Content-Length: the walk learns their size as they arrive): two fit
    # in 75 kB beside the seed and robots.txt, the third is cut, the fourth never asked for.
    site = make_site(pages_site(6, 30_000, chunked=True), options=WIRE)
    report, pages, _ = run(site, max_bytes=75_000, max_depth=1, concurrency=1)
    said = summary(site, report, pages)
    assert site.paths() == ["/", "/p0", "/p1", "/p2"], said
    assert [page.url for page in pages] == [site("/"), site("/p0"), site("/p1")]
    assert report.stopped == "max-bytes" and [f["url"] for f in report.failures] == [site("/p2")]
    assert sent(site) <= allowed(site, 75_000, 1, len(pages), closing=True), said


def test_a_connection_reset_on_a_fresh_connection_is_one_request_and_one_failure(make_site):
    # The seed closes its connection (Connection: close): /reset goes on a fresh one, which the
    # server resets (RST) without answering. Nothing was lost on a kept-alive connection the
    # server had closed: the request is not sent again.
    site = make_site({
        "/": {"title": "Home", "links": ["/reset", "/a"], "headers": {"Connection": "close"}},
        "/reset": {"reset": True},
        "/a": {"title": "A"},
    })
    report, pages, _ = run(site, max_depth=1, settings={"ROBOTSTXT_OBEY": False})
    # (path, the how-manyth request on its connection): 1 is a fresh connection.
    asked = [(entry["path"], entry["on_connection"]) for entry in site.requests()]
    assert [n for path, n in asked if path == "/reset"] == [1], asked
    assert [f["url"] for f in report.failures] == [site("/reset")]
    assert [page.url for page in pages] == [site("/"), site("/a")]


def test_a_request_lost_on_a_reused_connection_is_sent_again_once(make_site):
    # The server answers one request a connection and closes it on the next, unanswered: /a is
    # lost on the seed's kept-alive connection and goes again, once, on a fresh one.
    site = make_site({"/": {"title": "Home", "links": ["/a"]}, "/a": {"title": "A"}},
                     options=("--requests-per-connection", "1"))
    report, pages, _ = run(site, max_depth=1, settings={"ROBOTSTXT_OBEY": False})
    asked = [(entry["path"], entry["on_connection"]) for entry in site.requests()]
    assert asked == [("/", 1), ("/a", 2), ("/a", 1)]
    assert [entry["dropped"] for entry in site.log() if "dropped" in entry] == ["/a"]
    assert report.failures == [] and [page.url for page in pages] == [site("/"), site("/a")]


def robots_site(crawl_delay: float, pages: int) -> dict[str, Any]:
    return {
        "/robots.txt": {"content_type": "text/plain", "body": f"User-agent: *\nCrawl-delay: {crawl_delay:g}\n"},
        "/": {"title": "Home", "links": [f"/p{i}" for i in range(1, pages)]},
        **{f"/p{i}": {"title": f"P{i}"} for i in range(1, pages)},
    }


def arrivals(site: Site) -> list[tuple[str, float]]:
    return [(entry["path"], entry["time"]) for entry in site.requests()]


def test_crawl_delay_does_not_hold_the_seed(make_site):
    # Crawl-delay is the pause between pages: the seed goes right after robots.txt, not an hour later.
    site = make_site(robots_site(3600, 3))
    started = time.monotonic()
    report: Report | None = None
    try:
        report, pages, _ = run(site, deadline=5, max_pages=1)
    except SeedError as error:  # the seed was never fetched
        failed = str(error)
    elapsed = time.monotonic() - started
    paths, times = [path for path, _ in arrivals(site)], [at for _, at in arrivals(site)]
    said = f"requests {paths} at {[round(at - times[0], 2) for at in times]}s, walk {elapsed:.1f}s"
    assert paths == ["/robots.txt", "/"], said
    assert times[1] - times[0] < 1, said
    assert report is not None, f"{failed}; {said}"
    assert report.stopped == "max-pages" and report.fetched == 1, said
    assert [page.url for page in pages] == [site("/")]


@pytest.mark.slow  # real seconds: a Crawl-delay of 2 s between three pages
def test_crawl_delay_paces_the_pages_and_the_delay_the_seed(make_site):
    site = make_site(robots_site(2, 3))
    report, pages, _ = run(site, delay=0.5, max_depth=1)
    assert report.fetched == 3
    (first, _), *_ = times = arrivals(site)
    assert first == "/robots.txt"
    gaps = [later - earlier for (_, earlier), (_, later) in pairwise(times)]
    # robots.txt -> seed: the walk's delay only; seed -> /p1 -> /p2: the Crawl-delay.
    assert 0.5 - SERVER_LAG <= gaps[0] < 2, gaps
    assert min(gaps[1:]) >= 2 - SERVER_LAG, gaps


EXTRA = 3_000  # bytes of robots.txt, or of the redirect's body: what tips the budget


@pytest.mark.parametrize("extra", ["robots.txt", "redirect", "both"])
def test_robots_txt_and_redirect_hops_count_in_max_bytes(make_site, extra):
    robots = extra in ("robots.txt", "both")
    spec: dict[str, Any] = {"/": {"title": "Home", "links": ["/r" if extra != "robots.txt" else "/a"]},
                            "/a": {"size": 2_000}}
    if robots:
        spec["/robots.txt"] = {"content_type": "text/plain", "body": "User-agent: *\nAllow: /\n" + "#" * EXTRA + "\n"}
    if extra != "robots.txt":
        spec["/r"] = {"status": 301, "headers": {"Location": "/a"}, "body": "moved " + "." * EXTRA}
    settings = {"ROBOTSTXT_OBEY": robots}
    # What each answer costs on the wire, from a walk with no budget of a site alike.
    measured = make_site(spec)
    run(measured, max_depth=1, settings=settings)
    extras = [wire_size(measured, path) for path in ("/robots.txt", "/r") if path in spec]
    seed, page = wire_size(measured, "/"), wire_size(measured, "/a")
    # Enough for robots.txt and the hop, the seed and half of /a: the two pages alone would fit.
    max_bytes = sum(extras) + seed + page // 2
    assert seed + page <= max_bytes
    site = make_site(spec, options=WIRE)
    report, pages, _ = run(site, max_depth=1, max_bytes=max_bytes, settings=settings)
    said = f"max_bytes {max_bytes:,}: {summary(site, report, pages)}; wire sizes: extras {extras}, seed {seed}, /a {page}"
    assert report.stopped == "max-bytes", said
    assert [page.url for page in pages] == [site("/")], said
    assert sum(extras) + seed <= report.bytes <= max_bytes, said
    assert sent(site) <= allowed(site, max_bytes, 1, len(pages)), said


def test_written_counts_what_the_server_wrote(make_site):
    # The helper's own check: a page's answer is its status line, headers and body.
    site = make_site({"/": {"title": "Home"}})
    run(site, max_depth=0, settings={"ROBOTSTXT_OBEY": False})
    (answer,) = written(site)
    assert answer.path == "/" and answer.head > len("HTTP/1.1 200 OK\r\n\r\n")
    body = next(entry["bytes_sent"] for entry in site.log() if entry.get("sent") == "/")
    assert answer.wire == answer.head + body
