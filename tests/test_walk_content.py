"""content=markdown|text|html and main_content: what is on the pages, in each index item, over real HTTP."""

from __future__ import annotations

import json
import re

import pytest

from sitewalk import walk
from sitewalk.pagereader import HELPER_MIN_BYTES
from tests.conftest import LOOPBACK, allow_loopback, run_cli

ARTICLE = """
<h1>Tasks<a class="headerlink" href="#tasks" title="Link to this heading">¶</a></h1>
<p>Run <em>many</em> things, see <a href="/other">the other page</a>.</p>
<ul><li>first point</li><li>second point</li></ul>
<table><tr><th>name</th><th>meaning</th></tr><tr><td>gather</td><td>wait for all</td></tr></table>
<div class="highlight"><pre><span class="k">async</span> <span class="k">with</span> group:
    <span class="n">task</span> = start()
</pre></div>
"""
PAGE = ("<!DOCTYPE html><html><head><title>Tasks</title></head><body>"
        "<header><a href='/'>Site name</a></header><nav><a href='/other'>Sidebar link</a></nav>"
        f"<main>{ARTICLE}</main><footer>Copyright footer</footer></body></html>")
SITE = {
    "/": {"body": PAGE},
    "/other": {"body": "<html><body><div class='sphinxsidebar' role='navigation'><a href='/'>Side</a></div>"
                       "<div class='body'><p>Other body</p>"
                       "</div><div class='footer'>Foot</div></body></html>"},
    "/notes.txt": {"content_type": "text/plain", "body": "  plain\ttext\n"},
    "/logo.png": {"content_type": "image/png", "body": "PNG"},
    "/gone": {"status": 404, "body": "<p>not here</p>"},
}


