"""The walk's rules, end to end over real HTTP, checked against the server's request log."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sitewalk import Page, SeedError, walk
from sitewalk.gate import AHEAD
from tests.conftest import LOOPBACK


def run(seed: str, **options: Any) -> tuple[Any, list[Page]]:
    pages: list[Page] = []
    options.setdefault("delay", 0)
    report = walk(seed, on_page=pages.append, settings={**LOOPBACK, **options.pop("settings", {})}, **options)
    return report, pages


TREE = {
    "/": {"title": "Home", "links": ["/a", "/b", "/c"]},
    "/a": {"title": "A", "links": ["/a1", "/a2", "/b"]},
    "/b": {"title": "B", "links": ["/b1", "/"]},
    "/c": {"title": "C", "links": ["/c1"]},
    "/a1": {"title": "A1", "links": ["/deep"]},
    "/a2": {"title": "A2"},
    "/b1": {"title": "B1"},
    "/c1": {"title": "C1"},
    "/deep": {"title": "Deep"},
}


def test_breadth_first_order_and_depth_limit(make_site):
    site = make_site(TREE)
    report, pages = run(site("/"), max_depth=2)
    expected = ["/", "/a", "/b", "/c", "/a1", "/a2", "/b1", "/c1"]
    assert site.paths() == expected
    assert [p.url for p in pages] == [site(path) for path in expected]
    assert [p.depth for p in pages] == [0, 1, 1, 1, 2, 2, 2, 2]
    assert pages[4].found_on == site("/a")
    assert pages[0].found_on is None
    assert report.fetched == 8 and report.stopped is None and report.unvisited == []


CHAIN = {"/": {"links": ["/1", "/x"]}, "/1": {"links": ["/2"]}, "/2": {"links": ["/3"]}, "/3": {}, "/x": {}}


@pytest.mark.parametrize(
    ("spec", "max_depth", "expected"),
    [
        (TREE, 2, ["/", "/a", "/b", "/c", "/a1", "/a2", "/b1", "/c1"]),
        # The frontier runs empty while the latest page is still being read: the walk waits for its links.
        (CHAIN, 5, ["/", "/1", "/x", "/2", "/3"]),
    ],
)
def test_breadth_first_order_when_pages_download_while_others_are_consumed(make_site, spec, max_depth, expected):
    # Without an on_page callback no consumer can stop the walk, so the next page downloads while
    # the previous one is parsed and consumed: the order must not change.
    site = make_site(spec)
    report = walk(site("/"), max_depth=max_depth, delay=0, settings=LOOPBACK)
    assert site.paths() == expected
    assert report.fetched == len(expected) and report.stopped is None and report.failures == []


class SlowConsumer:
    """An item pipeline taking 0.1 s per page (pages download in a few ms from the local site);
    notes how many pages the site had served by then."""

    site: Any = None
    served: list[int] = []

    async def process_item(self, item: Any) -> Any:
        await asyncio.sleep(0.1)
        SlowConsumer.served.append(len(SlowConsumer.site.paths()))
        return item


def test_a_slow_consumer_keeps_the_look_ahead_bounded(make_site):
    pages = [f"/p{n}" for n in range(AHEAD + 6)]
    site = make_site({"/": {"links": pages}, **{path: {} for path in pages}})
    SlowConsumer.site, SlowConsumer.served = site, []
    settings = {**LOOPBACK, "ITEM_PIPELINES": {"tests.test_walk.SlowConsumer": 900}}
    report = walk(site("/"), delay=0, settings=settings)
    assert site.paths() == ["/", *pages] and report.fetched == len(pages) + 1
    # While page n is consumed, the next AHEAD pages may have been requested, never more; and
    # they were: the downloads overlapped the slow consumer.
    ahead = [served - consumed for consumed, served in enumerate(SlowConsumer.served, start=1)]
    assert max(ahead) == AHEAD, ahead


def test_max_depth_zero_fetches_the_seed_only(make_site):
    site = make_site(TREE)
    report, _ = run(site("/"), max_depth=0)
    assert site.paths() == ["/"]
    assert report.fetched == 1 and report.stopped is None


@pytest.mark.parametrize("max_pages", [1, 3, 5])
def test_max_pages_counts_the_seed_and_is_exact(make_site, max_pages):
    site = make_site(TREE)
    report, pages = run(site("/"), max_depth=5, max_pages=max_pages)
    assert len(site.paths()) == max_pages
    assert report.fetched == len(pages) == max_pages
    assert report.stopped == "max-pages"
    # What the stop left: known links within max_depth, never requested.
    assert report.unvisited
    assert not {u.removeprefix(site.url) for u in report.unvisited} & set(site.paths())


def test_a_limit_that_leaves_nothing_unfetched_is_not_a_stop(make_site):
    site = make_site({"/": {"links": ["/a"]}, "/a": {}})
    report, _ = run(site("/"), max_pages=2)
    assert site.paths() == ["/", "/a"]
    assert report.stopped is None and report.unvisited == []


def test_same_origin_only(make_site):
    other = make_site({"/": {"title": "other"}})
    site = make_site({
        "/": {"links": [
            "/in",
            other("/x"),  # another port: another origin
            "http://localhost:{port}/via-name",  # same server, another host name
            "https://127.0.0.1:1/secure",  # another scheme
            "ftp://127.0.0.1/file", "mailto:a@b.c", "javascript:alert(1)", "data:text/html,hi",
        ]},
        "/in": {},
    })
    report, _ = run(site("/"), max_depth=3)
    assert site.paths() == ["/", "/in"]
    assert all(entry["headers"]["Host"].startswith("127.0.0.1:") for entry in site.requests())
    assert other.requests() == []
    assert report.failures == [] and report.origin == site.url


def test_seed_redirect_sets_the_origin(make_site):
    target = make_site({"/start": {"links": ["/next", "/"]}, "/next": {}, "/": {}})
    seed_site = make_site({"/": {"status": 302, "headers": {"Location": target("/start")}}, "/next": {}})
    report, pages = run(seed_site("/"), max_depth=1)
    assert seed_site.paths() == ["/"]
    assert target.paths() == ["/start", "/next", "/"]
    assert report.origin == target.url
    assert pages[0].url == seed_site("/") and pages[0].final_url == target("/start")


def test_off_origin_redirect_is_a_failure_and_not_followed(make_site):
    elsewhere = make_site({"/landing": {}})
    site = make_site({
        "/": {"links": ["/away", "/ok"]},
        "/away": {"status": 301, "headers": {"Location": elsewhere("/landing")}},
        "/ok": {},
    })
    report, _ = run(site("/"))
    assert site.paths() == ["/", "/away", "/ok"]
    assert elsewhere.requests() == []
    assert report.failures == [{
        "url": site("/away"),
        "kind": "off-origin",
        "reason": f"redirected off-origin to {elsewhere('/landing')}",
        "found_on": site("/"),
    }]
    assert report.fetched == 2


def test_each_page_once_across_paths_and_redirects(make_site):
    site = make_site({
        "/": {"links": ["/a", "/b", "/a#top", "/to-b", "/"]},
        "/a": {"links": ["/b", "/", "/to-b"]},
        "/b": {"links": ["/a"]},
        "/to-b": {"status": 301, "headers": {"Location": "/b"}},
    })
    report, pages = run(site("/"), max_depth=3)
    assert site.paths() == ["/", "/a", "/b", "/to-b"]
    assert [p.url for p in pages] == [site("/"), site("/a"), site("/b")]
    assert report.failures == []


def test_redirect_to_a_new_page_is_followed_once(make_site):
    site = make_site({
        "/": {"links": ["/old", "/new"]},
        "/old": {"status": 301, "headers": {"Location": "/new"}},
        "/new": {"title": "New"},
    })
    report, pages = run(site("/"))
    # /new was queued by the seed page before /old redirected to it; it is fetched once.
    assert site.paths().count("/new") == 1
    assert report.fetched == 2 and report.failures == []


def test_redirect_target_unknown_before_is_recorded_as_seen(make_site):
    site = make_site({
        "/": {"links": ["/old", "/c"]},
        "/old": {"status": 301, "headers": {"Location": "/fresh"}},
        "/c": {"links": ["/fresh"]},
        "/fresh": {},
    })
    report, pages = run(site("/"), max_depth=3)
    assert site.paths() == ["/", "/old", "/fresh", "/c"]
    assert [(p.url, p.final_url) for p in pages][1] == (site("/old"), site("/fresh"))


def test_redirect_loop_is_a_failure(make_site):
    site = make_site({
        "/": {"links": ["/loop1", "/after"]},
        "/loop1": {"status": 302, "headers": {"Location": "/loop2"}},
        "/loop2": {"status": 302, "headers": {"Location": "/loop1"}},
        "/after": {},
    })
    report, _ = run(site("/"))
    assert site.paths() == ["/", "/loop1", "/loop2", "/after"]
    assert report.failures[0]["url"] == site("/loop1")
    assert report.failures[0]["reason"].startswith("redirect loop:")
    assert report.fetched == 2


def test_links_only_from_successful_html(make_site):
    site = make_site({
        "/": {"links": ["/missing", "/error", "/doc.pdf", "/notes.txt", "/untyped"]},
        "/missing": {"status": 404, "links": ["/from-404"]},
        "/error": {"status": 500, "links": ["/from-500"]},
        "/doc.pdf": {"content_type": "application/pdf", "body": "<a href='/from-pdf'>x</a>"},
        "/notes.txt": {"content_type": "text/plain", "body": "<a href='/from-text'>x</a>"},
        # An HTML body served with a non-HTML type: Scrapy would sniff it; the walk does not.
        "/untyped": {"content_type": "application/octet-stream", "body": "<html><a href='/from-bin'>x</a></html>"},
    })
    report, pages = run(site("/"), max_depth=3)
    assert site.paths() == ["/", "/missing", "/error", "/doc.pdf", "/notes.txt", "/untyped"]
    statuses = {p.url.removeprefix(site.url): p.status for p in pages}
    assert statuses == {"/": 200, "/missing": 404, "/error": 500, "/doc.pdf": 200, "/notes.txt": 200, "/untyped": 200}
    assert report.failures == [] and report.fetched == 6


def test_link_resolution_rules(make_site):
    site = make_site({
        "/dir/page": {
            "head": '<base href="/based/">',
            "links": [
                "rel",  # resolved against <base>, not the page URL
                "/abs#frag",
                {"href": "/nofollowed", "rel": "nofollow"},
                {"href": "/external-nofollow", "rel": "external NoFollow"},
                "  /spaced  ",
                "/q?b=2&a=1",
                "/file.zip",  # no filtering by extension
            ],
        },
        "/based/rel": {}, "/abs": {}, "/spaced": {}, "/q?b=2&a=1": {}, "/file.zip": {"content_type": "application/zip"},
    })
    report, _ = run(site("/dir/page"))
    assert site.paths() == ["/dir/page", "/based/rel", "/abs", "/spaced", "/q?b=2&a=1", "/file.zip"]


def test_meta_robots_nofollow_page_yields_no_links(make_site):
    site = make_site({"/": {"head": '<meta name="robots" content="noindex, nofollow">', "links": ["/a"]}, "/a": {}})
    run(site("/"))
    assert site.paths() == ["/"]


def test_failures_are_results_and_the_walk_goes_on(make_site, unused_port):
    site = make_site({
        "/": {"links": ["/slow", f"http://127.0.0.1:{unused_port}/dead", "/ok"]},
        "/slow": {"sleep": 3},
        "/ok": {},
    })
    report, _ = run(site("/"), settings={"DOWNLOAD_TIMEOUT": 1})
    assert site.paths() == ["/", "/slow", "/ok"]
    assert [f["url"] for f in report.failures] == [site("/slow")]
    assert report.failures[0]["reason"] == "timed out after 1s"
    assert report.fetched == 2


def test_no_retry_of_a_failed_page(make_site):
    site = make_site({"/": {"links": ["/slow"]}, "/slow": {"sleep": 2}})
    report, _ = run(site("/"), settings={"DOWNLOAD_TIMEOUT": 0.5})
    assert site.paths() == ["/", "/slow"]
    assert len(report.failures) == 1


def test_seed_that_cannot_be_fetched_is_an_error(unused_port):
    with pytest.raises(SeedError, match=rf"seed http://127.0.0.1:{unused_port}/ could not be fetched: .*connection refused"):
        run(f"http://127.0.0.1:{unused_port}/")


def test_seed_redirect_loop_is_an_error(make_site):
    site = make_site({"/": {"status": 302, "headers": {"Location": "/"}}})
    with pytest.raises(SeedError, match="redirect loop"):
        run(site("/"))


def test_seed_http_error_status_is_a_fetched_page(make_site):
    site = make_site({})
    report, pages = run(site("/nothing-here"))
    assert pages[0].status == 404 and report.fetched == 1
    assert site.paths() == ["/nothing-here"]


def test_callback_stop_requests_nothing_more(make_site):
    site = make_site(TREE)
    seen: list[str] = []

    def on_page(page: Page) -> bool:
        seen.append(page.url)
        return len(seen) < 3

    report = walk(site("/"), max_depth=3, delay=0, on_page=on_page, settings=LOOPBACK)
    assert site.paths() == ["/", "/a", "/b"]
    assert report.stopped == "callback" and report.fetched == 3
    assert report.unvisited == [site(p) for p in ["/c", "/a1", "/a2", "/b1"]]


def test_page_carries_headers_body_and_text(make_site):
    site = make_site({"/": {"title": "Caf\u00e9", "encoding": "iso-8859-1", "content_type": "text/html; charset=iso-8859-1"}})
    _, pages = run(site("/"))
    page = pages[0]
    assert page.title == "Caf\u00e9"
    assert "Caf\u00e9" in page.text
    assert page.headers["Content-Type"] == "text/html; charset=iso-8859-1"
    # Its bytes as the site sent them: the status line and headers besides the body.
    assert len(page.body) < page.byte_count < len(page.body) + 400 and b"Caf\xe9" in page.body


@pytest.mark.parametrize(
    ("charset", "query"),
    [("iso-8859-1", "w=caf%E9"), ("windows-1252", "w=caf%E9&e=%80"), ("utf-8", "w=caf%C3%A9&e=%E2%82%AC")],
)
@pytest.mark.parametrize("padding", [0, 20_000], ids=["read-here", "read-by-a-helper"])
def test_a_links_query_is_encoded_in_the_pages_encoding_its_path_in_utf8(make_site, charset, query, padding):
    # As a browser sends it (the URL standard's encoding-parse); pages from 16 KiB on are read
    # in helper processes, which must know the encoding too.
    euro = "&e=€" if charset != "iso-8859-1" else ""
    site = make_site({
        "/": {"title": "Café", "links": [f"/q?w=café{euro}", "/café/"], "body": "<p>" + "x" * padding + "</p>",
              "encoding": charset, "content_type": f"text/html; charset={charset}"},
    })
    report, _ = run(site("/"))
    assert report.failures == []
    assert site.paths() == ["/", f"/q?{query}", "/caf%C3%A9/"]


def test_each_request_names_the_page_that_linked_to_it(make_site):
    site = make_site({
        "/": {"links": ["/a", "/old"]},
        "/a": {"links": ["/a1"]},
        "/old": {"status": 301, "headers": {"Location": "/new"}},
        "/new": {},
        "/a1": {},
    })
    report, pages = run(site("/"), max_depth=2)
    received = [(entry["path"], entry["headers"].get("Referer")) for entry in site.requests()]
    assert received == [
        ("/robots.txt", None), ("/", None), ("/a", site("/")), ("/old", site("/")), ("/new", site("/")),
        ("/a1", site("/a")),
    ]
    assert [page.found_on for page in pages] == [None, site("/"), site("/"), site("/a")]


def test_referer_enabled_false_sends_none(make_site):
    site = make_site({"/": {"links": ["/a"]}, "/a": {}})
    run(site("/"), settings={"REFERER_ENABLED": False})
    assert [entry["headers"].get("Referer") for entry in site.requests()] == [None, None, None]
