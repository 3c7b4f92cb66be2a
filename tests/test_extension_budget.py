"""One budget for the whole walk, enforced mid-download; the pace between requests."""

from __future__ import annotations

import time
from itertools import pairwise
from typing import Any

import pytest

from sitewalk import Page, SeedError, walk
from tests.conftest import LOOPBACK, SERVER_LAG


def run(seed: str, **options: Any) -> tuple[Any, list[Page]]:
    pages: list[Page] = []
    options.setdefault("delay", 0)
    report = walk(seed, on_page=pages.append, settings={**LOOPBACK, **options.pop("settings", {})}, **options)
    return report, pages


def sent_bytes(site: Any, path: str) -> int:
    return sum(entry["bytes_sent"] for entry in site.log() if entry.get("sent") == path)


def test_deadline_cuts_a_slow_page_off(make_site):
    site = make_site({"/": {"links": ["/slow", "/after"]}, "/slow": {"sleep": 6}, "/after": {}})
    started = time.monotonic()
    report, pages = run(site("/"), deadline=2)
    elapsed = time.monotonic() - started
    # The server would answer after 6 s; the walk ends at its 2 s deadline (generous bound: no
    # timing precision is claimed, only that the slow page did not hold the walk).
    assert elapsed < 5
    assert report.stopped == "deadline"
    assert report.failures == [{
        "url": site("/slow"), "kind": "budget", "reason": "cut off at the deadline (deadline=2s)", "found_on": site("/"),
    }]
    assert report.unvisited == [site("/after")]
    assert site.paths() == ["/", "/slow"]
    assert [p.url for p in pages] == [site("/")]


def test_deadline_on_the_seed_is_a_seed_error(make_site):
    site = make_site({"/": {"sleep": 4}})
    with pytest.raises(SeedError, match="cut off at the deadline"):
        run(site("/"), deadline=1)


@pytest.mark.parametrize(
    "page",
    [
        {"size": 3_000_000, "content_type": "text/plain", "trickle": 0.0005},  # Content-Length known
        {"size": 3_000_000, "content_type": "text/plain", "chunked": True, "trickle": 0.0005},  # no length
    ],
    ids=["content-length", "no-content-length"],
)
def test_max_bytes_cuts_a_page_off_at_the_limit(make_site, page):
    site = make_site({"/": {"links": ["/big", "/after"]}, "/big": page, "/after": {}})
    report, pages = run(site("/"), max_bytes=100_000, settings={"ROBOTSTXT_OBEY": False})
    seed_bytes = pages[0].byte_count
    assert report.stopped == "max-bytes"
    assert [f["url"] for f in report.failures] == [site("/big")]
    assert report.failures[0]["reason"].startswith("cut off at max_bytes (max_bytes=100000")
    assert report.fetched == 1
    assert site.paths() == ["/", "/big"]
    if "chunked" in page:
        # Charged as it arrived, up to the last byte of the budget.
        assert report.bytes == 100_000
    else:
        # Its Content-Length did not fit: cut at its headers, before its body.
        assert seed_bytes < report.bytes < seed_bytes + 500
    # What the server managed to send is the budget and what it wrote while the walk closed the
    # connection (it trickles 2 MB/s: 0.2 s of a busy machine is 400 kB), not the 3 MB page.
    assert sent_bytes(site, "/big") <= 100_000 - seed_bytes + 400_000


def test_max_bytes_counts_decompressed_size(make_site, caplog):
    site = make_site({
        "/": {"links": ["/bomb", "/after"]},
        "/bomb": {"size": 20_000_000, "gzip": True, "content_type": "text/plain"},
        "/after": {},
    })
    report, pages = run(site("/"), max_bytes=1_000_000)
    assert report.stopped == "max-bytes"
    assert [f["url"] for f in report.failures] == [site("/bomb")]
    assert report.failures[0]["reason"].startswith("cut off at max_bytes")
    assert [p.url for p in pages] == [site("/")]
    assert site.paths() == ["/", "/bomb"]
    # The budget's cut is the walk's stop, said in its words: not Scrapy's warning that the body
    # exceeded DOWNLOAD_MAXSIZE while it was decompressed.
    assert not [r.getMessage() for r in caplog.records if "decompress" in r.getMessage()]


def test_max_bytes_is_shared_by_all_pages(make_site):
    site = make_site({
        "/": {"links": ["/p1", "/p2", "/p3", "/p4"]},
        **{f"/p{i}": {"size": 40_000, "content_type": "text/plain"} for i in range(1, 5)},
    })
    report, pages = run(site("/"), max_bytes=100_000, settings={"ROBOTSTXT_OBEY": False})
    assert report.stopped == "max-bytes"
    # Two 40 kB pages fit beside the seed; the third is cut off at its headers (its Content-Length
    # does not fit); the fourth never requested.
    assert site.paths() == ["/", "/p1", "/p2", "/p3"]
    assert sum(p.byte_count for p in pages) < report.bytes < sum(p.byte_count for p in pages) + 500
    assert report.bytes <= 100_000
    assert report.unvisited == [site("/p4")]


def request_gaps(site: Any) -> list[float]:
    times = [e["time"] for e in site.requests() if e["path"] != "/robots.txt"]
    return [b - a for a, b in pairwise(times)]


@pytest.mark.slow  # real seconds between real requests (the gate's pacing is unit-tested on a fake clock: tests/test_gate.py)
def test_delay_between_request_starts(make_site):
    site = make_site({"/": {"links": ["/a", "/b", "/c"]}, "/a": {}, "/b": {}, "/c": {}})
    run(site("/"), delay=0.3)
    gaps = request_gaps(site)
    assert len(gaps) == 3
    # The server's clock, not sitewalk's: when its thread for the request ran.
    assert min(gaps) >= 0.3 - SERVER_LAG


@pytest.mark.parametrize(
    ("delay", "crawl_delay", "expected_gap"),
    [(0.1, 0.5, 0.5), (0.4, 0.1, 0.4)],
    ids=["longer-robots-delay-wins", "shorter-robots-delay-ignored"],
)
@pytest.mark.slow  # real seconds between real requests (the gate's pacing is unit-tested on a fake clock: tests/test_gate.py)
def test_crawl_delay_can_only_slow_the_walk(make_site, delay, crawl_delay, expected_gap):
    site = make_site({
        "/robots.txt": {"content_type": "text/plain", "body": f"User-agent: sitewalk\nCrawl-delay: {crawl_delay}\n"},
        "/": {"links": ["/a", "/b"]}, "/a": {}, "/b": {},
    })
    run(site("/"), delay=delay)
    gaps = request_gaps(site)
    assert len(gaps) == 2
    # As the server saw them: its lag under load can take a few ms off a gap.
    assert min(gaps) >= expected_gap - SERVER_LAG
    if crawl_delay < delay:
        return
    # The robots delay really is applied, not just the walk's own.
    assert min(gaps) > delay + 0.2
