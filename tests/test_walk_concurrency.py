"""Several requests in flight, one breadth-first walk: over real HTTP, against a server whose pages
answer after shuffled delays and which counts the requests it answers at once."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sitewalk import grep, walk
from sitewalk.gate import AHEAD
from tests.conftest import LOOPBACK, SERVER_LAG, allow_loopback, run_cli, wait_for_pages

SECTIONS, LEAVES = 6, 5


def shuffled_site(seed: int = 7, slowest: float = 0.12, body: str = "") -> dict[str, Any]:
    """A site of 1 + 6 + 30 pages whose answers take between 0 and ``slowest`` seconds, shuffled."""
    rng = random.Random(seed)
    site: dict[str, Any] = {"/": {"title": "Home", "links": [f"/s{i}" for i in range(SECTIONS)], "body": body}}
    for i in range(SECTIONS):
        leaves = [f"/s{i}/p{j}" for j in range(LEAVES)]
        # Each section also links back home and to its neighbour: known URLs are not fetched twice.
        site[f"/s{i}"] = {"title": f"S{i}", "links": [*leaves, "/", f"/s{(i + 1) % SECTIONS}"], "body": body,
                          "sleep": rng.uniform(0, slowest)}
        for leaf in leaves:
            site[leaf] = {"title": leaf, "body": f"<p>needle {leaf}</p>{body}", "sleep": rng.uniform(0, slowest)}
    return site


def pages_of(feed: Path) -> list[tuple[str, int, str | None, int]]:
    return [(item["url"], item["depth"], item["found_on"], item["byte_count"])
            for item in map(json.loads, feed.read_text().splitlines())]


def cli_walk(site: Any, workdir: Path, concurrency: int, *arguments: str) -> tuple[list[Any], dict[str, Any]]:
    workdir.mkdir(exist_ok=True)
    result = run_cli("-a", f"seed={site('/')}", "-a", "max_depth=2", "-a", "max_pages=100", "-a", "delay=0",
                     "-a", f"concurrency={concurrency}", "-a", "report=r.json", "-o", "p.jsonl", *allow_loopback(),
                     *arguments, cwd=workdir)
    assert result.returncode == 0, result.stderr
    return pages_of(workdir / "p.jsonl"), json.loads((workdir / "r.json").read_text())


def page_requests(site: Any) -> list[dict[str, Any]]:
    return [entry for entry in site.requests() if entry["path"] != "/robots.txt"]


def test_the_same_walk_as_one_request_at_a_time_with_requests_overlapping(make_site, tmp_path):
    one_site, many_site = make_site(shuffled_site()), make_site(shuffled_site())
    one, one_report = cli_walk(one_site, tmp_path / "one", 1)
    many, many_report = cli_walk(many_site, tmp_path / "many", 4)
    origin = lambda pages, site: [(u.replace(site.url, ""), d, f and f.replace(site.url, ""), b) for u, d, f, b in pages]  # noqa: E731
    assert origin(many, many_site) == origin(one, one_site)
    assert len(one) == 1 + SECTIONS + SECTIONS * LEAVES
    for report in (one_report, many_report):
        report.pop("seed"), report.pop("origin"), report.pop("elapsed_s")
    assert many_report == one_report
    # Each page once, and the server really answered several at once (never more than asked).
    assert max(Counter(e["path"] for e in page_requests(many_site)).values()) == 1
    answering = [entry["answering"] for entry in many_site.requests()]
    assert 2 <= max(answering) <= 4
    assert max(entry["answering"] for entry in one_site.requests()) == 1


@pytest.mark.parametrize("seed", [1, 2])
def test_pages_arrive_in_any_order_and_the_feed_keeps_the_walks(make_site, tmp_path, seed):
    # Leaves that answer slowest first: responses arrive nearly in reverse.
    site = shuffled_site(seed)
    for i in range(SECTIONS):
        for j in range(LEAVES):
            site[f"/s{i}/p{j}"]["sleep"] = 0.02 * (LEAVES - j) + random.Random(seed * 100 + i).uniform(0, 0.02)
    served = make_site(site)
    pages, _ = cli_walk(served, tmp_path, 8)
    expected = ["/", *[f"/s{i}" for i in range(SECTIONS)], *[f"/s{i}/p{j}" for i in range(SECTIONS) for j in range(LEAVES)]]
    assert [url for url, _, _, _ in pages] == [served(path) for path in expected]
    assert [depth for _, depth, _, _ in pages] == sorted(depth for _, depth, _, _ in pages)


@pytest.mark.parametrize("max_pages", [1, 5, 9])
def test_max_pages_is_exact_with_requests_in_flight(make_site, max_pages):
    site = make_site(shuffled_site())
    report = walk(site("/"), max_depth=2, max_pages=max_pages, delay=0, concurrency=8, settings=LOOPBACK)
    assert len(page_requests(site)) == max_pages == report.fetched
    assert report.stopped == "max-pages"
    assert report.unvisited and not {url.replace(site.url, "") for url in report.unvisited} & set(site.paths())


def test_max_bytes_bounds_the_walk_and_cuts_no_later_than_one_request_at_a_time(make_site, tmp_path):
    body = "<p>" + "x" * 3000 + "</p>"
    one_site, many_site = make_site(shuffled_site(body=body)), make_site(shuffled_site(body=body))
    one, one_report = cli_walk(one_site, tmp_path / "one", 1, "-a", "max_bytes=40000")
    many, many_report = cli_walk(many_site, tmp_path / "many", 6, "-a", "max_bytes=40000")
    # The bytes of pages downloaded ahead of their turn count as they arrive: with 6 in flight
    # the cut may come up to 5 pages sooner than one at a time, never later, and the pages before
    # it are the same pages in the same order.
    assert [(d, b) for _, d, _, b in many] == [(d, b) for _, d, _, b in one][:len(many)]
    assert len(one) - 5 <= len(many) <= len(one)
    assert many_report["stopped"] == one_report["stopped"] == "max-bytes"
    # The walk's breadth-first order, as one request at a time met it: fetched, cut, unvisited.
    order = [u.replace(one_site.url, "") for u in
             [u for u, _, _, _ in one] + [f["url"] for f in one_report["failures"]] + one_report["unvisited"]]
    for pages, report, site in ((one, one_report, one_site), (many, many_report, many_site)):
        assert sum(b for _, _, _, b in pages) < report["bytes"] <= 40000
        # The page cut is the next in the walk's order after the last one fetched.
        assert [(f["kind"], f["url"].replace(site.url, "")) for f in report["failures"]] == [("budget", order[len(pages)])]


@pytest.mark.parametrize("max_matches", [1, 4, 7])
def test_grep_stops_at_exactly_the_first_matches(make_site, max_matches):
    one_site, many_site = make_site(shuffled_site()), make_site(shuffled_site())
    expected, _ = grep(one_site("/"), "needle", max_depth=2, max_matches=max_matches, delay=0, context=0,
                       settings=LOOPBACK)
    matches, report = grep(many_site("/"), "needle", max_depth=2, max_matches=max_matches, delay=0, context=0,
                           concurrency=6, settings=LOOPBACK)
    assert [m.text for m in matches] == [m.text for m in expected]
    assert len(matches) == max_matches and report.stopped == "callback"
    # The walk's order is the one-at-a-time walk's (with requests overlapping, they reach the
    # server in any order): the pages after the one that completed the matches were not
    # consumed, and those of them that were requested are unvisited.
    order = [entry["path"] for entry in page_requests(one_site)]
    last = order.index(matches[-1].url.removeprefix(many_site.url))
    assert report.fetched == last + 1
    requested = {many_site(entry["path"]) for entry in page_requests(many_site)}
    assert requested - {many_site(path) for path in order[:last + 1]} <= set(report.unvisited)


def test_an_on_page_stop_hands_no_later_page_to_the_consumer(make_site):
    site = make_site(shuffled_site())
    seen: list[str] = []
    report = walk(site("/"), max_depth=2, max_pages=100, delay=0, concurrency=8, settings=LOOPBACK,
                  on_page=lambda page: seen.append(page.url) or len(seen) < 10)
    assert len(seen) == 10 and report.stopped == "callback"
    # The first ten pages of the walk's order (requests reach the server in any order)...
    expected = ["/", *[f"/s{i}" for i in range(SECTIONS)], "/s0/p0", "/s0/p1", "/s0/p2"]
    assert seen == [site(path) for path in expected]
    # ...and what was requested besides them is unvisited.
    requested = {site(entry["path"]) for entry in page_requests(site)}
    assert set(seen) <= requested and requested - set(seen) <= set(report.unvisited)
    assert report.fetched == 10


@pytest.mark.slow  # real seconds between real requests (the gate's pacing is unit-tested on a fake clock: tests/test_gate.py)
def test_the_delay_spaces_the_starts_of_requests_in_flight(make_site):
    site = make_site(shuffled_site(slowest=0.5))
    walk(site("/"), max_depth=2, max_pages=6, delay=0.2, concurrency=8, settings=LOOPBACK)
    times = [entry["time"] for entry in site.requests()]
    assert len(times) == 7  # robots.txt and six pages
    gaps = [b - a for a, b in zip(times[1:], times[2:], strict=False)]
    assert min(gaps) >= 0.2 - SERVER_LAG, gaps


def test_the_deadline_cuts_every_download_in_flight(make_site, tmp_path):
    site = {"/": {"title": "Home", "links": [f"/slow{i}" for i in range(6)]},
            **{f"/slow{i}": {"title": "slow", "sleep": 30} for i in range(6)}}
    served = make_site(site)
    workdir = tmp_path / "w"
    pages, report = cli_walk(served, workdir, 4, "-a", "deadline=1.5")
    assert report["stopped"] == "deadline"
    assert report["elapsed_s"] < 3  # the report's clock: cut at the deadline, not after the pages' 30 s
    assert [url for url, _, _, _ in pages] == [served("/")]
    assert len(page_requests(served)) == 1 + 4  # four in flight, none after the deadline
    assert report["fetched"] == 1
    # Cut off at the deadline (a failure of kind budget, as one request at a time), in request order;
    # the rest unvisited.
    assert [(f["url"], f["kind"]) for f in report["failures"]] == [(served(f"/slow{i}"), "budget") for i in range(4)]
    assert report["unvisited"] == [served(f"/slow{i}") for i in range(4, 6)]


@pytest.mark.slow  # a walk killed with SIGKILL, then resumed
def test_kill_9_with_requests_in_flight_then_resume(make_site, tmp_path):
    site = make_site(shuffled_site(slowest=0.3))
    whole_site = make_site(shuffled_site(slowest=0))
    whole, _ = cli_walk(whole_site, tmp_path / "whole", 1)
    arguments = ["-a", f"seed={site('/')}", "-a", "max_depth=2", "-a", "max_pages=100", "-a", "delay=0",
                 "-a", "concurrency=4", "-o", "p.jsonl", "-s", "JOBDIR=job", *allow_loopback()]
    process = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", "sitewalk", *arguments], cwd=tmp_path,
        env={**os.environ, "SCRAPY_SETTINGS_MODULE": "sitewalk.settings"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_pages(site, 15, process)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    result = run_cli(*arguments, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # The resumed feed is the whole walk's: same pages, same order, none twice.
    feed = pages_of(tmp_path / "p.jsonl")
    strip = lambda pages, origin: [(u.replace(origin, ""), d, b) for u, d, _, b in pages]  # noqa: E731
    assert strip(feed, site.url) == strip(whole, whole_site.url)
    # At most the requests in flight and the pages in hand (not yet consumed) are asked again.
    asked = Counter(entry["path"] for entry in page_requests(site))
    assert set(asked) == {url.replace(site.url, "") for url, _, _, _ in feed}
    assert max(asked.values()) <= 2
    assert sum(n > 1 for n in asked.values()) <= 4 + AHEAD
