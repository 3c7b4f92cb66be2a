"""The link book: inlinks counted from every page, the first ones named, and the JUnit file."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from junitparser import JUnitXml

from sitewalk.linkreport import FIRST_INLINKS, LinkBook, write_junit

ORIGIN = "http://site.test"


def page(path: str, status: int = 200, final: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(url=ORIGIN + path, final_url=ORIGIN + (final or path), status=status, depth=1,
                           byte_count=10, title=None)


def test_every_linking_page_counts_and_the_first_are_named():
    book = LinkBook()
    for number in range(FIRST_INLINKS + 5):
        # Twice on one page is one inlink.
        book.page_fetched(page(f"/p{number}"), [ORIGIN + "/gone", ORIGIN + "/gone", ORIGIN + "/p0"], {})
    book.page_fetched(page("/gone", 404), [], {})
    count, first = book.inlinks(ORIGIN + "/gone")
    assert count == FIRST_INLINKS + 5
    assert first == [f"{ORIGIN}/p{number}" for number in range(FIRST_INLINKS)]
    (row,) = book.broken(book.verdicts([]))
    assert (row["url"], row["status"], row["reason"], row["inlinks"]) == (ORIGIN + "/gone", 404, "HTTP 404 Not Found", 15)


def test_links_added_later_count_once_per_page():
    book = LinkBook()
    book.page_fetched(page("/a"), [ORIGIN + "/x"], {})
    book.page_fetched(page("/b", final="/b2"), [], {})
    # check_links adds a page's resources and fragment links after it went through the walk.
    book.add_links(ORIGIN + "/a", [ORIGIN + "/x", ORIGIN + "/i.png", ORIGIN + "/i.png"])
    book.add_links(ORIGIN + "/b", [ORIGIN + "/i.png", ORIGIN + "/a#top"])
    book.add_links(ORIGIN + "/unknown", [ORIGIN + "/i.png"])
    assert book.inlinks(ORIGIN + "/x") == (1, [ORIGIN + "/a"])
    assert book.inlinks(ORIGIN + "/i.png") == (2, [ORIGIN + "/a", ORIGIN + "/b2"])
    assert [links for _, links in book.page_links()] == [
        [ORIGIN + "/x", ORIGIN + "/i.png"], [ORIGIN + "/i.png", ORIGIN + "/a#top"]]


@pytest.mark.parametrize(
    ("kind", "broken"),
    [("network", True), ("dns", True), ("redirect-loop", True), ("guard", True),
     ("robots", False), ("budget", False), ("off-origin", False), ("consumer", False)],
)
def test_which_failures_are_broken_links(kind, broken):
    book = LinkBook()
    book.page_fetched(page("/"), [ORIGIN + "/x"], {})
    failure = {"url": ORIGIN + "/x", "kind": kind, "reason": "why", "found_on": ORIGIN + "/"}
    rows = book.broken(book.verdicts([failure]))
    assert [(row["url"], row["kind"], row["inlinks"]) for row in rows] == ([(ORIGIN + "/x", kind, 1)] if broken else [])


def test_redirect_hops_are_kept_with_their_status():
    book = LinkBook()
    book.page_fetched(page("/old", final="/new"), [], {"redirect_urls": [ORIGIN + "/old", ORIGIN + "/mid"],
                                                      "redirect_reasons": [301, 302], "download_latency": 0.25})
    assert book.redirects == [(ORIGIN + "/old", ORIGIN + "/mid", 301), (ORIGIN + "/mid", ORIGIN + "/new", 302)]
    assert book.pages[0].latency == 0.25


def test_junit_is_valid_xml_whatever_a_reason_holds(tmp_path):
    book = LinkBook()
    book.page_fetched(page("/"), [ORIGIN + "/x", "https://other.test/"], {})
    failure = {"url": ORIGIN + "/x", "kind": "other", "reason": "bad \x00\x1b byte <&> ]]>", "found_on": ORIGIN + "/"}
    path = tmp_path / "links.xml"
    write_junit(str(path), book, book.verdicts([failure]))
    (suite,) = JUnitXml.fromfile(str(path))
    # The link to another origin was not checked: no case for it.
    (case,) = suite
    assert case.name == ORIGIN + "/x"
    assert case.result[0].message == "bad  byte <&> ]]>"


def test_a_redirect_to_a_known_page_is_a_checked_link_and_its_hops_are_kept():
    book = LinkBook()
    book.page_fetched(page("/"), [ORIGIN + "/old", ORIGIN + "/"], {})
    book.redirected_to_known(ORIGIN + "/", {"redirect_urls": [ORIGIN + "/old"], "redirect_reasons": [308]})
    assert book.redirects == [(ORIGIN + "/old", ORIGIN + "/", 308)]
    verdicts = book.verdicts([])
    assert [(verdict.url, verdict.status, verdict.broken) for _, links in book.checked_links(verdicts) for verdict in links] == [
        (ORIGIN + "/old", 308, False), (ORIGIN + "/", 200, False),
    ]
    assert book.broken(verdicts) == []
