"""Where the walk may go on its origin: include, exclude and no_parent, over real HTTP."""

from __future__ import annotations

import json

import pytest

from tests.conftest import allow_loopback, run_cli

SITE = {
    "/docs/index.html": {"links": ["/docs/a.html", "/docs/sub/b.html", "/docs/a.html?print=1", "/license.html",
                                   "/blog/post.html", "/docs/private/x.html"]},
    "/docs/a.html": {"title": "A", "links": ["/docs/sub/b.html", "/bugs.html"]},
    "/docs/sub/b.html": {"title": "B"},
    "/docs/a.html?print=1": {"title": "A printed"},
    "/docs/private/x.html": {"title": "X"},
    "/license.html": {"title": "License"},
    "/bugs.html": {"title": "Bugs"},
    "/blog/post.html": {"title": "Post"},
}


def walk(make_site, tmp_path, *args: str):
    site = make_site(SITE)
    result = run_cli("-a", f"seed={site('/docs/index.html')}", "-a", "max_depth=3", "-a", "delay=0",
                     "-a", "report=r.json", "-O", "pages.jsonl", *allow_loopback(), *args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    items = [json.loads(line)["url"] for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
    return site, items, json.loads((tmp_path / "r.json").read_text())


@pytest.mark.parametrize(("args", "expected", "left_out"), [
    # No scope: the whole origin.
    ((), ["/docs/index.html", "/docs/a.html", "/docs/sub/b.html", "/docs/a.html?print=1", "/license.html",
          "/blog/post.html", "/docs/private/x.html", "/bugs.html"], 0),
    # wget -np: at or below the seed's directory.
    (("-a", "no_parent=true"), ["/docs/index.html", "/docs/a.html", "/docs/sub/b.html", "/docs/a.html?print=1",
                                "/docs/private/x.html"], 3),
    # include is searched in path and query; the seed is always fetched.
    (("-a", "include=/sub/|print="), ["/docs/index.html", "/docs/sub/b.html", "/docs/a.html?print=1"], 4),
    (("-a", "exclude=private|\\?"), ["/docs/index.html", "/docs/a.html", "/docs/sub/b.html", "/license.html",
                                      "/blog/post.html", "/bugs.html"], 2),
    (("-a", "no_parent=true", "-a", "exclude=^/docs/sub/"), ["/docs/index.html", "/docs/a.html",
                                                             "/docs/a.html?print=1", "/docs/private/x.html"], 4),
])
def test_scope_decides_which_links_are_followed(make_site, tmp_path, args, expected, left_out):
    site, items, report = walk(make_site, tmp_path, *args)
    assert site.paths() == expected
    assert items == [site(path) for path in expected]
    assert report["out_of_scope"] == left_out and report["failures"] == []


def test_an_invalid_scope_regex_is_one_line_before_any_request(make_site, tmp_path):
    site = make_site(SITE)
    result = run_cli("-a", f"seed={site('/docs/index.html')}", "-a", "include=(docs", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("sitewalk: error:")]
    assert len(errors) == 1 and "include '(docs' is not a valid regular expression" in errors[0]
    assert site.paths() == []


def test_links_true_gives_each_index_item_its_followable_links_in_document_order(make_site, tmp_path):
    site = make_site({
        "/": {"links": ["/a#top", "/a", "http://example.invalid/out", {"href": "/nofollow", "rel": "nofollow"},
                        "mailto:x@example.invalid", "/b"]},
        "/a": {"title": "A", "links": ["/"]},
        "/b": {"title": "B", "body": "no links"},
    })
    result = run_cli("-a", f"seed={site('/')}", "-a", "links=true", "-a", "delay=0", "-O", "pages.jsonl",
                     *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    items = {item["url"]: item for item in map(json.loads, (tmp_path / "pages.jsonl").read_text().splitlines())}
    # Resolved, fragments dropped, each once, other origins kept, nofollow and non-http(s) left out;
    # read at max_depth too.
    assert items[site("/")]["links"] == [site("/a"), "http://example.invalid/out", site("/b")]
    assert items[site("/a")]["links"] == [site("/")]
    assert items[site("/b")]["links"] == []
    # Only the same-origin links were fetched.
    assert site.paths() == ["/", "/a", "/b"]


def test_without_links_true_index_items_have_no_links_field(make_site, tmp_path):
    site = make_site({"/": {"links": ["/a"]}, "/a": {"title": "A"}})
    result = run_cli("-a", f"seed={site('/')}", "-a", "delay=0", "-O", "pages.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert all("links" not in json.loads(line) for line in (tmp_path / "pages.jsonl").read_text().splitlines())
