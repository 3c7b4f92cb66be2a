"""Reading pages in helper processes: the same results as reading them in the walk's process."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

import pytest

from sitewalk import Page, grep, walk
from sitewalk.links import page_links, page_title, parse_html
from sitewalk.pagereader import HELPER_MIN_BYTES, ReaderPool, ReaderProcess, ReadPage, flags_for, read_page
from sitewalk.text import visible_lines
from tests.conftest import LOOPBACK, helper_processes

# Pages large enough to be read by a helper (HELPER_MIN_BYTES).
FILLER = "<p>" + "filler " * (HELPER_MIN_BYTES // 7 + 1) + "</p>"
SITE = {
    "/": {"title": "Home", "links": ["/a", "/b#x", "/c"], "body": "<p>needle home</p>" + FILLER},
    "/a": {"title": "A", "links": ["/a1", "/b"], "body": "<p>needle a</p><pre>one\nneedle two</pre>" + FILLER},
    "/b": {"title": "B", "links": ["/b1"], "body": "<div hidden>needle hidden</div><p>caf&eacute; needle</p>" + FILLER},
    "/c": {"title": "C", "links": ["/"], "body": FILLER},
    "/a1": {"title": "A1", "body": "<script>needle()</script><p>needle a1</p>" + FILLER},
    "/b1": {"title": "B1", "body": FILLER},
}
ORDER = ["/", "/a", "/b", "/c", "/a1", "/b1"]
MATCHES = ["needle home", "needle a", "needle two", "café needle", "needle a1"]


def test_the_helper_reads_what_the_walk_would_read():
    markup = (
        "<html><head><title> A  page </title><base href='/base/'></head><body><a href='x#f'>x</a>"
        "<p hidden>gone</p><p>shown &amp; kept</p><pre>a\nb</pre><a href='http://other.test/'>o</a></body></html>"
    )

    async def read() -> Any:
        reader = await ReaderProcess.start()
        assert reader is not None
        try:
            return await asyncio.gather(
                reader.read(markup, "http://site.test/dir/p.html", flags_for(links=True, lines=True)),
                reader.read(markup.encode(), "http://site.test/", flags_for(links=False, lines=False)),
                reader.read("<p>caf\u00e9</p>", "http://site.test/", flags_for(links=True, lines=True)),
                reader.read(markup, "http://site.test/", flags_for(links=False, lines=False, content="markdown")),
                reader.read(markup, "http://site.test/", flags_for(links=False, lines=False, content="text")),
            )
        finally:
            await reader.close()

    full, bare, text, markdown, plain = asyncio.run(read())
    tree = parse_html(markup)
    assert full.title == page_title(tree) == "A page"
    assert full.links == page_links(tree, "http://site.test/dir/p.html") == [
        "http://site.test/base/x", "http://other.test/",
    ]
    assert full.lines == visible_lines(parse_html(markup)) == ["x", "shown & kept", "a", "b", "o"]
    assert (bare.title, bare.links, bare.lines) == ("A page", [], None)
    assert (text.title, text.links, text.lines) == (None, [], ["caf\u00e9"])
    assert read_page(markup, "http://site.test/dir/p.html", 3) == full
    assert full.content is None
    # The content, read in the helper as in the walk's process.
    assert markdown.content == read_page(markup, "http://site.test/", flags_for(links=False, lines=False,
                                                                               content="markdown")).content
    assert "shown & kept" in markdown.content and "```\na\nb\n```" in markdown.content
    assert plain.content == "x\nshown & kept\na\nb\no"


def walk_pages(site: Any, **options: Any) -> list[Page]:
    pages: list[Page] = []
    walk(site("/"), on_page=pages.append, delay=0, max_depth=3, settings=LOOPBACK, **options)
    return pages


def test_page_tree_is_parsed_on_first_use(make_site):
    site = make_site(SITE)
    pages = walk_pages(site)
    assert [page.url for page in pages] == [site(path) for path in ORDER]
    assert [page.title for page in pages] == ["Home", "A", "B", "C", "A1", "B1"]
    tree = pages[1].tree
    assert tree is not None and tree is pages[1].tree
    assert [a.attributes["href"] for a in tree.css("a")] == ["/a1", "/b"]


@pytest.fixture
def no_helper(monkeypatch):
    async def cannot_start(cls: Any) -> None:
        return None

    monkeypatch.setattr(ReaderProcess, "start", classmethod(cannot_start))


def test_without_a_helper_the_walk_reads_pages_itself(make_site, no_helper):
    site = make_site(SITE)
    pages = walk_pages(site)
    assert helper_processes(parent=os.getpid()) == set()
    assert site.paths() == ORDER
    assert [page.title for page in pages] == ["Home", "A", "B", "C", "A1", "B1"]
    matches, report = grep(site("/"), "needle", max_depth=3, delay=0, context=0, settings=LOOPBACK)
    assert [m.text for m in matches] == MATCHES and report.fetched == 6


def test_grep_with_helpers_finds_the_same_lines(make_site):
    site = make_site(SITE)
    matches, report = grep(site("/"), "needle", max_depth=3, delay=0, context=0, settings=LOOPBACK)
    assert [m.text for m in matches] == MATCHES
    assert site.paths() == ORDER and report.fetched == 6


class KillHelpers:
    """An item pipeline that kills the walk's helper processes once they run (once)."""

    killed = 0

    def process_item(self, item: Any) -> Any:
        helpers = helper_processes(parent=os.getpid())
        if not KillHelpers.killed and helpers:
            for pid in helpers:
                os.kill(pid, signal.SIGKILL)
            KillHelpers.killed = len(helpers)
        return item


