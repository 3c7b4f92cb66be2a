"""A page's own indexing signals over real HTTP: canonical, noindex and nofollow from meta tags and
headers, in the items, in the links followed, in save_dir and llms.txt."""

from __future__ import annotations

import json

import pytest
from selectolax.lexbor import LexborHTMLParser

from sitewalk.indexing import IndexingSignals, indexing_signals
from tests.conftest import allow_loopback, run_cli

SITE = {
    "/": {"title": "Home", "links": ["/meta-noindex", "/header-noindex", "/none", "/copy", "/header-copy",
                                    "/original", "/meta-nofollow", "/header-nofollow", "/plain.txt"]},
    "/meta-noindex": {"title": "Meta noindex", "head": '<meta name="ROBOTS" content="noindex, follow">',
                      "links": ["/behind-noindex"]},
    "/header-noindex": {"title": "Header noindex", "headers": {"X-Robots-Tag": "noindex"}},
    "/none": {"title": "None", "head": '<meta name="robots" content="none">', "links": ["/behind-none"]},
    "/copy": {"title": "Copy", "head": '<link rel="canonical" href="/original#top">'},
    "/header-copy": {"title": "Header copy", "headers": {"Link": '<{origin}/original>; rel="canonical"'}},
    "/original": {"title": "Original", "body": "<p>The original text.</p>"},
    "/meta-nofollow": {"title": "Meta nofollow", "head": '<meta name="robots" content="nofollow">',
                       "links": ["/behind-meta-nofollow"]},
    "/header-nofollow": {"title": "Header nofollow", "headers": {"X-Robots-Tag": "nofollow"},
                         "links": ["/behind-header-nofollow"]},
    "/plain.txt": {"content_type": "text/plain", "body": "text\n", "headers": {"X-Robots-Tag": "otherbot: noindex"}},
    "/behind-noindex": {"title": "Behind noindex"},
    "/behind-none": {"title": "Behind none"},
    "/behind-meta-nofollow": {"title": "never linked"},
    "/behind-header-nofollow": {"title": "never linked"},
}


def crawl(make_site, tmp_path, *args: str) -> tuple[object, dict[str, dict]]:
    site = make_site(SITE)
    result = run_cli("-a", f"seed={site('/')}", "-a", "delay=0", "-a", "max_depth=2", "-O", "pages.jsonl", *allow_loopback(), *args,
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    items = [json.loads(line) for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
    return site, {item["url"].removeprefix(site("/")): item for item in items}


def test_items_carry_canonical_and_noindex_and_nofollow_stops_the_links(make_site, tmp_path):
    site, items = crawl(make_site, tmp_path)
    noindex = {path for path, item in items.items() if item["noindex"]}
    assert noindex == {"meta-noindex", "header-noindex", "none"}
    canonical = {path: item["canonical"] for path, item in items.items() if item["canonical"]}
    assert canonical == {"copy": site("/original"), "header-copy": site("/original")}
    # noindex alone still lets the walk follow the page's links; nofollow (and none), from a
    # meta tag or a header, does not: the server never saw those requests.
    assert "/behind-noindex" in site.paths()
    for path in ("/behind-none", "/behind-meta-nofollow", "/behind-header-nofollow"):
        assert path not in site.paths()


def test_save_dir_and_llms_txt_leave_out_noindex_pages_and_copies(make_site, tmp_path):
    site, _ = crawl(make_site, tmp_path, "-a", "save_dir=saved")
    saved = tmp_path / "saved"
    files = {path.relative_to(saved).as_posix() for path in saved.rglob("*") if path.is_file()}
    for left_out in ("meta-noindex.md", "header-noindex.md", "none.md"):
        assert left_out not in files
    assert {"copy.md", "original.md", "plain.txt"} <= files
    listed = (saved / "llms.txt").read_text()
    # One copy: the pages that name /original as their original are its copies.
    assert site("/original") in listed and f"({site('/copy')})" not in listed
    assert f"({site('/header-copy')})" not in listed and "Noindex" not in listed
    assert "Copy" not in (saved / "llms-full.txt").read_text()
    record = {json.loads(line)["url"]: json.loads(line) for line in (saved / ".sitewalk-pages.jsonl").read_text().splitlines()}
    assert record[site("/copy")]["canonical"] == site("/original")


def test_index_noindex_keeps_them(make_site, tmp_path):
    site, _ = crawl(make_site, tmp_path, "-a", "save_dir=saved", "-a", "index_noindex=true")
    saved = tmp_path / "saved"
    assert (saved / "meta-noindex.md").exists() and (saved / "header-noindex.md").exists()
    assert f"({site('/meta-noindex')})" in (saved / "llms.txt").read_text()


def test_index_noindex_needs_save_dir(make_site, tmp_path):
    site = make_site(SITE)
    result = run_cli("-a", f"seed={site('/')}", "-a", "index_noindex=true", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 2 and "index_noindex chooses what save_dir keeps" in result.stderr
    assert site.paths() == []


@pytest.mark.parametrize(("head", "headers", "expected"), [
    ("", {}, IndexingSignals()),
    ('<meta name="robots" content="NoIndex,NoFollow">', {}, IndexingSignals(None, True, True)),
    ('<meta name="googlebot" content="noindex">', {}, IndexingSignals()),
    ("", {"X-Robots-Tag": "none"}, IndexingSignals(None, True, True)),
    ("", {"x-robots-tag": "googlebot: noindex, nofollow"}, IndexingSignals()),
    ("", {"X-Robots-Tag": "unavailable_after: 25 Jun 2030 15:00:00 PST, noindex"}, IndexingSignals(None, True, False)),
    ("", {"X-Robots-Tag": "nofollow, googlebot: noindex"}, IndexingSignals(None, False, True)),
    ('<base href="/docs/"><link rel="Canonical" href="a.html#part">', {}, IndexingSignals("http://h/docs/a.html")),
    ('<link rel="canonical" href="https://other.example/p">', {"Link": '</q>; rel="canonical"'},
     IndexingSignals("https://other.example/p")),
    ("", {"Link": '<https://h/style.css>; rel=preload, </q?x=1>; rel="alternate canonical"'}, IndexingSignals("http://h/q?x=1")),
    ('<link rel="canonical" href="javascript:void(0)">', {}, IndexingSignals()),
])
def test_signals_from_meta_tags_and_headers(head, headers, expected):
    tree = LexborHTMLParser(f"<html><head>{head}</head><body></body></html>")
    assert indexing_signals(tree, "http://h/x/page.html", headers) == expected
