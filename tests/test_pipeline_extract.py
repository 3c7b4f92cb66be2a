"""The extract consumer: css or xpath values, optionally filtered by a regex, one item per page with hits."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from sitewalk import extract as extract_items
from tests.conftest import LOOPBACK, allow_loopback, run_cli

SITE = {
    "/": {"title": "Home", "links": ["/a", "/b", "/nohit", "/prices.txt", "/gone"]},
    "/a": {
        "title": "Alpha",
        "body": '<p class="price">Price: 10 EUR</p><p class="price">Price: <b>12</b> EUR</p>'
                '<img src="/a.png" alt="pic A"><script>var price = "99 EUR"</script>',
    },
    "/b": {"title": "Beta", "body": '<p class="price">Price: 7 EUR</p><img src="/b.png">'},
    "/nohit": {"title": "Nothing", "body": "<p>no prices here</p>"},
    # Not HTML: never searched, though its text looks like markup.
    "/prices.txt": {"content_type": "text/plain", "body": '<p class="price">Price: 1 EUR</p>\n'},
}
PAGES = ["/", "/a", "/b", "/nohit", "/prices.txt", "/gone"]
FORMATS = {".jsonl": "jsonlines", ".json": "json", ".csv": "csv"}


def extract(site: Any, tmp_path: Path, feed: str = "out.jsonl", **options: Any) -> Path:
    """Walk ``site`` with the Python API, the extract items going to a feed file."""
    path = tmp_path / feed
    settings = {**LOOPBACK, "FEEDS": {str(path): {"format": FORMATS[path.suffix]}}}
    _, report = extract_items(site("/"), delay=0, settings=settings, **options)
    # Extraction never changes the walk: every page was fetched, once.
    assert site.paths() == PAGES and report.fetched == len(PAGES) and report.stopped is None
    return path


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(
    ("options", "values"),
    [
        ({"css": "p.price::text"}, {"/a": ["Price: 10 EUR", "Price: ", " EUR"], "/b": ["Price: 7 EUR"]}),
        (
            {"css": "p.price"},
            {
                "/a": ['<p class="price">Price: 10 EUR</p>', '<p class="price">Price: <b>12</b> EUR</p>'],
                "/b": ['<p class="price">Price: 7 EUR</p>'],
            },
        ),
        ({"css": "img::attr(alt)"}, {"/a": ["pic A"]}),
        ({"xpath": "//img/@alt"}, {"/a": ["pic A"]}),
        ({"xpath": "//h1/text()"}, {"/": ["Home"], "/a": ["Alpha"], "/b": ["Beta"], "/nohit": ["Nothing"]}),
        ({"xpath": "//p[@class='price']"}, {
            "/a": ['<p class="price">Price: 10 EUR</p>', '<p class="price">Price: <b>12</b> EUR</p>'],
            "/b": ['<p class="price">Price: 7 EUR</p>'],
        }),
        # regex without a group: the matches; with groups: the captures.
        ({"css": "p.price", "regex": r"\d+ EUR"}, {"/a": ["10 EUR"], "/b": ["7 EUR"]}),
        ({"css": "p.price", "regex": r"(\d+)"}, {"/a": ["10", "12"], "/b": ["7"]}),
        ({"xpath": "string(//p[@class='price'][last()])", "regex": r"(\w+): (\d+)"},
         {"/a": ["Price", "12"], "/b": ["Price", "7"]}),
        # A regex that leaves a page without values leaves it out.
        ({"css": "p.price::text", "regex": r"1\d"}, {"/a": ["10"]}),
    ],
)
def test_extract_values(make_site, tmp_path, options, values):
    site = make_site(SITE)
    items = jsonl(extract(site, tmp_path, **options))
    assert all(list(item) == ["url", "depth", "values"] for item in items)
    assert {item["url"].removeprefix(site.url): item["values"] for item in items} == values
    # One item per page with values, in fetch order, with the page's depth.
    assert [item["url"] for item in items] == [site(path) for path in PAGES if path in values]
    assert [item["depth"] for item in items] == [0 if item["url"] == site("/") else 1 for item in items]


def test_no_hits_anywhere_gives_an_empty_feed(make_site, tmp_path):
    site = make_site(SITE)
    assert jsonl(extract(site, tmp_path, css="table td")) == []


def test_the_final_url_is_reported(make_site, tmp_path):
    site = make_site({"/": {"links": ["/old"]}, "/old": {"status": 301, "headers": {"Location": "/new"}}, "/new": {"title": "New"}})
    result = run_cli(
        "-a", f"seed={site('/')}", "-a", "delay=0", "-a", "css=h1::text", "-O", "out.jsonl", *allow_loopback(), cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    items = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert items == [{"url": site("/new"), "depth": 1, "values": ["New"]}]


@pytest.mark.parametrize("feed", ["out.csv", "out.json"])
def test_extract_items_in_other_feed_formats(make_site, tmp_path, feed):
    site = make_site(SITE)
    path = extract(site, tmp_path, feed, css="p.price", regex=r"(\d+)")
    if feed.endswith(".csv"):
        with path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        # A list is its JSON array (sitewalk.exporters).
        assert rows == [
            {"url": site("/a"), "depth": "1", "values": '["10", "12"]'},
            {"url": site("/b"), "depth": "1", "values": '["7"]'},
        ]
    else:
        assert json.loads(path.read_text()) == [
            {"url": site("/a"), "depth": 1, "values": ["10", "12"]},
            {"url": site("/b"), "depth": 1, "values": ["7"]},
        ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-a", "css=p["], "css 'p[' is not a valid CSS selector"),
        (["-a", "xpath=//p["], "xpath '//p[' is not a valid XPath expression"),
    ],
)
def test_bad_selectors_give_one_line_exit_2_and_no_request(make_site, tmp_path, args, message):
    site = make_site(SITE)
    result = run_cli(
        "-a", f"seed={site('/')}", "-a", "delay=0", *args, "-O", "out.jsonl", *allow_loopback(), cwd=tmp_path,
    )
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("sitewalk: error:")]
    assert len(errors) == 1 and message in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert site.requests() == []
