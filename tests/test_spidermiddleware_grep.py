"""The grep consumer: lines of visible text, context, matching options, charsets and the match budget."""

from __future__ import annotations

import asyncio
import csv
import json
import random
from typing import Any, ClassVar

import pytest

from sitewalk import Match, Page, SitewalkError, grep
from sitewalk.absence import Absence
from sitewalk.links import parse_html
from sitewalk.text import page_lines, plain_lines, visible_lines
from tests.conftest import LOOPBACK, allow_loopback, run_cli

MATCH_FIELDS = ["url", "line", "text", "before", "after", "depth"]


def run(seed: str, pattern: str, **options: Any) -> tuple[list[Match], Any]:
    options.setdefault("delay", 0)
    return grep(seed, pattern, settings=LOOPBACK, **options)


def found(matches: list[Match], origin: str) -> list[tuple[str, int, str]]:
    return [(m.url.removeprefix(origin), m.line, m.text) for m in matches]


# -- the text of a page, unit by unit ---------------------------------------------------------


@pytest.mark.parametrize(
    ("html", "lines"),
    [
        ("<p>one</p><p>two</p>", ["one", "two"]),
        ("<div>a<div>b</div>c</div>", ["a", "b", "c"]),
        ("<p>one <b>bold</b><i>glued</i> end</p>", ["one boldglued end"]),
        ("<p>before<br>after</p>", ["before", "after"]),
        ("<p>a<script>hidden()</script>b</p>", ["ab"]),
        ("<p>a <!-- a comment --> b</p>", ["a b"]),
        ("<style>p {}</style><noscript>no js</noscript><template>t</template><p>shown</p>", ["shown"]),
        ("<p hidden>gone</p><p>kept</p>", ["kept"]),
        ("<p>fish &amp; chips&nbsp;&lt;3 caf&eacute; &#8364;</p>", ["fish & chips <3 café €"]),
        ("<p>  spread\n\t over\n lines  </p>", ["spread over lines"]),
        ("<p></p><p> </p><div>\n</div><p>only</p>", ["only"]),
        ("<table><tr><td>a</td><td>b</td></tr><tr><th>c</th><td>d</td></tr></table>", ["a b", "c d"]),
        ("<ul><li>one<li>two</ul>", ["one", "two"]),
        # <pre> lines keep their indentation and spacing (trailing whitespace goes).
        ("<pre>  x = 1\n\n  y = 2\n</pre>after", ["  x = 1", "  y = 2", "after"]),
        ('<pre><span class="k">async</span> <span class="k">with</span> lock:\n    <span>await</span>  x  \n</pre>',
         ["async with lock:", "    await  x"]),
        # A heading's permalink is not part of its text; other links are.
        ('<h2>Awaitables<a class="headerlink" href="#awaitables" title="Link">¶</a></h2>', ["Awaitables"]),
        ('<h2 id="a">A <a href="#a">§</a></h2><p>see <a href="#a">¶ 3</a></p>', ["A", "see ¶ 3"]),
        ("<pre>a\n<script>hidden()</script>b\n<!-- note -->c</pre>", ["a", "b", "c"]),
        ("<p>x&amp;lt;y &lt;z&gt; a&nbsp;b</p>", ["x&lt;y <z> a b"]),
        ("<h1>Title</h1>text<h2>Sub</h2>", ["Title", "text", "Sub"]),
    ],
)
def test_visible_lines(html, lines):
    document = f"<html><head><title>head title</title><meta name='x' content='y'></head><body>{html}</body></html>"
    assert visible_lines(parse_html(document)) == lines


def test_visible_lines_of_a_deeply_nested_page():
    depth = 2000  # beyond Python's recursion limit (libxml2 stops nesting at ~2000)
    document = "<div>" * depth + "deep" + "</div>" * depth
    assert visible_lines(parse_html(document)) == ["deep"]


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("a\nb\n", ["a", "b"]),
        ("a\r\nb\rc", ["a", "b", "c"]),
        ("a\n\n  b  \n", ["a", "", "  b  "]),
        ("page\fbreak\u2028same line", ["page\fbreak\u2028same line"]),
        ("", []),
    ],
)
def test_plain_lines(text, lines):
    assert plain_lines(text) == lines


