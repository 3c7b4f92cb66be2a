"""render=always/auto over real HTTP: pages run in Debian's Chromium, every request it makes
fetched through the walk's guarded downloader, inside the walk's budgets.

Only loopback is ever contacted. 127.0.0.1/32 is allowed (the suite's sites live there); the
refused address is 127.0.0.2, where a listener counts every TCP connection and UDP datagram that
reaches it: a browser request that slipped past the guard would show up there.
"""

from __future__ import annotations

import json
import shutil
import socket
import threading
from typing import Any

import pytest
from scrapy import signals

from sitewalk import SitewalkError, grep, walk
from tests.conftest import LOOPBACK

pytestmark = pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed (.ci/run installs it)")
# A test that runs Chromium costs seconds of CPU: slow (the README's test command leaves them to CI: -m slow).
CHROMIUM = pytest.mark.slow


class Stats:
    """An extension keeping the walk's stats when it closes."""

    seen: list[dict[str, Any]] = []

    def __init__(self, crawler: Any) -> None:
        self.stats = crawler.stats
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Any) -> Stats:
        return cls(crawler)

    def spider_closed(self) -> None:
        Stats.seen.append(self.stats.get_stats())


def rendered(seed: str, settings: dict[str, Any] | None = None, **options: Any) -> tuple[Any, dict[str, Any], list[Any]]:
    """Walk ``seed`` with render=always (unless ``options`` say otherwise): the report, the
    walk's stats and its pages."""
    Stats.seen.clear()
    pages: list[Any] = []
    options = {"delay": 0, "render": "always", **options}
    report = walk(seed, on_page=pages.append, settings={**LOOPBACK, "EXTENSIONS": {"tests.test_render.Stats": 900}, **(settings or {})},
                  **options)
    (stats,) = Stats.seen
    return report, stats, pages


def script_page(script: str, body: str = "", title: str = "App", head: str = "") -> dict[str, Any]:
    return {"body": f"<!DOCTYPE html><html><head><title>{title}</title>{head}</head><body>"
                    f"<noscript>You need to enable JavaScript to run this app.</noscript><div id='root'></div>{body}"
                    f"<script>{script}</script></body></html>"}


# Links and text made by a script; a page that fetches JSON and renders it; a client-side redirect.
BUILDS = """
const root = document.getElementById('root');
root.innerHTML = '<h1>Made by a script</h1><p>The walk reads what scripts make.</p>'
  + '<a href="/made">made</a> <a href="/data">data</a> <a href="/go">go</a>';
document.title = 'Built';
"""
FETCHES = """
fetch('/api/items.json').then(r => r.json()).then(items => {
  document.getElementById('root').innerHTML = items.map(i => '<p><a href="' + i.href + '">' + i.text + '</a></p>').join('');
});
"""
APP_SITE = {
    "/": script_page(BUILDS),
    "/data": script_page(FETCHES),
    "/api/items.json": {"content_type": "application/json",
                        "body": json.dumps([{"href": "/from-json", "text": "Fetched as JSON"}])},
    "/go": script_page("location.replace('/landed');"),
    "/landed": script_page("document.getElementById('root').textContent = 'Landed after a redirect';"),
    "/made": {"title": "Made"},
    "/from-json": {"title": "From JSON"},
}


@CHROMIUM
def test_links_and_text_made_by_scripts_are_what_the_walk_reads(make_site):
    site = make_site(APP_SITE)
    report, stats, pages = rendered(site("/"), max_depth=2)
    by_url = {page.url: page for page in pages}
    home = by_url[site("/")]
    assert home.title == "Built"
    assert home.links == [site("/made"), site("/data"), site("/go")]
    assert "The walk reads what scripts make." in home.content("text")
    # The JSON the page fetched, rendered into links, and a script's redirect followed as a link.
    assert by_url[site("/data")].links == [site("/from-json")]
    assert by_url[site("/go")].links == [site("/landed")]
    assert "Landed after a redirect" in by_url[site("/landed")].content("text")
    assert [page.url for page in pages] == [site(path) for path in ("/", "/made", "/data", "/go", "/from-json", "/landed")]
    assert report.fetched == 6 and report.failures == []
    # The browser's request went through the walk's downloader: sitewalk's User-Agent, once each.
    api = [entry for entry in site.requests() if entry["path"] == "/api/items.json"]
    assert len(api) == 1 and api[0]["headers"]["User-Agent"].startswith("sitewalk/")
    assert stats["sitewalk/render/pages"] == 6 and stats["sitewalk/render/navigations"] == 1
    assert stats["sitewalk/render/launches"] == 1


