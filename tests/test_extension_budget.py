"""One budget for the whole walk, enforced mid-download; the pace between requests."""

from __future__ import annotations

import time
from itertools import pairwise
from typing import Any

import pytest

from sitewalk import Page, SeedError, WalkConfig, walk
from sitewalk.budget import Budget
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
    report, pages = run(site("/"), max_bytes=100_000)
    seed_bytes = pages[0].byte_count
    assert report.stopped == "max-bytes"
    assert [f["url"] for f in report.failures] == [site("/big")]
    assert report.failures[0]["reason"].startswith("cut off at max_bytes (max_bytes=100000")
    assert report.bytes == seed_bytes and report.fetched == 1
    assert site.paths() == ["/", "/big"]
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
    report, pages = run(site("/"), max_bytes=100_000)
    assert report.stopped == "max-bytes"
    # Two 40 kB pages fit beside the seed; the third is cut off; the fourth never requested.
    assert site.paths() == ["/", "/p1", "/p2", "/p3"]
    assert report.bytes == sum(p.byte_count for p in pages) <= 100_000
    assert report.unvisited == [site("/p4")]


def request_gaps(site: Any) -> list[float]:
    times = [e["time"] for e in site.requests() if e["path"] != "/robots.txt"]
    return [b - a for a, b in pairwise(times)]


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


@pytest.mark.parametrize(
    ("limits", "spent", "rate", "queued", "expected"),
    [
        # Enough pages queued to reach max_pages: that many more at the walk's pace.
        ({"max_pages": 20}, (10, 1000), 2.0, 15, (5.0, "max-pages")),
        ({"max_pages": 20}, (10, 1000), 2.0, 10, (5.0, "max-pages")),
        # Too few queued: the walk may run out of pages first, so no estimate.
        ({"max_pages": 20}, (10, 1000), 2.0, 9, None),
        # The queued pages, at the pages' mean size so far, would pass max_bytes.
        ({"max_pages": 1000, "max_bytes": 100_000}, (10, 50_000), 2.0, 20, (5.0, "max-bytes")),
        ({"max_pages": 1000, "max_bytes": 100_000}, (10, 50_000), 2.0, 9, None),
        ({}, (0, 0), 0.0, 50, None),
    ],
)
def test_time_left_names_the_limit_that_will_end_the_walk(limits, spent, rate, queued, expected):
    budget = Budget(WalkConfig(seed="http://site.test/", **limits))
    budget.resume(spent[0], spent[1], 5.0)
    assert budget.time_left(rate, queued) == expected


def test_time_left_is_the_deadline_when_the_queue_outlasts_it():
    budget = Budget(WalkConfig(seed="http://site.test/", max_pages=1000, deadline=60))
    budget.resume(10, 1000, 5.0)
    seconds, reason = budget.time_left(2.0, 500)
    assert reason == "deadline" and 54 < seconds <= 55
    assert budget.time_left(2.0, 100) is None  # 50 s of pages: done before the deadline


def test_progress_line(caplog):
    budget = Budget(WalkConfig(seed="http://site.test/", max_pages=20, max_depth=2), queued=lambda: 30)
    budget.resume(10, 1_234_567, 5.0)
    with caplog.at_level("INFO", logger="sitewalk.budget"):
        budget.log_progress()
    (line,) = caplog.messages
    assert line.startswith("progress: pages 10/20, depth 0/2, 1.2 MB/20 MB, elapsed 5.0s/60s, 2.0 pages/s, 30 queued, about 5.0s left (max-pages)")