def _page(content_type: str | None, body: bytes) -> Page:
    headers = {"Content-Type": content_type} if content_type else {}
    media_type = content_type.split(";")[0] if content_type else None
    return Page(
        url="http://example.com/", final_url="http://example.com/", status=200, byte_count=len(body),
        depth=0, content_type=media_type, title=None, found_on=None, headers=headers, body=body,
    )


@pytest.mark.parametrize(
    ("content_type", "body", "lines"),
    [
        ("text/html; charset=utf-8", b"<p>a</p><p>b</p>", ["a", "b"]),
        ("application/xhtml+xml", b"<html><body><p>x</p></body></html>", ["x"]),
        ("text/plain; charset=iso-8859-1", "café\n".encode("latin-1"), ["café"]),
        ("text/html", '<meta charset="windows-1251"><p>Привет</p>'.encode("cp1251"), ["Привет"]),
        ("text/plain", "BOM utf-16".encode("utf-16"), ["BOM utf-16"]),
        ("text/csv", b"a,b\n1,2\n", ["a,b", "1,2"]),
        ("application/json", b'{"a": 1}', ['{"a": 1}']),
        ("application/ld+json", b'{"b": 2}', ['{"b": 2}']),
        ("application/octet-stream", b"needle", None),
        ("image/png", b"\x89PNG needle", None),
        ("application/pdf", b"%PDF needle", None),
        (None, b"needle", None),
    ],
)
def test_page_lines_by_type_and_charset(content_type, body, lines):
    assert page_lines(_page(content_type, body)) == lines


# -- grep over real HTTP -------------------------------------------------------------------------

ARTICLE = """
<p>alpha</p>
<script>var needle = "in a script";</script>
<style>.needle { color: red }</style>
<!-- a needle in a comment -->
<div>beta <b>needle</b> &amp; gamma</div>
<p>delta<br>epsilon</p>
<p>zeta</p>
"""


@pytest.mark.parametrize(
    ("context", "before", "after"),
    [
        (2, ["Home", "alpha"], ["delta", "epsilon"]),
        (1, ["alpha"], ["delta"]),
        (0, [], []),
        (9, ["Home", "alpha"], ["delta", "epsilon", "zeta", "/next"]),
    ],
)
def test_visible_text_lines_and_context(make_site, context, before, after):
    site = make_site({"/": {"title": "Home", "body": ARTICLE, "links": ["/next"]}, "/next": {"title": "Next"}})
    matches, report = run(site("/"), "needle", context=context)
    # Lines: Home (the h1; the <title> in <head> is not shown), alpha, beta..., delta, epsilon, zeta, /next
    assert matches == [Match(
        url=site("/"), line=3, text="beta needle & gamma", before=before, after=after, depth=0,
    )]
    assert site.paths() == ["/", "/next"]
    assert report.fetched == 2 and report.stopped is None


def test_line_numbers_and_depth_across_pages(make_site):
    site = make_site({
        "/": {"title": "Home", "body": "<p>needle one</p><p>x</p><p>needle two</p>", "links": ["/a"]},
        "/a": {"title": "A", "body": "<p>y</p><p>z</p><p>a needle</p>"},
    })
    matches, _ = run(site("/"), "needle", context=0)
    assert found(matches, site.url) == [("/", 2, "needle one"), ("/", 4, "needle two"), ("/a", 4, "a needle")]
    assert [m.depth for m in matches] == [0, 0, 1]


def test_the_final_url_is_reported(make_site):
    site = make_site({
        "/": {"links": ["/old"]},
        "/old": {"status": 301, "headers": {"Location": "/new"}},
        "/new": {"body": "<p>moved needle</p>"},
    })
    matches, _ = run(site("/"), "needle")
    assert [m.url for m in matches] == [site("/new")]