def index(make_site, tmp_path, *args: str) -> tuple[object, dict[str, dict]]:
    site = make_site({**SITE, "/": {"body": PAGE.replace("</main>", "</main><a href='/notes.txt'>n</a>"
                                                         "<a href='/logo.png'>l</a><a href='/gone'>g</a>")}})
    result = run_cli("-a", f"seed={site('/')}", "-a", "delay=0", "-O", "pages.jsonl", *allow_loopback(), *args,
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    items = [json.loads(line) for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
    return site, {item["url"].rsplit("/", 1)[1]: item for item in items}


def test_markdown_holds_the_heading_list_table_link_and_indented_code(make_site, tmp_path):
    site, items = index(make_site, tmp_path, "-a", "content=markdown")
    markdown = items[""]["content"]
    assert "# Tasks\n" in markdown and "¶" not in markdown
    assert f"Run *many* things, see [the other page]({site('/other')})." in markdown
    assert "- first point\n- second point" in markdown
    assert re.search(r"\| name +\| meaning +\|\n\| -+ \| -+ \|\n\| gather \| wait for all \|", markdown)
    assert "```\nasync with group:\n    task = start()\n```" in markdown
    # The whole page: its header, navigation and footer too.
    assert "Sidebar link" in markdown and "Copyright footer" in markdown
    # Text pages as they are, binary pages and error pages without content.
    assert items["notes.txt"]["content"] == "  plain\ttext\n"
    assert items["logo.png"]["content"] is None and items["gone"]["content"] is None
    assert site.paths() == ["/", "/other", "/notes.txt", "/logo.png", "/gone"]


def test_main_content_keeps_the_article_and_drops_navigation_header_and_footer(make_site, tmp_path):
    _, items = index(make_site, tmp_path, "-a", "content=markdown", "-a", "main_content=true", "-a", "max_depth=0")
    markdown = items[""]["content"]
    assert markdown.startswith("# Tasks\n") and "```\nasync with group:\n    task = start()\n```" in markdown
    for gone in ("Site name", "Sidebar link", "Copyright footer"):
        assert gone not in markdown


# Targets as pages write them: relative, root-relative, a query only, up a directory, to a place
# on this page, to a place on another page, to the page itself with its query, off the site.
LINKS = """<main><h1>Links</h1>
<p><a href="sibling.html">a sibling</a> <a href="/top">the top</a> <a href="?page=2">page two</a>
<a href="../up.html">up</a> <a href="#usage">usage</a> <a href="sibling.html#x">x on the sibling</a>
<a href="page.html?v=1#usage">usage again</a> <a href="https://example.org/">elsewhere</a>
<a href="mailto:ops@example.org">mail</a></p>
<p><img src="img/logo.png" alt="logo"> <img src="//cdn.example.org/i.png" alt="cdn"></p>
<h2 id="usage">Usage</h2></main>"""


@pytest.mark.parametrize("main", ["true", "false"])
def test_markdown_link_and_image_targets_are_absolute_and_same_page_places_stay_fragments(make_site, tmp_path, main):
    # The seed redirects: targets resolve against the page's final URL, not the URL asked for.
    site = make_site({"/docs/": {"status": 302, "headers": {"Location": "/docs/guide/page.html?v=1"}},
                      "/docs/guide/page.html?v=1": {"body": f"<html><body>{LINKS}</body></html>"}})
    result = run_cli("-a", f"seed={site('/docs/')}", "-a", "max_depth=0", "-a", "content=markdown",
                     "-a", f"main_content={main}", "-O", "pages.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (item,) = map(json.loads, (tmp_path / "pages.jsonl").read_text().splitlines())
    markdown, guide = item["content"], site("/docs/guide/")
    for expected in (f"[a sibling]({guide}sibling.html)", f"[the top]({site('/top')})",
                     f"[page two]({guide}page.html?page=2)", f"[up]({site('/docs/up.html')})", "[usage](#usage)",
                     f"[x on the sibling]({guide}sibling.html#x)", "[usage again](#usage)",
                     "[elsewhere](https://example.org/)", "[mail](mailto:ops@example.org)",
                     f"![logo]({guide}img/logo.png)", "![cdn](http://cdn.example.org/i.png)"):
        assert expected in markdown
    assert site.paths() == ["/docs/", "/docs/guide/page.html?v=1"]


def test_targets_resolve_against_the_base_href_and_a_place_on_another_document_is_absolute(make_site, tmp_path):
    site = make_site({"/a/page.html": {"head": '<base href="/b/">', "title": "Based",
                                       "body": '<a href="next.html">next</a> <a href="#top">top</a> <img src="i.png" alt="i">'}})
    pages = []
    walk(site("/a/page.html"), max_depth=0, delay=0, on_page=pages.append, settings=LOOPBACK)
    markdown = pages[0].content("markdown")
    # With a base, "#top" is a place in the base's document, as a browser follows it.
    for expected in (f"[next]({site('/b/next.html')})", f"[top]({site('/b/')}#top)", f"![i]({site('/b/i.png')})"):
        assert expected in markdown


CODE = """<main><h1>Code</h1>
<div class="highlight-python3 notranslate"><div class="highlight"><pre><span class="k">import</span> os</pre></div></div>
<div class="highlight-default notranslate"><div class="highlight"><pre>plain = True</pre></div></div>
<pre><code class="language-rust">fn main() {}</code></pre>
<pre class="lang-sql">SELECT 1;</pre>
<div class="sourceCode" id="cb1"><pre class="sourceCode haskell"><code class="sourceCode haskell">main = pure ()</code></pre></div>
<pre><code class="hljs">no language</code></pre></main>"""


def test_code_fences_carry_the_language_the_page_names(make_site, tmp_path):
    site = make_site({"/": {"body": f"<html><body>{CODE}</body></html>"}})
    result = run_cli("-a", f"seed={site('/')}", "-a", "content=markdown", "-a", "main_content=true",
                     "-O", "pages.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (item,) = map(json.loads, (tmp_path / "pages.jsonl").read_text().splitlines())
    markdown = item["content"]
    for fence in ("```python3\nimport os\n```", "```\nplain = True\n```", "```rust\nfn main() {}\n```",
                  "```sql\nSELECT 1;\n```", "```haskell\nmain = pure ()\n```", "```\nno language\n```"):
        assert fence in markdown



def test_links_in_a_code_block_leave_only_their_text_in_its_fence(make_site):
    # Sphinx's grammar productions and gtk-doc's signatures link their names; a fence shows
    # Markdown link syntax as written, so the block keeps the names alone (outside it, links stay).
    site = make_site({"/": {"body": (
        '<main><p>See <a href="/types">types</a>.</p>'
        '<pre><strong id="g-stmt">stmt</strong> ::= <a href="#g-if">if_stmt</a> | <a href="#g-for">for_stmt</a></pre>'
        '<pre class="programlisting">void\ng_atomic_int_inc (<a href="/types#gint">gint</a> *atomic);</pre></main>')}})
    pages = []
    walk(site("/"), max_depth=0, delay=0, on_page=pages.append, settings=LOOPBACK)
    for main in (False, True):
        markdown = pages[0].content("markdown", main_content=main)
        assert "```\nstmt ::= if_stmt | for_stmt\n```" in markdown
        assert "```\nvoid\ng_atomic_int_inc (gint *atomic);\n```" in markdown
        assert f"See [types]({site('/types')})." in markdown


def test_text_is_one_line_per_block_with_pre_indentation(make_site, tmp_path):
    _, items = index(make_site, tmp_path, "-a", "content=text", "-a", "main_content=true")
    assert items[""]["content"] == "\n".join([
        "Tasks", "Run many things, see the other page.", "first point", "second point", "name meaning",
        "gather wait for all", "async with group:", "    task = start()",
    ])
    # A page without <main>: the body less its navigation and the furniture that ends it.
    assert items["other"]["content"] == "Other body"


def test_html_is_the_decoded_body(make_site, tmp_path):
    _, items = index(make_site, tmp_path, "-a", "content=html", "-a", "max_depth=0")
    assert items[""]["content"].startswith("<!DOCTYPE html><html><head><title>Tasks</title>")


def test_without_content_index_items_have_no_content_field(make_site, tmp_path):
    _, items = index(make_site, tmp_path, "-a", "max_depth=0")
    assert "content" not in items[""]


@pytest.mark.parametrize(("args", "message"), [
    (("-a", "content=pdf"), "content must be one of markdown, text, html, got 'pdf'"),
    (("-a", "main_content=true"), "main_content chooses what content holds: give content=markdown"),
    (("-a", "content=text", "-a", "grep=x"), "content is a field of index items"),
])
def test_content_arguments_are_checked_before_any_request(make_site, tmp_path, args, message):
    site = make_site(SITE)
    result = run_cli("-a", f"seed={site('/')}", *args, *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 2 and message in result.stderr
    assert site.paths() == []


def test_the_api_page_offers_the_same_content(make_site):
    site = make_site(SITE)
    pages = []
    walk(site("/"), max_depth=0, delay=0, on_page=pages.append, settings=LOOPBACK)
    page = pages[0]
    assert "```\nasync with group:\n    task = start()\n```" in page.content("markdown", main_content=True)
    assert page.content("text", main_content=True).startswith("Tasks\nRun many things")
    assert page.content("html") == PAGE


def test_large_pages_read_by_helper_processes_have_the_same_content(make_site, tmp_path):
    filler = "<p>" + "filler words " * 2000 + "</p>"
    assert len(filler) > HELPER_MIN_BYTES
    big = PAGE.replace("</main>", filler + "</main>")
    # Helpers start with the first large page and read those after it.
    site = make_site({"/": {"body": big.replace("</main>", "".join(f"<a href='/{i}'>{i}</a>" for i in range(6))
                                                + "</main>")},
                      **{f"/{i}": {"body": big} for i in range(6)}})
    result = run_cli("-a", f"seed={site('/')}", "-a", "content=markdown", "-a", "main_content=true",
                     "-a", "delay=0", "-O", "pages.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    items = {item["url"]: item for item in map(json.loads, (tmp_path / "pages.jsonl").read_text().splitlines())}
    assert items[site("/")]["content"].startswith("# Tasks\n")
    for item in (items[site(f"/{i}")] for i in range(6)):
        markdown = item["content"]
        assert markdown.startswith("# Tasks\n") and "```\nasync with group:\n    task = start()\n```" in markdown
        assert "Copyright footer" not in markdown and markdown.rstrip().endswith("filler words")


NEWS = """<!DOCTYPE html><html><head><title>Harbour reopens | Daily Bugle</title>
<meta property="og:type" content="article"></head><body>
<header><a href="/">Daily Bugle</a> <a href="/world">World</a> <a href="/sport">Sport</a></header>
<div class="layout"><div class="story">
<h1>Harbour reopens after the storm</h1>
<div class="share"><a href="https://social.example/share">Share</a> <a href="https://mail.example/send">Email</a></div>
<p>The harbour reopened on Monday morning after three days of closure, the port authority said,
as crews cleared the last of the debris that the storm had left across the quays.</p>
<p>Fishing boats were the first to leave, followed in the afternoon by the ferry to the islands,
which had been cancelled since Friday when the wind reached its strongest.</p>
<p>Repairs to the northern breakwater will take until the spring, engineers estimate.</p>
</div>
<div class="related"><h3>Related stories</h3><ul><li><a href="/a">Storm hits the coast overnight</a></li>
<li><a href="/b">Ferry timetable changes for the winter season</a></li></ul></div>
<div class="comments"><h3>3 comments</h3><div class="comment"><p>Finally! We waited all weekend for this news.</p></div>
<div class="comment"><p>What about the southern pier, is it open yet?</p></div></div>
</div><div class="footer">Copyright Daily Bugle. All rights reserved.</div></body></html>"""


def test_main_content_of_an_article_leaves_out_comments_related_links_and_the_share_bar(make_site, tmp_path):
    site = make_site({"/news": {"body": NEWS}})
    result = run_cli("-a", f"seed={site('/news')}", "-a", "delay=0", "-a", "max_depth=0", "-a", "content=markdown",
                     "-a", "main_content=true", "-O", "pages.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    markdown = json.loads((tmp_path / "pages.jsonl").read_text())["content"]
    assert "The harbour reopened on Monday morning" in markdown and "Repairs to the northern breakwater" in markdown
    for gone in ("Share", "Related stories", "Ferry timetable", "comments", "southern pier", "Copyright", "Sport"):
        assert gone not in markdown
