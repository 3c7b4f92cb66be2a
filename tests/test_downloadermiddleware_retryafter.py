"""429 and 503 over real HTTP: the whole walk pauses (Retry-After, else backing off from 1 s), then
the page is asked again; a burst from requests in flight is one pause."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from sitewalk import walk
from tests.conftest import LOOPBACK, SERVER_LAG

BUSY = {"status": 429, "body": "slow down"}


def site_with(page: dict, others: int = 3, sleep: float = 0) -> dict:
    return {
        "/": {"title": "Home", "links": ["/busy", *[f"/p{i}" for i in range(others)]]},
        "/busy": page,
        **{f"/p{i}": {"title": f"P{i}", "sleep": sleep} for i in range(others)},
    }


def starts(site, path: str) -> list[float]:
    return [entry["time"] for entry in site.requests() if entry["path"] == path]


@pytest.mark.parametrize("retry_after", ["1", "http-date"])
def test_retry_after_pauses_the_walk_then_the_page_is_asked_again(make_site, retry_after):
    if retry_after == "http-date":
        # Whole seconds: 3 to 4 s from now when the site answers.
        retry_after = format_datetime(datetime.now(UTC) + timedelta(seconds=4), usegmt=True)
    site = make_site(site_with({"title": "Busy", "before": [{**BUSY, "headers": {"Retry-After": retry_after}}]}))
    pages = []
    report = walk(site("/"), delay=0, settings=LOOPBACK, on_page=pages.append, on_page_stops=False)
    busy = starts(site, "/busy")
    assert len(busy) == 2
    # Nothing started during the pause: the next request to the site came a second or more later.
    later = sorted(entry["time"] for entry in site.requests() if entry["time"] > busy[0])
    assert later[0] - busy[0] >= 0.95
    statuses = {page.url.removeprefix(site.url): page.status for page in pages}
    assert statuses["/busy"] == 200 and report.fetched == 5 and report.failures == []


def test_without_retry_after_the_walk_backs_off_from_one_second(make_site):
    site = make_site(site_with({"title": "Busy", "before": [{"status": 503}, {"status": 503}]}, others=0))
    report = walk(site("/"), delay=0, settings=LOOPBACK)
    busy = starts(site, "/busy")
    assert len(busy) == 3 and report.fetched == 2
    assert busy[1] - busy[0] >= 0.95 and busy[2] - busy[1] >= 1.95


@pytest.mark.parametrize("header", ["0", "soon", ""])
def test_a_retry_after_of_zero_or_garbage_counts_as_absent(make_site, header):
    site = make_site(site_with({"title": "Busy", "before": [{**BUSY, "headers": {"Retry-After": header}}]}, others=0))
    walk(site("/"), delay=0, settings=LOOPBACK)
    busy = starts(site, "/busy")
    assert len(busy) == 2 and busy[1] - busy[0] >= 0.95


def test_the_page_is_asked_again_a_bounded_number_of_times_then_its_answer_is_the_page(make_site):
    site = make_site(site_with({**BUSY, "headers": {"Retry-After": "1"}}, others=0))
    pages = []
    report = walk(site("/"), delay=0, settings={**LOOPBACK, "SITEWALK_RETRY_TIMES": 2}, on_page=pages.append,
                  on_page_stops=False)
    assert len(starts(site, "/busy")) == 3
    assert [page.status for page in pages] == [200, 429]
    assert report.fetched == 2  # asked three times, one page


def test_a_pause_past_the_deadline_is_not_waited_for(make_site):
    site = make_site(site_with({"title": "Busy", "before": [{**BUSY, "headers": {"Retry-After": "3600"}}]}, others=0))
    pages = []
    report = walk(site("/"), delay=0, deadline=10, settings=LOOPBACK, on_page=pages.append, on_page_stops=False)
    assert len(starts(site, "/busy")) == 1
    assert [page.status for page in pages] == [200, 429] and report.stopped is None


def test_a_burst_of_429s_from_requests_in_flight_is_one_pause(make_site):
    pages = {f"/p{i}": {"title": f"P{i}", "sleep": 0.5, "before": [{**BUSY, "headers": {"Retry-After": "1"},
                                                                   "sleep": 0.5}]}
             for i in range(4)}
    site = make_site({"/": {"title": "Home", "links": list(pages)}, **pages})
    report = walk(site("/"), delay=0, concurrency=4, settings=LOOPBACK)
    assert report.fetched == 5
    first = {path: starts(site, path)[0] for path in pages}
    again = {path: starts(site, path)[1] for path in pages}
    # The requests in flight together when the first 429 came (it comes 0.5 s after the first start)...
    burst = [path for path in pages if first[path] < min(first.values()) + 0.45]
    assert len(burst) >= 2
    # ...are all asked again after one pause of a second, not one pause each.
    assert all(again[path] - min(first.values()) >= 1.45 for path in burst)
    assert max(again[path] for path in burst) - min(again[path] for path in burst) < 0.5


def test_the_delay_spaces_robots_txt_and_the_first_page(make_site):
    site = make_site({"/": {"title": "Home", "links": ["/a"]}, "/a": {"title": "A"}})
    walk(site("/"), delay=0.4, settings=LOOPBACK)
    times = [entry["time"] for entry in site.requests()]
    assert [entry["path"] for entry in site.requests()] == ["/robots.txt", "/", "/a"]
    assert min(b - a for a, b in zip(times, times[1:], strict=False)) >= 0.4 - SERVER_LAG