@CHROMIUM
def test_grep_searches_the_rendered_text(make_site):
    site = make_site(APP_SITE)
    matches, report = grep(site("/"), "what scripts make", max_depth=0, delay=0, render="always", settings=LOOPBACK)
    assert [(match.url, match.text) for match in matches] == [(site("/"), "The walk reads what scripts make.")]


def test_without_render_the_shell_is_all_there_is(make_site):
    site = make_site(APP_SITE)
    pages: list[Any] = []
    walk(site("/"), delay=0, on_page=pages.append, settings=LOOPBACK)
    assert [page.url for page in pages] == [site("/")] and pages[0].links == []
    assert site.paths() == ["/"]


class Listener:
    """Counts the TCP connections and UDP datagrams that reach 127.0.0.2 on one port."""

    def __init__(self) -> None:
        self.tcp = socket.create_server(("127.0.0.2", 0))
        self.port = self.tcp.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.2", self.port))
        self.seen: list[str] = []
        for target in (self._accept, self._receive):
            threading.Thread(target=target, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.tcp.accept()
            except OSError:
                return
            self.seen.append("tcp")
            connection.close()

    def _receive(self) -> None:
        while True:
            try:
                self.udp.recv(2048)
            except OSError:
                return
            self.seen.append("udp")

    def close(self) -> None:
        self.tcp.close()
        self.udp.close()


@pytest.fixture
def refused():
    listener = Listener()
    yield listener
    listener.close()


@CHROMIUM
def test_the_guard_holds_for_every_request_of_the_browser(make_site, refused):
    other = make_site({"/allowed.json": {"content_type": "application/json", "headers": {"Access-Control-Allow-Origin": "*"},
                                         "body": json.dumps("fetched from another allowed origin")}})
    target = f"http://127.0.0.2:{refused.port}"
    hostile = f"""
fetch('{target}/fetch').catch(() => {{}});
const xhr = new XMLHttpRequest(); xhr.open('GET', '{target}/xhr'); xhr.onerror = () => {{}}; xhr.send();
try {{ new WebSocket('ws://127.0.0.2:{refused.port}/ws'); }} catch (e) {{}}
fetch('/hop').catch(() => {{}});
navigator.sendBeacon('{target}/beacon', 'x');
const peer = new RTCPeerConnection({{iceServers: [{{urls: 'stun:127.0.0.2:{refused.port}'}},
  {{urls: 'turn:127.0.0.2:{refused.port}?transport=tcp', username: 'u', credential: 'c'}}]}});
peer.createDataChannel('x'); peer.createOffer().then(offer => peer.setLocalDescription(offer));
fetch('{other.url}/allowed.json').then(r => r.json()).then(text => {{
  document.getElementById('root').insertAdjacentHTML('beforeend', '<p>' + text + '</p>');
}});
"""
    site = make_site({
        "/": script_page(
            hostile,
            body=f"<img src='{target}/img'><iframe src='{target}/frame'></iframe><iframe src='/frame-hop'></iframe>",
            head=f"<link rel='preconnect' href='{target}'><link rel='prefetch' href='{target}/prefetch'>"
                 f"<meta http-equiv='refresh' content='0;url={target}/refresh'>",
        ),
        "/hop": {"status": 302, "headers": {"Location": f"{target}/redirected"}},
        "/frame-hop": {"status": 302, "headers": {"Location": f"{target}/frame-redirected"}},
    })
    # Images too, so that the guard, not the skipped resource types, is what keeps the <img> out.
    report, stats, pages = rendered(site("/"), settings={"SITEWALK_RENDER_SKIP": ""})
    assert refused.seen == []
    # The requests were made, and refused by the guard (fetch, XHR, img, two iframes, the beacon,
    # the prefetch, the two redirect targets); the allowed origin was reached.
    assert stats["sitewalk/guard/refused"] >= 8
    assert stats["sitewalk/render/websockets"] == 1
    assert "fetched from another allowed origin" in pages[0].content("text")
    assert [entry["path"] for entry in other.requests()] == ["/robots.txt", "/allowed.json"]
    # The <meta refresh> is a link of the page, off the origin: not followed.
    assert f"{target}/refresh" in pages[0].links
    assert report.fetched == 1 and report.failures == []
    assert sorted(site.paths()) == ["/", "/frame-hop", "/hop"]


@CHROMIUM
def test_bytes_of_the_document_and_of_every_request_count(make_site):
    site = make_site({**APP_SITE, "/": {"title": "Home", "links": ["/data"]}})
    report, stats, pages = rendered(site("/"), settings={"ROBOTSTXT_OBEY": False})
    # What the server wrote for each answer: status line, headers and body (less the one
    # hop-by-hop header Twisted keeps from Scrapy's count: Connection).
    sent = [entry for entry in site.log() if "wire_bytes" in entry and entry.get("sent") != "/robots.txt"]
    assert [entry["sent"] for entry in sent] == ["/", "/data", "/api/items.json"]
    assert report.bytes == stats["downloader/response_bytes"]
    assert report.bytes <= sum(entry["wire_bytes"] for entry in sent)
    assert pages[1].byte_count == report.bytes - pages[0].byte_count
    assert pages[1].byte_count > sent[1]["bytes_sent"] + sent[2]["bytes_sent"]
    # The document fits in max_bytes, the document and its JSON do not: the page is cut off there.
    report, stats, pages = rendered(site("/"), max_bytes=pages[0].byte_count + sent[1]["wire_bytes"] + 10,
                                    settings={"ROBOTSTXT_OBEY": False})
    assert [page.url for page in pages] == [site("/")] and report.stopped == "max-bytes"
    assert [(failure["url"], failure["kind"]) for failure in report.failures] == [(site("/data"), "budget")]


@CHROMIUM
def test_a_rendered_page_is_one_page_in_max_pages(make_site):
    site = make_site(APP_SITE)
    report, stats, pages = rendered(site("/data"), max_pages=1)
    # The page and the JSON its script fetched: one page; the link it made is left unfetched.
    assert site.paths() == ["/data", "/api/items.json"]
    assert report.fetched == 1 and report.stopped == "max-pages" and report.unvisited == [site("/from-json")]


@CHROMIUM
def test_several_pages_in_flight_give_the_walk_one_at_a_time_gives(make_site):
    site = make_site(APP_SITE)
    report, stats, pages = rendered(site("/"), max_depth=2, concurrency=3)
    assert [page.url for page in pages] == [site(path) for path in ("/", "/made", "/data", "/go", "/from-json", "/landed")]
    assert [page.title for page in pages] == ["Built", "Made", "App", "App", "From JSON", "App"]
    assert stats["sitewalk/render/pages"] == 6


@CHROMIUM
def test_images_fonts_and_media_are_not_fetched_unless_asked(make_site):
    site = make_site({"/": script_page("", body="<img src='/a.png'><video src='/v.mp4'></video>",
                                       head="<style>@font-face { font-family: x; src: url(/f.woff2); } body { font-family: x; }</style>")})
    report, stats, pages = rendered(site("/"))
    assert site.paths() == ["/"]
    assert stats["sitewalk/render/skipped"] >= 2


@CHROMIUM
def test_a_render_has_a_time_limit(make_site):
    site = make_site({
        "/": {"links": ["/busy", "/waiting"], "title": "Home"},
        # A script that never yields: no DOM to take.
        "/busy": script_page("while (true) {}"),
        # A page still waiting for its data: the DOM it has by then is the page.
        "/waiting": script_page("document.getElementById('root').textContent = 'Rendered before the wait';"
                                "fetch('/never').then(() => {});"),
        "/never": {"sleep": 30, "body": "late"},
    })
    # Long enough for a plain page on a loaded machine (Chromium beside other tests' Chromium).
    report, stats, pages = rendered(site("/"), settings={"SITEWALK_RENDER_TIMEOUT": 4})
    assert [page.url for page in pages] == [site("/"), site("/waiting")]
    assert "Rendered before the wait" in pages[1].content("text")
    assert report.failures == [{"url": site("/busy"), "kind": "render", "found_on": site("/"),
                                "reason": "no DOM within 4s (SITEWALK_RENDER_TIMEOUT=4)"}]
    # Both, and on a loaded machine perhaps the first page too (it is then the DOM it had).
    assert stats["sitewalk/render/timeouts"] >= 2


@CHROMIUM
def test_a_render_ends_at_the_deadline(make_site):
    site = make_site({"/": {"links": ["/busy"], "title": "Home"}, "/busy": script_page("while (true) {}")})
    # Long enough for the browser to start on a loaded machine; far shorter than the render's own limit.
    report, stats, pages = rendered(site("/"), deadline=12, settings={"SITEWALK_RENDER_TIMEOUT": 120})
    assert report.stopped == "deadline"
    assert [(failure["url"], failure["kind"]) for failure in report.failures] == [(site("/busy"), "budget")]
    assert report.elapsed_s < 30


SHELL_AND_PLAIN = {
    "/": {"title": "Plain", "links": ["/app"], "head": "<script src='/enhance.js'></script>",
          "body": "<p>" + "A page of text that a person reads as it comes from the server. " * 10 + "</p>"},
    "/enhance.js": {"content_type": "text/javascript", "body": "document.title = 'enhanced';"},
    "/app": {"body": "<!DOCTYPE html><html><head><title>App</title><script defer src='/app.js'></script></head>"
                     "<body><noscript>You need to enable JavaScript to run this app.</noscript><div id='root'></div></body></html>"},
    "/app.js": {"content_type": "text/javascript",
                "body": "document.getElementById('root').innerHTML = '<a href=\"/inside\">inside</a>';"},
    "/inside": {"title": "Inside"},
}


@CHROMIUM
def test_auto_renders_the_shell_and_leaves_the_plain_page(make_site):
    site = make_site(SHELL_AND_PLAIN)
    report, stats, pages = rendered(site("/"), render="auto", max_depth=2)
    assert [(page.url, page.title) for page in pages] == [(site("/"), "Plain"), (site("/app"), "App"), (site("/inside"), "Inside")]
    assert site.paths() == ["/", "/app", "/app.js", "/inside"]
    assert stats["sitewalk/render/pages"] == 1 and stats["sitewalk/render/plain"] == 2


def test_auto_on_a_site_without_shells_starts_no_browser(make_site):
    site = make_site({"/": SHELL_AND_PLAIN["/"], "/app": {"title": "Not an app"}, "/enhance.js": SHELL_AND_PLAIN["/enhance.js"]})
    report, stats, pages = rendered(site("/"), render="auto")
    assert report.fetched == 2
    assert "sitewalk/render/launches" not in stats and "sitewalk/render/pages" not in stats


@CHROMIUM
def test_the_browser_is_replaced_after_its_pages(make_site):
    site = make_site({"/": script_page("document.getElementById('root').innerHTML = "
                                       "['/1', '/2', '/3', '/4'].map(u => `<a href=${u}>${u}</a>`).join(' ');"),
                      **{f"/{n}": script_page(f"document.title = 'page {n}';") for n in range(1, 5)}})
    report, stats, pages = rendered(site("/"), settings={"SITEWALK_RENDER_RESTART_AFTER": 2})
    assert [page.title for page in pages] == ["App", "page 1", "page 2", "page 3", "page 4"]
    assert stats["sitewalk/render/launches"] == 3


def test_a_missing_browser_is_said_before_the_walk(make_site):
    site = make_site({"/": {"title": "Home"}})
    with pytest.raises(SitewalkError, match="render needs Chromium, and 'no-such-chromium' is not an executable"):
        walk(site("/"), render="always", settings={**LOOPBACK, "SITEWALK_RENDER_CHROMIUM": "no-such-chromium"})
    with pytest.raises(SitewalkError, match="render must be one of never, always, auto, got 'sometimes'"):
        walk(site("/"), render="sometimes", settings=LOOPBACK)
    assert site.requests() == []
