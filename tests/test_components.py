"""Unit tests of the walk's small components, built the Scrapy way (get_crawler)."""

from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.utils.test import get_crawler

from sitewalk.downloadermiddlewares import SameOriginMiddleware
from sitewalk.dupefilters import WalkDupeFilter
from sitewalk.failures import OffOrigin
from sitewalk.spiders.sitewalk import SitewalkSpider


def crawler_for(seed: str = "http://site.test/"):
    crawler = get_crawler(SitewalkSpider, {})
    crawler.spider = crawler._create_spider(seed=seed)
    return crawler


def test_dupefilter_records_urls_without_fragments():
    crawler = crawler_for()
    seen = WalkDupeFilter.from_crawler(crawler)
    assert crawler.spider.dupefilter is seen
    assert seen.add("http://site.test/a#x") is True
    assert seen.add("http://site.test/a") is False
    assert "http://site.test/a#y" in seen and len(seen) == 1


def test_dupefilter_passes_frontier_requests_and_checks_redirect_targets():
    seen = WalkDupeFilter.from_crawler(crawler_for())
    seen.add("http://site.test/a")
    # A request the frontier made (its URL was recorded when queued) is not a duplicate.
    assert seen.request_seen(Request("http://site.test/a")) is False
    hop = Request("http://SITE.test:80/b", meta={"redirect_urls": ["http://site.test/old"]})
    assert seen.request_seen(hop) is False  # new target, recorded in normalised form
    assert "http://site.test/b" in seen
    again = Request("http://site.test/b", meta={"redirect_urls": ["http://site.test/other"]})
    assert seen.request_seen(again) is True


@pytest.mark.parametrize(
    ("final_url", "origin", "same", "other"),
    [
        ("http://site.test/", "http://site.test", "http://site.test/x", "https://site.test/x"),
        ("http://site.test:80/", "http://site.test", "http://site.test/x", "http://site.test:8080/x"),
        ("https://Site.Test:443/a", "https://site.test", "https://site.test/x", "https://www.site.test/x"),
        ("http://[::1]:8000/", "http://[::1]:8000", "http://[::1]:8000/x", "http://127.0.0.1:8000/x"),
    ],
)
def test_same_origin_from_the_seeds_final_url(final_url, origin, same, other):
    middleware = SameOriginMiddleware.from_crawler(crawler_for())
    middleware.set_origin(final_url)
    assert middleware.origin == origin
    assert same.startswith(middleware.prefix) and not other.startswith(middleware.prefix)
    middleware.process_request(Request(same))
    with pytest.raises(OffOrigin, match="redirected off-origin to"):
        middleware.process_request(Request(other))


def test_seed_hops_may_leave_the_origin():
    middleware = SameOriginMiddleware.from_crawler(crawler_for())
    middleware.process_request(Request("http://elsewhere.test/", meta={"sitewalk_seed": True}))
    with pytest.raises(OffOrigin):
        middleware.process_request(Request("http://elsewhere.test/"))