@pytest.mark.parametrize("mode", ["index", "grep"])
def test_a_helper_that_dies_leaves_the_walk_whole(make_site, caplog, mode):
    site = make_site(SITE)
    # A user's ITEM_PIPELINES add to the walk's consumers (on_page, grep), not replace them.
    settings = {**LOOPBACK, "ITEM_PIPELINES": {"tests.test_pagereader.KillHelpers": 50}}
    KillHelpers.killed = 0
    if mode == "grep":
        matches, report = grep(site("/"), "needle", max_depth=3, delay=0, context=0, settings=settings)
        assert [m.text for m in matches] == MATCHES
    else:
        pages: list[Page] = []
        report = walk(site("/"), on_page=pages.append, max_depth=3, delay=0, settings=settings)
        assert [page.title for page in pages] == ["Home", "A", "B", "C", "A1", "B1"]
    assert KillHelpers.killed == (2 if mode == "grep" else 1)
    assert site.paths() == ORDER and report.fetched == 6 and report.failures == []
    assert "reading pages in the walk's process from now on" in caplog.text


def test_a_site_of_small_pages_needs_no_helper(make_site, monkeypatch):
    small = {path: {**page, "body": page["body"].replace(FILLER, "")} for path, page in SITE.items()}
    site = make_site(small)
    starts: list[int] = []
    original = ReaderProcess.start.__func__  # type: ignore[attr-defined]

    async def counted(cls: Any) -> Any:
        starts.append(1)
        return await original(cls)

    monkeypatch.setattr(ReaderProcess, "start", classmethod(counted))
    pages = walk_pages(site)
    assert [page.title for page in pages] == ["Home", "A", "B", "C", "A1", "B1"]
    assert site.paths() == ORDER
    assert starts == []  # the walk's own thread read every page
    # The same walk of large pages starts one helper.
    big = make_site(SITE)
    walk_pages(big)
    assert starts == [1]


def test_the_reader_reads_small_pages_here_and_large_ones_in_a_helper(monkeypatch):

    small = "<html><head><title>Small</title></head><body><a href='/a#x'>a</a><p hidden>h</p><p>t</p></body></html>"
    large = small.replace("<p>t</p>", "<p>t</p>" + FILLER)

    async def read_both(reader: ReaderPool) -> list[Any]:
        try:
            first = await reader.read(small, "http://site.test/", links=True, lines=True)
            # The first large page starts the helper; pages are read here until it runs.
            for _ in range(2000):
                second = await reader.read(large, "http://site.test/", links=True, lines=True)
                if second[1] is None:
                    break
            return [first, second]
        finally:
            await reader.close()

    (read, tree), (helper_read, helper_tree) = asyncio.run(read_both(ReaderPool(lines=False)))
    assert read == ReadPage("Small", ["http://site.test/a"], ["a", "t"]) and tree is not None
    assert helper_tree is None  # read by the helper: Page.tree parses on first use
    assert helper_read.title == "Small" and helper_read.links == ["http://site.test/a"]
    assert helper_read.lines is not None and helper_read.lines[:2] == ["a", "t"]

    async def cannot_start(cls: Any) -> None:
        return None

    monkeypatch.setattr(ReaderProcess, "start", classmethod(cannot_start))
    (_, _), (fallback, fallback_tree) = asyncio.run(read_both(ReaderPool(lines=False)))
    assert fallback == helper_read and fallback_tree is not None  # the same, read here
