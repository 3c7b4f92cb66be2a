"""SameOriginMiddleware: redirect hops off the seed's origin are refused; the seed's own hops pass."""

from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.utils.misc import build_from_crawler

from sitewalk.downloadermiddlewares import SameOriginMiddleware
from sitewalk.failures import OffOrigin
from sitewalk.kinds import KIND, Kind
from sitewalk.state import Walk
from tests.conftest import walk_for


@pytest.mark.parametrize(
    ("url", "meta", "passes"),
    [
        ("http://site.test/x", {}, True),
        ("http://site.test:80/x", {}, True),
        ("https://site.test/x", {}, False),
        ("http://www.site.test/x", {}, False),
        ("http://elsewhere.test/", {"sitewalk_seed": True}, True),  # the seed may redirect anywhere
        ("http://elsewhere.test/robots.txt", {KIND: Kind.ROBOTS}, True),
        ("http://elsewhere.test/app.js", {KIND: Kind.BROWSER}, True),
        ("http://elsewhere.test/link", {KIND: Kind.CHECK_OTHER}, True),
        ("http://elsewhere.test/sitemap.xml", {KIND: Kind.SITEMAP}, False),
    ],
)
def test_requests_off_the_origin_are_refused(url, meta, passes):
    crawler = walk_for()
    Walk.of(crawler).frontier.set_origin("http://site.test/")
    middleware = build_from_crawler(SameOriginMiddleware, crawler)
    request = Request(url, meta=meta)
    if passes:
        assert middleware.process_request(request) is None
    else:
        with pytest.raises(OffOrigin, match=f"redirected off-origin to {url}"):
            middleware.process_request(request)


def test_before_the_seed_arrived_only_the_seed_passes():
    middleware = build_from_crawler(SameOriginMiddleware, walk_for())
    assert middleware.process_request(Request("http://elsewhere.test/", meta={"sitewalk_seed": True})) is None
    with pytest.raises(OffOrigin):
        middleware.process_request(Request("http://elsewhere.test/"))
