"""Every stop reaches Scrapy: its close reason (finish_reason) is the report's ``stopped``; an
exception in ``on_page`` ends the walk and reaches the caller; no log line carries a page body."""

from __future__ import annotations

import json
from typing import Any

import pytest
from scrapy import signals

from sitewalk import Page, grep, walk
from tests.conftest import LOOPBACK, allow_loopback, run_cli

SITE = {
    "/": {"title": "Home", "links": ["/a", "/slow", "/big", "/b"], "body": "<p>needle</p>"},
    "/a": {"title": "A", "body": "<p>needle</p>"},
    "/slow": {"sleep": 4},
    "/big": {"size": 3_000_000, "content_type": "text/plain", "trickle": 0.0005},
    "/b": {"title": "B"},
}


class CloseReason:
    """An extension noting Scrapy's close reason, as its signal and its stats give it."""

    seen: list[tuple[str, Any]] = []

    def __init__(self, crawler: Any) -> None:
        self.stats = crawler.stats
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Any) -> CloseReason:
        return cls(crawler)

    def spider_closed(self, reason: str) -> None:
        CloseReason.seen.append((reason, self.stats))


SETTINGS = {**LOOPBACK, "EXTENSIONS": {"tests.test_walk_stops.CloseReason": 900}}


def stop_at(url: str):
    def on_page(page: Page) -> bool:
        return page.url != url

    return on_page


@pytest.mark.parametrize(
    ("links", "options", "stopped"),
    [
        (["/a", "/b"], {"max_depth": 0}, None),
        (["/a", "/b"], {"max_pages": 2}, "max-pages"),
        (["/slow", "/b"], {"deadline": 2}, "deadline"),
        (["/big", "/b"], {"max_bytes": 100_000}, "max-bytes"),
        (["/a", "/b"], {"on_page": "stop at /a"}, "callback"),
    ],
    ids=["finished", "max-pages", "deadline", "max-bytes", "callback"],
)
def test_scrapy_is_told_the_stop(make_site, links, options, stopped):
    site = make_site({**SITE, "/": {**SITE["/"], "links": links}})
    CloseReason.seen = []
    if options.pop("on_page", None):
        options["on_page"] = stop_at(site("/a"))
    report = walk(site("/"), delay=0, settings=SETTINGS, **options)
    assert report.stopped == stopped
    [(reason, stats)] = CloseReason.seen
    assert reason == stats.get_value("finish_reason") == (stopped or "finished")


def test_grep_reaching_max_matches_is_a_callback_stop(make_site):
    site = make_site(SITE)
    CloseReason.seen = []
    matches, report = grep(site("/"), "needle", max_matches=1, delay=0, settings=SETTINGS)
    assert len(matches) == 1 and report.stopped == "callback" and site.paths() == ["/"]
    [(reason, stats)] = CloseReason.seen
    assert reason == stats.get_value("finish_reason") == "callback"


def test_an_exception_in_on_page_ends_the_walk_and_reaches_the_caller(make_site, tmp_path):
    site = make_site(SITE)
    CloseReason.seen = []
    raised = KeyError("no such key")

    def on_page(page: Page) -> bool:
        raise raised

    with pytest.raises(KeyError) as caught:
        walk(site("/"), delay=0, on_page=on_page, report=str(tmp_path / "r.json"), settings=SETTINGS)
    assert caught.value is raised
    assert site.paths() == ["/"]  # nothing requested after it
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stopped"] == "error" and report["fetched"] == 1
    assert len(report["unvisited"]) == 4
    [(reason, stats)] = CloseReason.seen
    assert reason == stats.get_value("finish_reason") == "error"


BODY_MARK = "BODYMARK-" + "x" * 40


@pytest.mark.parametrize(
    ("mode", "fields"),
    [
        ([], {"byte_count", "canonical", "content_type", "depth", "final_url", "found_on", "noindex", "status", "title", "url"}),
        (["-a", "grep=needle", "-a", "context=0"], {"after", "before", "depth", "line", "text", "url"}),
        (["-a", "css=h1::text"], {"depth", "url", "values"}),
    ],
    ids=["index", "grep", "extract"],
)
def test_no_log_line_carries_a_page_body(make_site, tmp_path, mode, fields):
    site = make_site({
        "/": {"title": "Home", "links": ["/a"], "body": f"<p>needle</p><p>{BODY_MARK}</p>"},
        "/a": {"title": "A", "body": f"<p>{BODY_MARK}</p>"},
    })
    common = ["-a", f"seed={site('/')}", "-a", "delay=0", "-O", "out.jsonl", *allow_loopback(), *mode]
    default = run_cli(*common, cwd=tmp_path)
    assert default.returncode == 0, default.stderr
    assert " DEBUG: " not in default.stderr  # INFO by default
    assert "sitewalk: 2 pages" in default.stderr
    debug = run_cli(*common, "-s", "LOG_LEVEL=DEBUG", cwd=tmp_path)
    assert debug.returncode == 0, debug.stderr
    assert " DEBUG: " in debug.stderr
    assert BODY_MARK not in default.stderr and BODY_MARK not in debug.stderr
    # The feed holds what the mode promises, and the pages were consumed, not dropped.
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert lines and "Dropped:" not in debug.stderr
    assert all(set(line) == fields for line in lines)