@pytest.mark.parametrize(
    ("options", "texts"),
    [
        ({}, ["needle"]),
        ({"ignore_case": True}, ["Needle", "needle", "NEEDLE"]),
        ({"ignore_case": "true"}, ["Needle", "needle", "NEEDLE"]),
    ],
)
def test_ignore_case(make_site, options, texts):
    site = make_site({"/": {"body": "<p>Needle</p><p>needle</p><p>NEEDLE</p><p>noodle</p>"}})
    matches, _ = run(site("/"), "needle", **options)
    assert [m.text for m in matches] == texts


@pytest.mark.parametrize(
    ("pattern", "options", "texts"),
    [
        ("a.b(", {"fixed_strings": True}, ["call a.b(x)"]),
        ("a.b", {"fixed_strings": True}, ["call a.b(x)"]),
        ("a.b", {}, ["call a.b(x)", "call aXb(y)"]),
        ("A.B(", {"fixed_strings": True, "ignore_case": True}, ["call a.b(x)"]),
        ("[x]", {"fixed_strings": True}, ["[x] marks"]),
    ],
)
def test_fixed_strings(make_site, pattern, options, texts):
    site = make_site({"/": {"body": "<p>call a.b(x)</p><p>call aXb(y)</p><p>[x] marks</p>"}})
    matches, _ = run(site("/"), pattern, **options)
    assert [m.text for m in matches] == texts


def test_invalid_regex_is_an_error_before_any_request(make_site):
    site = make_site({"/": {"body": "<p>a.b(</p>"}})
    with pytest.raises(SitewalkError, match=r"pattern 'a\.b\(' is not a valid regular expression.*fixed_strings=True"):
        run(site("/"), "a.b(")
    assert site.requests() == []


def test_plain_text_page_is_searched_by_its_own_lines(make_site):
    site = make_site({
        "/": {"title": "Home", "links": ["/notes.txt"]},
        "/notes.txt": {"content_type": "text/plain; charset=utf-8", "body": "first\n\nthird needle\n  <p>fourth</p>\n"},
    })
    matches, _ = run(site("/"), "needle")
    assert matches == [Match(
        url=site("/notes.txt"), line=3, text="third needle", before=["first", ""], after=["  <p>fourth</p>"], depth=1,
    )]


def test_charsets_declared_in_the_header_or_in_meta(make_site):
    site = make_site({
        "/": {"title": "Home", "links": ["/cp1251", "/latin1.txt", "/meta"]},
        "/cp1251": {
            "content_type": "text/html; charset=windows-1251", "encoding": "windows-1251",
            "body": "<p>Привет, мир</p>",
        },
        "/latin1.txt": {
            "content_type": "text/plain; charset=iso-8859-1", "encoding": "iso-8859-1", "body": "crème brûlée\n",
        },
        "/meta": {
            "content_type": "text/html", "encoding": "iso-8859-1",
            "head": '<meta charset="iso-8859-1">', "title": "Meta", "body": "<p>naïve café</p>",
        },
    })
    matches, _ = run(site("/"), "мир|brûlée|café")
    assert found(matches, site.url) == [
        ("/cp1251", 1, "Привет, мир"), ("/latin1.txt", 1, "crème brûlée"), ("/meta", 2, "naïve café"),
    ]


def test_binary_pages_are_fetched_but_not_searched(make_site):
    site = make_site({
        "/": {"title": "Home", "body": "<p>needle at home</p>", "links": ["/blob", "/img.png", "/doc.pdf"]},
        "/blob": {"content_type": "application/octet-stream", "body": "needle\nneedle\n"},
        "/img.png": {"content_type": "image/png", "body": "needle"},
        "/doc.pdf": {"content_type": "application/pdf", "body": "%PDF-1.4 needle"},
    })
    matches, report = run(site("/"), "needle")
    assert found(matches, site.url) == [("/", 2, "needle at home")]
    assert site.paths() == ["/", "/blob", "/img.png", "/doc.pdf"]
    assert report.fetched == 4


