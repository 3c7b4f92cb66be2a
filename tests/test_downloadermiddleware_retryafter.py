"""429 and 503: the whole walk pauses (Retry-After, else backing off from 1 s), then the page is asked
again; a burst from requests in flight is one pause. The rules on the walk's fake clock; over real
HTTP (real seconds: slow), that the site saw them."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.misc import build_from_crawler

from sitewalk import walk
from sitewalk.downloadermiddlewares import RetryAfterMiddleware
from sitewalk.state import Walk
from tests.clock import FakeClock
from tests.conftest import LOOPBACK, SERVER_LAG, walk_for

BUSY = {"status": 429, "body": "slow down"}


def site_with(page: dict, others: int = 3, sleep: float = 0) -> dict:
    return {
        "/": {"title": "Home", "links": ["/busy", *[f"/p{i}" for i in range(others)]]},
        "/busy": page,
        **{f"/p{i}": {"title": f"P{i}", "sleep": sleep} for i in range(others)},
    }


def starts(site, path: str) -> list[float]:
    return [entry["time"] for entry in site.requests() if entry["path"] == path]


def answers(statuses: list[tuple[int, dict[str, str]]], deadline: float = 60, in_flight: int = 1) -> tuple[list[float], list[str]]:
    """The start of each request after answers with ``statuses`` (and headers) to a page, on the
    walk's fake clock from 0; ``in_flight``: how many requests had started together before each answer."""
    clock = FakeClock(start=0.0)
    crawler = walk_for(delay=0, deadline=deadline, clock=clock,
                       settings={"SITEWALK_RETRY_TIMES": 3, "SITEWALK_RETRY_AFTER_MAX": 120})
    walk = Walk.of(crawler)
    walk.ledger.start_clock()
    middleware = build_from_crawler(RetryAfterMiddleware, crawler)
    gate = walk.gate
    outcomes, times = [], []

    async def scenario() -> None:
        retries = 0
        for status, headers in statuses:
            requests = []
            for _ in range(in_flight):
                # A page asked again carries how many times it was.
                meta: dict = {"sitewalk_depth": 1, "sitewalk_retries": retries}
                await gate.start(meta)
                requests.append(Request("http://site.test/busy", meta=meta))
            times.append(requests[0].meta["sitewalk_started"])
            for request in requests:
                answer = HtmlResponse(request.url, status=status, headers=headers, request=request)
                outcome = middleware.process_response(request, answer)
                outcomes.append("again" if isinstance(outcome, Request) else f"page {outcome.status}")
                retries = outcome.meta["sitewalk_retries"] if isinstance(outcome, Request) else 0
        after: dict = {"sitewalk_depth": 1}
        await gate.start(after)
        times.append(after["sitewalk_started"])

    asyncio.run(scenario())
    return times, outcomes


@pytest.mark.parametrize(
    ("statuses", "times", "outcomes"),
    [
        # Retry-After in seconds: nothing starts for that long.
        ([(429, {"Retry-After": "3"})], [0, 3], ["again"]),
        # Without it (or 0, or garbage): 1 s, doubled for each pause in a row.
        ([(503, {}), (503, {}), (503, {})], [0, 1, 3, 7], ["again"] * 3),
        ([(429, {"Retry-After": "0"}), (429, {"Retry-After": "soon"})], [0, 1, 3], ["again"] * 2),
        # Another status ends the row.
        ([(503, {}), (200, {}), (503, {})], [0, 1, 1, 2], ["again", "page 200", "again"]),
        # Asked at most SITEWALK_RETRY_TIMES (3) times more: then the answer is the page.
        ([(429, {"Retry-After": "1"})] * 4, [0, 1, 2, 3, 3], ["again"] * 3 + ["page 429"]),
        # A pause past the deadline is not waited for: the answer is the page.
        ([(429, {"Retry-After": "3600"})], [0, 0], ["page 429"]),
    ],
    ids=["retry-after", "backoff", "zero-or-garbage", "row-ends", "bounded", "past-deadline"],
)
def test_a_429_or_503_pauses_every_start_on_the_walks_clock(statuses, times, outcomes):
    assert answers(statuses) == (times, outcomes)


def test_a_burst_of_answers_to_requests_in_flight_together_is_one_pause():
    # Three requests started together, all answered 429: one pause of 1 s, not three.
    assert answers([(429, {"Retry-After": "1"})], in_flight=3) == ([0, 1], ["again"] * 3)


@pytest.mark.slow  # real seconds of pauses, as the site saw them (the rules: on a fake clock above)
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


@pytest.mark.slow  # real seconds of pauses, as the site saw them (the rules: on a fake clock above)
def test_without_retry_after_the_walk_backs_off_from_one_second(make_site):
    site = make_site(site_with({"title": "Busy", "before": [{"status": 503}, {"status": 503}]}, others=0))
    report = walk(site("/"), delay=0, settings=LOOPBACK)
    busy = starts(site, "/busy")
    assert len(busy) == 3 and report.fetched == 2
    assert busy[1] - busy[0] >= 0.95 and busy[2] - busy[1] >= 1.95


@pytest.mark.slow  # real seconds of pauses, as the site saw them (the rules: on a fake clock above)
@pytest.mark.parametrize("header", ["0", "soon", ""])
def test_a_retry_after_of_zero_or_garbage_counts_as_absent(make_site, header):
    site = make_site(site_with({"title": "Busy", "before": [{**BUSY, "headers": {"Retry-After": header}}]}, others=0))
    walk(site("/"), delay=0, settings=LOOPBACK)
    busy = starts(site, "/busy")
    assert len(busy) == 2 and busy[1] - busy[0] >= 0.95


@pytest.mark.slow  # real seconds of pauses, as the site saw them (the rules: on a fake clock above)
def test_the_page_is_asked_again_a_bounded_number_of_times_then_its_answer_is_the_page(make_site):
    site = make_site(site_with({**BUSY, "headers": {"Retry-After": "1"}}, others=0))
    pages = []
    report = walk(site("/"), delay=0, settings={**LOOPBACK, "SITEWALK_RETRY_TIMES": 2}, on_page=pages.append,
                  on_page_stops=False)
    assert len(starts(site, "/busy")) == 3
    assert [page.status for page in pages] == [200, 429]
    assert report.fetched == 2  # asked three times, one page


@pytest.mark.slow  # real seconds of pauses, as the site saw them (the rules: on a fake clock above)
def test_a_pause_past_the_deadline_is_not_waited_for(make_site):
    site = make_site(site_with({"title": "Busy", "before": [{**BUSY, "headers": {"Retry-After": "3600"}}]}, others=0))
    pages = []
    report = walk(site("/"), delay=0, deadline=10, settings=LOOPBACK, on_page=pages.append, on_page_stops=False)
    assert len(starts(site, "/busy")) == 1
    assert [page.status for page in pages] == [200, 429] and report.stopped is None


@pytest.mark.slow  # real seconds of pauses, as the site saw them (the rules: on a fake clock above)
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


@pytest.mark.slow  # real seconds of pauses, as the site saw them (the rules: on a fake clock above)
def test_the_delay_spaces_robots_txt_and_the_first_page(make_site):
    site = make_site({"/": {"title": "Home", "links": ["/a"]}, "/a": {"title": "A"}})
    walk(site("/"), delay=0.4, settings=LOOPBACK)
    times = [entry["time"] for entry in site.requests()]
    assert [entry["path"] for entry in site.requests()] == ["/robots.txt", "/", "/a"]
    assert min(b - a for a, b in zip(times, times[1:], strict=False)) >= 0.4 - SERVER_LAG
