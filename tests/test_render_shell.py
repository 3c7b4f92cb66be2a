"""render=auto's rule: which HTML is an app shell. App shells in the shape the usual frameworks
build them; the pages of two real documentation sites (Debian's python3.11-doc and
postgresql-doc-15, when installed) and the recorded Python docs pages, none of which is one."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sitewalk.render.shell import SHORT, SHORT_WITH_SIGN, has_script, looks_like_shell
from tests.conftest import HERE

NAV = "<nav>" + " ".join(f"<a href='/{n}'>Section {n}</a>" for n in range(12)) + "</nav>"


def page(body: str, head: str = "") -> str:
    return f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>T</title>{head}</head><body>{body}</body></html>"


SHELLS = {
    # create-react-app's build: a deferred bundle, a <noscript> and an empty #root.
    "react": page("<noscript>You need to enable JavaScript to run this app.</noscript><div id='root'></div>",
                  "<script defer='defer' src='/static/js/main.775b885d.js'></script><link href='/static/css/main.css' rel='stylesheet'>"),
    # Vue CLI's build.
    "vue": page("<noscript><strong>We're sorry but this app doesn't work properly without JavaScript enabled. "
                "Please enable it to continue.</strong></noscript><div id='app'></div>"
                "<script src='/js/chunk-vendors.js'></script><script src='/js/app.js'></script>"),
    # Angular CLI's build: a custom element and module scripts.
    "angular": page("<app-root></app-root><script src='runtime.js' type='module'></script><script src='main.js' type='module'></script>"),
    # Vite: an empty mount point and a module script.
    "vite": page("<div id='app'></div><script type='module' src='/assets/index-4f2a.js'></script>"),
    # Next.js rendered on the client only: an empty #__next and its data.
    "next": page("<div id='__next'></div><script id='__NEXT_DATA__' type='application/json'>{\"props\":{}}</script>"
                 "<script src='/_next/static/chunks/main.js' defer></script>"),
    # A spinner while the app loads.
    "loading": page("<div id='root'><div class='spinner'>Loading…</div></div><script src='/app.js'></script>"),
    # A server-rendered navigation around an empty mount point.
    "nav-and-mount": page(NAV + "<main id='app'></main><script src='/app.js'></script>"),
}

PLAIN = {
    # A short page of a static site: no script, nothing could change it.
    "short-static": page("<h1>Hash Indexes</h1><p>A short page of plain text.</p>"),
    # Scripts that run nothing: JSON-LD, an import map.
    "json-ld": page("<p>Short.</p>", "<script type='application/ld+json'>{\"@type\": \"Article\"}</script>"
                                     "<script type='importmap'>{}</script>"),
    # A search page whose <noscript> asks for JavaScript, with its site's navigation and help text
    # (Sphinx's search.html: 632 characters in the Python docs).
    "search": page(NAV + "<h1>Search</h1><noscript><p>Please activate JavaScript to enable the search functionality.</p></noscript>"
                   + "<p>Searching for multiple words only shows matches that contain all words.</p>" * 7
                   + "<div id='search-results'></div><script src='searchtools.js'></script>"),
    # A long page with scripts and an empty widget (a comments box) in it.
    "article": page("<article>" + "<p>Text a person reads, as the server sent it.</p>" * 30 + "</article>"
                    "<div id='app'></div><script src='/comments.js'></script>"),
}


@pytest.mark.parametrize("name", SHELLS)
def test_an_app_shell_is_rendered(name):
    assert looks_like_shell(SHELLS[name])


@pytest.mark.parametrize("name", PLAIN)
def test_a_page_of_text_is_not(name):
    assert not looks_like_shell(PLAIN[name])


def test_a_page_without_a_script_tag_is_told_from_its_bytes():
    assert not has_script(PLAIN["short-static"].encode())
    assert has_script(SHELLS["vite"].encode()) and has_script(SHELLS["vite"].upper().encode(), "latin-1")
    # In UTF-16 the bytes cannot tell: the page is parsed.
    assert has_script(SHELLS["vite"].encode("utf-16"), "utf-16")
    assert looks_like_shell(SHELLS["vite"].encode("utf-16").decode("utf-16"))


def test_the_signs_count_only_on_short_pages():
    # A mount point or a <noscript> moves the line from SHORT to SHORT_WITH_SIGN characters, no further.
    text = "x" * (SHORT + 50)
    assert not looks_like_shell(page(f"<p>{text}</p><script src='/a.js'></script>"))
    assert looks_like_shell(page(f"<p>{text}</p><div id='root'></div><script src='/a.js'></script>"))
    assert looks_like_shell(page(f"<p>{text}</p><noscript>Turn JavaScript on</noscript><script src='/a.js'></script>"))
    longer = "x" * SHORT_WITH_SIGN
    assert not looks_like_shell(page(f"<p>{longer}</p><div id='root'></div><script src='/a.js'></script>"))


def test_recorded_python_docs_pages_are_not_shells():
    bodies = []
    for cassette in sorted((HERE / "fixtures" / "cassettes").glob("*.yaml")):
        for interaction in yaml.safe_load(cassette.read_text(encoding="utf-8"))["interactions"]:
            body = interaction["response"]["body"]["string"]
            if "<html" in body:
                bodies.append(body)
    assert len(bodies) >= 2
    assert not any(looks_like_shell(body) for body in bodies)


DOCS = [Path("/usr/share/doc/python3.11-doc/html"), Path("/usr/share/doc/postgresql-doc-15/html")]


@pytest.mark.parametrize("root", DOCS, ids=["python3.11-doc", "postgresql-doc-15"])
def test_no_page_of_a_real_documentation_site_is_a_shell(root):
    if not root.is_dir():
        pytest.skip(f"{root} is not installed (apt-get install {root.parts[4]})")
    pages = sorted(root.rglob("*.html"))
    assert len(pages) > 500
    shells = [str(path.relative_to(root)) for path in pages if looks_like_shell(path.read_bytes())]
    assert shells == []