def test_error_pages_are_not_searched(make_site):
    site = make_site({
        "/": {"title": "Home", "links": ["/gone", "/broken"]},
        "/broken": {"status": 500, "body": "<p>needle in an error page</p>"},
    })
    matches, report = run(site("/"), "needle|not found")
    assert matches == []
    assert site.paths() == ["/", "/gone", "/broken"] and report.fetched == 3


BUDGET_SITE = {
    "/": {"title": "Home", "body": "<p>needle 1</p>", "links": ["/a", "/b", "/c", "/d"]},
    "/a": {"title": "A", "body": "<p>nothing here</p>"},
    "/b": {"title": "B", "body": "<p>needle 2</p>"},
    "/c": {"title": "C", "body": "<p>needle 3</p><p>needle 4</p>"},
    "/d": {"title": "D", "body": "<p>needle 5</p>"},
}


def test_max_matches_is_a_global_budget_and_stops_the_walk(make_site):
    site = make_site(BUDGET_SITE)
    matches, report = run(site("/"), "needle", max_matches=3, context=0)
    assert [m.text for m in matches] == ["needle 1", "needle 2", "needle 3"]
    # The 3rd match was on /c: nothing after it was requested.
    assert site.paths() == ["/", "/a", "/b", "/c"]
    assert report.stopped == "callback"
    assert report.fetched == 4
    assert report.unvisited == [site("/d")]


def test_max_matches_caps_the_matches_of_one_page(make_site):
    site = make_site({"/": {"body": "".join(f"<p>needle {n}</p>" for n in range(10))}})
    matches, report = run(site("/"), "needle", max_matches=4)
    assert [m.text for m in matches] == ["needle 0", "needle 1", "needle 2", "needle 3"]
    # The budget ran out on the last page there was: the walk was not cut short.
    assert report.stopped is None and site.paths() == ["/"]


def test_a_large_budget_still_stops_exactly_where_it_runs_out(make_site):
    # 20 matches per page of ~450 bytes, a budget of 1000: while the budget left is larger than
    # the pages in hand could use up, the next page may download while they are searched; near
    # the end it may not. The walk must stop on the 50th page and request nothing after it.
    pages = [f"/p{n}" for n in range(60)]
    spec: dict[str, Any] = {"/": {"title": "Hub", "links": pages}}
    spec.update({path: {"title": path, "body": "<p>needle</p>" * 20} for path in pages})
    site = make_site(spec)
    matches, report = run(site("/"), "needle", max_matches=1000, max_pages=100, context=0)
    assert len(matches) == 1000
    assert site.paths() == ["/", *pages[:50]]
    assert report.stopped == "callback"
    assert report.fetched == 51
    assert report.unvisited == [site(path) for path in pages[50:]]


def test_fewer_matches_than_the_budget_walk_everything(make_site):
    site = make_site(BUDGET_SITE)
    matches, report = run(site("/"), "needle", max_matches=50)
    assert len(matches) == 5
    assert site.paths() == ["/", "/a", "/b", "/c", "/d"] and report.stopped is None


# -- grep from the command line, with feeds --------------------------------------------------------


