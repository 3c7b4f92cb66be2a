"""WalkDupeFilter: requests the frontier made pass; redirect targets are checked and recorded."""

from __future__ import annotations

from scrapy import Request
from scrapy.utils.misc import build_from_crawler

from sitewalk.dupefilters import WalkDupeFilter
from sitewalk.state import Walk
from tests.conftest import walk_for


def test_frontier_requests_pass_and_redirect_targets_are_recorded():
    crawler = walk_for()
    frontier = Walk.of(crawler).frontier
    frontier.set_origin("http://site.test/")
    seen = build_from_crawler(WalkDupeFilter, crawler)
    frontier.admit(["http://site.test/a"], 1, "http://site.test/")
    # A request the frontier made (its URL was recorded when queued) is not a duplicate.
    assert seen.request_seen(Request("http://site.test/a")) is False
    hop = Request("http://SITE.test:80/b#f", meta={"redirect_urls": ["http://site.test/old"]})
    assert seen.request_seen(hop) is False  # a new target, recorded in normalised form
    again = Request("http://site.test/b", meta={"redirect_urls": ["http://site.test/other"]})
    assert seen.request_seen(again) is True
    to_known = Request("http://site.test/a", meta={"redirect_urls": ["http://site.test/x"]})
    assert seen.request_seen(to_known) is True
    assert frontier.admit(["http://site.test/b"], 1, "http://site.test/") == 0 and frontier.unvisited() == [
        "http://site.test/a"
    ]
