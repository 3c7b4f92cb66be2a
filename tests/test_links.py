"""Link and title extraction, on real pages (the Python 3.11 docs) recorded with scrapy-mock.

The cassettes in tests/fixtures/cassettes were recorded from the Debian package python3.11-doc
served on 127.0.0.1:8765; with CI=true scrapy-mock replays them and never touches the network.
To re-record: serve that directory on port 8765 and delete the cassette.
"""

from __future__ import annotations

from urllib.parse import urljoin

import pytest
from lxml import html as lxml_html

from sitewalk.links import page_links, page_title, parse_html

DOCS = "http://127.0.0.1:8765/"


def reference_links(body: bytes, url: str) -> list[str]:
    """The same rules written independently with lxml's parser and its link resolution (urljoin):
    first occurrences, links back to the page itself left out."""
    tree = lxml_html.fromstring(body, base_url=url)
    tree.make_links_absolute(url, resolve_base_href=True)
    links = []
    for element in tree.iter("a", "area"):
        href = element.get("href")
        if href is None or "nofollow" in (element.get("rel") or "").lower().split():
            continue
        if href.split(":", 1)[0] in ("http", "https"):
            links.append(href.split("#", 1)[0])
    return [link for link in dict.fromkeys(links) if link != url]


@pytest.mark.parametrize(
    ("url", "title", "at_least"),
    [
        (DOCS + "library/functions.html", "Built-in Functions \u2014 Python 3.11.2 documentation", 50),
        (DOCS + "tutorial/index.html", "The Python Tutorial \u2014 Python 3.11.2 documentation", 25),
    ],
    ids=["functions", "tutorial"],
)
def test_links_of_real_pages(response, url, title, at_least):
    tree = parse_html(response.body)
    links = page_links(tree, response.url)
    assert page_title(tree) == title
    assert len(set(links)) >= at_least
    assert list(dict.fromkeys(links)) == reference_links(response.body, response.url)
    assert all(link.startswith(("http://127.0.0.1:8765/", "https://")) for link in links)
    assert not any("#" in link for link in links)
    # Relative links such as "../reference/datamodel.html" are resolved against the page.
    assert urljoin(url, "../glossary.html") in links


@pytest.fixture
def url(request):
    return request.node.callspec.params["url"]


def links_of(markup: str, url: str = "http://site.test/dir/page.html") -> list[str]:
    return page_links(parse_html(markup), url)


@pytest.mark.parametrize(
    ("markup", "expected"),
    [
        ('<a href="a.html">', ["http://site.test/dir/a.html"]),
        ('<a href="/b#frag">', ["http://site.test/b"]),
        ('<a href="#only-fragment"><a href=""><a href=" #x">', []),  # the page itself
        ('<head><base href="/other/"></head><a href="#f">', ["http://site.test/other/"]),
        ('<a href=" \n c.html\t ">', ["http://site.test/dir/c.html"]),
        ('<a href="sp ace.html">', ["http://site.test/dir/sp%20ace.html"]),
        ('<a href="x" rel="nofollow">', []),
        ('<a href="x" rel="noopener NOFOLLOW">', []),
        ('<a href="javascript:go()"><a href="mailto:a@b"><a href="ftp://h/f"><a href="data:,x">', []),
        ('<a href="HTTPS://other.test/">', ["https://other.test/"]),
        ('<map><area href="area.html"></map>', ["http://site.test/dir/area.html"]),
        ('<a name="anchor-without-href">', []),
        ('<a href="file.tar.gz"><a href="img.PNG">', ["http://site.test/dir/file.tar.gz", "http://site.test/dir/img.PNG"]),
        ('<head><base href="/base/"><base href="/ignored/"></head><a href="x">', ["http://site.test/base/x"]),
        ('<head><base target="_blank"><base href="http://cdn.test/b/"></head><a href="y">', ["http://cdn.test/b/y"]),
        ('<head><meta name="ROBOTS" content="noindex,nofollow"></head><a href="x">', []),
        ('<head><meta name="robots" content="none"></head><a href="x">', []),
        ('<head><meta name="robots" content="noindex"></head><a href="x">', ["http://site.test/dir/x"]),
        ('<a href="a">1</a><a href="a">2</a><a href="./a">3</a>', ["http://site.test/dir/a", "http://site.test/dir/a"]),
        # One href, whatever its fragment: resolved once, in the order of its first appearance.
        ('<a href="b#1"><a href="a#x"><a href="b"><a href="a#y">', ["http://site.test/dir/b", "http://site.test/dir/a"]),
        ('<a href="q?x=1#f"><a href="q?x=1">', ["http://site.test/dir/q?x=1"]),
        # A '#' inside what looks like a host or a query still starts the fragment.
        ('<a href="//h.test#x@evil.test/p">', ["http://h.test/"]),
        ('<a href="p?#">', ["http://site.test/dir/p?"]),
        # The first <base href> applies to links before it too, wherever it is.
        ('<a href="x"><p><base href="/late/"><a href="#f">', ["http://site.test/late/x", "http://site.test/late/"]),
        ('<a href="x"><p><meta name="robots" content="nofollow">', []),
    ],
)
def test_link_rules(markup, expected):
    assert links_of(markup) == expected


@pytest.mark.parametrize(
    ("markup", "title"),
    [
        ("<title>  Two\n  words </title>", "Two words"),
        ("<title></title>", None),
        ("<p>no title</p>", None),
        ("<title>A &amp; B</title>", "A & B"),
    ],
)
def test_title(markup, title):
    assert page_title(parse_html(markup)) == title


@pytest.mark.parametrize(
    ("encoding", "expected"),
    [
        (None, "http://site.test/p%C3%A9?w=caf%C3%A9&j=%E6%97%A5"),
        ("utf-8", "http://site.test/p%C3%A9?w=caf%C3%A9&j=%E6%97%A5"),
        ("utf-16", "http://site.test/p%C3%A9?w=caf%C3%A9&j=%E6%97%A5"),
        # A character the encoding lacks is sent as &#N;, percent-encoded (the URL standard).
        ("cp1252", "http://site.test/p%C3%A9?w=caf%E9&j=%26%2326085%3B"),
        ("shift_jis", "http://site.test/p%C3%A9?w=caf%26%23233%3B&j=%93%FA"),
        ("no-such-codec", "http://site.test/p%C3%A9?w=caf%C3%A9&j=%E6%97%A5"),
    ],
)
def test_a_query_is_encoded_in_the_pages_encoding_the_path_in_utf8(encoding, expected):
    tree = parse_html('<a href="/pé?w=café&j=日">x</a><a href="/ascii?q=1">y</a>')
    assert page_links(tree, "http://site.test/", encoding) == [expected, "http://site.test/ascii?q=1"]