def test_cli_jsonl_feed_holds_matches_only_and_the_budget_holds(make_site, tmp_path):
    site = make_site(BUDGET_SITE)
    result = run_cli(
        "-a", f"seed={site('/')}", "-a", "grep=NEEDLE \\d", "-a", "ignore_case=true", "-a", "max_matches=3",
        "-a", "context=1", "-a", "delay=0", "-a", "report=r.json", "-O", "m.jsonl", *allow_loopback(), cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    items = [json.loads(line) for line in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert [list(item) for item in items] == [MATCH_FIELDS] * 3
    assert items[0] == {"url": site("/"), "line": 2, "text": "needle 1", "before": ["Home"], "after": ["/a"], "depth": 0}
    assert [item["text"] for item in items] == ["needle 1", "needle 2", "needle 3"]
    assert site.paths() == ["/", "/a", "/b", "/c"]
    report = json.loads((tmp_path / "r.json").read_text())
    # The report counts every page fetched, matching or not.
    assert report["fetched"] == 4 and report["stopped"] == "callback"


def test_cli_csv_feed_keeps_all_columns(make_site, tmp_path):
    site = make_site({
        "/": {"title": "Home", "body": "<p>first, with a comma</p><p>the needle</p><p>last</p>", "links": ["/a"]},
        "/a": {"title": "A", "body": "<p>needle again</p>"},
    })
    result = run_cli(
        "-a", f"seed={site('/')}", "-a", "grep=needle", "-a", "delay=0", "-O", "m.csv", *allow_loopback(), cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    with (tmp_path / "m.csv").open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
    assert reader.fieldnames == MATCH_FIELDS
    assert rows[0] == {
        "url": site("/"), "line": "3", "text": "the needle",
        # Lists are JSON arrays (sitewalk.exporters): a line with a comma stays one line.
        "before": '["Home", "first, with a comma"]', "after": '["last", "/a"]', "depth": "0",
    }
    assert rows[1] == {"url": site("/a"), "line": "2", "text": "needle again", "before": '["A"]', "after": "[]", "depth": "1"}
    assert len(rows) == 2


def test_cli_invalid_regex_is_one_line_exit_2_and_no_request(make_site, tmp_path):
    site = make_site({"/": {"body": "<p>x</p>"}})
    result = run_cli(
        "-a", f"seed={site('/')}", "-a", "grep=a.b(", "-a", "delay=0", "-O", "m.jsonl", *allow_loopback(), cwd=tmp_path,
    )
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("sitewalk: error:")]
    assert len(errors) == 1 and "grep 'a.b('" in errors[0] and "not a valid regular expression" in errors[0]
    assert "Traceback" not in result.stderr
    assert site.requests() == []
    assert not (tmp_path / "m.jsonl").exists()


# -- what the walk's gate learns before a page is read ------------------------------------------


@pytest.mark.parametrize(
    ("body", "can_match"),
    [
        ("<p>no such word here</p>", False),
        ("<p>a Mersenne twister</p>", True),
        ("<p>Mer<b>senne</b></p>", True),  # cut by a tag
        ("<p>Mer<!-- x > y -->senne</p>", True),  # by a comment holding a >
        ("<p>Mer<script>var x = 1;</script>senne</p>", True),  # by an element not shown
        ("<p>Mer<span hidden>x</span>senne</p>", True),
        ("<p>Mers&#101;nne &amp; co</p>", True),  # a character reference inside it
        ("<p>Mers&eacute;nne</p>", False),  # a reference to another character
        ("<p>Mer\0senne</p>", True),  # NUL is dropped by the parser
        ("<p>Mer</p><p>senne</p>", True),  # two lines: a false alarm, never a miss
        ("<a title='Mersenne'>x</a>", True),  # in markup: a false alarm
    ],
)
def test_a_page_that_cannot_match_is_told_from_its_source(body, can_match):
    absence = Absence.of("Mersenne", fixed_strings=False, ignore_case=False)
    assert absence is not None
    page = _page("text/html; charset=utf-8", f"<html><body>{body}</body></html>".encode())
    lines = page_lines(page)
    assert lines is not None
    assert absence.proven(page) is not can_match
    # Never a miss: where a line matches, the page is not called unmatchable.
    if any("Mersenne" in line for line in lines):
        assert can_match


@pytest.mark.parametrize(
    ("pattern", "options", "plain"),
    [
        ("Mersenne", {}, True),
        ("a.b(", {"fixed_strings": True}, True),
        ("two words", {}, True),
        ("[Dd]eprecated", {}, False),
        ("a.b", {}, False),
        ("&amp;", {}, False),
    ],
)
def test_only_plain_text_patterns_are_told_apart_before_reading(pattern, options, plain):
    absence = Absence.of(pattern, fixed_strings=options.get("fixed_strings", False), ignore_case=False)
    assert (absence is not None) is plain


def test_ignore_case_follows_pythons_case_rules():
    absence = Absence.of("kelvin", fixed_strings=False, ignore_case=True)
    assert absence is not None
    # KELVIN SIGN matches k when case is ignored.
    assert absence.proven(_page("text/html; charset=utf-8", "<p>\u212aELVIN</p>".encode())) is False
    assert absence.proven(_page("text/plain; charset=utf-8", b"KELVIN")) is False
    assert absence.proven(_page("text/plain; charset=utf-8", b"celsius")) is True
    assert absence.proven(_page("image/png", b"kelvin")) is True  # binary pages are not searched


class SlowConsumer:
    """An item pipeline taking 0.2 s per page; notes how many pages the site had served by then."""

    site: Any = None
    served: ClassVar[list[int]] = []

    async def process_item(self, item: Any) -> Any:
        if isinstance(item, Page):
            await asyncio.sleep(0.2)
            SlowConsumer.served.append(len(SlowConsumer.site.paths()))
        return item


def test_pages_that_cannot_match_download_ahead_and_the_budget_still_stops_exactly(make_site):
    pages = [f"/p{n}" for n in range(8)]
    spec: dict[str, Any] = {"/": {"title": "Hub", "links": pages}}
    spec.update({path: {"title": path, "body": "<p>nothing</p>"} for path in pages})
    spec["/p5"] = {"title": "p5", "body": "<p>needle</p><p>needle</p>"}
    site = make_site(spec)
    SlowConsumer.site, SlowConsumer.served = site, []
    settings = {**LOOPBACK, "ITEM_PIPELINES": {"tests.test_spidermiddleware_grep.SlowConsumer": 900}}
    matches, report = grep(site("/"), "needle", max_matches=2, delay=0, context=0, settings=settings)
    assert [m.url for m in matches] == [site("/p5")] * 2
    # Nothing after the page that spent the budget was requested ...
    assert site.paths() == ["/", *pages[:6]]
    assert report.stopped == "callback" and report.unvisited == [site(p) for p in pages[6:]]
    # ... and pages downloaded while the earlier ones were consumed: none of them could match.
    ahead = [served - consumed for consumed, served in enumerate(SlowConsumer.served, start=1)]
    assert max(ahead) > 0, ahead


def test_never_a_miss_on_pages_made_of_pieces_of_the_word():
    """Pages mixing parts of the word with the markup that can cut it: wherever a visible line
    holds the word, the page is not called unmatchable (seeded, so every run tries the same)."""
    rng = random.Random(7)
    cuts = ["", "", "<b>", "</b>", "<i></i>", "<!-- > -->", "<!---->", "<br>", "<wbr>", "<span hidden>x</span>",
            "<script>s</script>", "<style>p{}</style>", "\0", " ", "\n", "<td>", "<p>", "&lt;", "&nbsp;"]
    spellings = {"e": ["e", "&#101;", "&#x65;"], "M": ["M", "&#x4D;"], "n": ["n", "&#110;"]}
    absence = Absence.of("Mersenne", fixed_strings=False, ignore_case=False)
    assert absence is not None
    matched = 0
    for _ in range(2000):
        word = "".join(rng.choice(spellings.get(char, [char])) + (rng.choice(cuts) if rng.random() < 0.3 else "")
                       for char in "Mersenne")
        body = rng.choice(cuts) + word + rng.choice(cuts)
        page = _page("text/html; charset=utf-8", f"<html><body><p>{body}</p></body></html>".encode())
        if any("Mersenne" in line for line in page_lines(page) or []):
            matched += 1
            assert not absence.proven(page), body
    assert matched > 900, matched  # the word was made, many ways
