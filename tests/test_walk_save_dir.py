"""save_dir: each page's content saved as a file mirroring its URL, and llms.txt, over real HTTP."""

from __future__ import annotations

import json
import os

import pytest

from sitewalk import walk
from sitewalk.savedir import MANIFEST, file_name
from tests.conftest import LOOPBACK, allow_loopback, run_cli, run_sitewalk

HOME = """<html><head><title>Example Docs</title></head><body><nav><a href="/">Home</a></nav><main>
<h1>Example Docs</h1><p>Example Docs explain the example library. Start with the guide.</p>
<ul><li><a href="/library/os.html">os</a></li><li><a href="/guide/">Guide</a></li>
<li><a href="/search?q=a/b&amp;x=%2F">search</a></li><li><a href="/notes.txt">notes</a></li>
<li><a href="/logo.png">logo</a></li><li><a href="/index.html">index</a></li>
<li><a href="/%2E%2E%2Fescape.html">escape</a></li><li><a href="/a%2Fb.html">slash</a></li></ul></main></body></html>"""
SITE = {
    "/": {"body": HOME},
    "/index.html": {"body": "<html><head><title>Index</title></head><body><main><p>The index page.</p></main></body></html>"},
    "/library/os.html": {"body": "<html><head><title>os</title></head><body><main><h1>os</h1>"
                                 "<p>Miscellaneous operating system interfaces.</p></main></body></html>"},
    "/guide/": {"body": "<html><head><title>Guide</title></head><body><main><h1>Guide</h1><p>Read <a href='../library/os.html'>"
                        "os</a> first.</p></main></body></html>"},
    "/search?q=a/b&x=%2F": {"body": "<html><head><title>Search</title></head><body><p>Results.</p></body></html>"},
    "/notes.txt": {"content_type": "text/plain", "body": "plain notes\n"},
    "/logo.png": {"content_type": "image/png", "body": "PNG"},
    "/%2E%2E%2Fescape.html": {"body": "<html><body><p>Escaped.</p></body></html>"},
    "/a%2Fb.html": {"body": "<html><body><p>Slash.</p></body></html>"},
}


def saved_files(directory) -> dict[str, str]:
    return {str(path.relative_to(directory)): path.read_text() for path in sorted(directory.rglob("*"))
            if path.is_file() and path.name != MANIFEST}


def test_pages_are_saved_as_markdown_files_mirroring_their_urls_with_llms_txt(make_site, tmp_path):
    site = make_site(SITE)
    work = tmp_path / "work"
    work.mkdir()
    result = run_sitewalk(site("/"), "--save-dir", "saved", "--delay", "0", "--main-content", *allow_loopback(),
                          cwd=work)
    assert result.returncode == 0, result.stderr
    files = saved_files(work / "saved")
    assert files["index.md"].startswith("# Example Docs\n") and "Home" not in files["index.md"]
    assert files["library/os.md"] == "# os\n\nMiscellaneous operating system interfaces.\n"
    # Links in the saved Markdown are absolute: a file read alone still leads to the pages.
    assert files["guide/index.md"] == f"# Guide\n\nRead [os]({site('/library/os.html')}) first.\n"
    assert files["notes.txt"] == "plain notes\n"
    # / and /index.html would share index.md: the later one's name carries its URL's hash.
    (index_page,) = [name for name in files if name.startswith("index{")]
    assert index_page.endswith("}.md") and files[index_page] == "The index page.\n"
    # The query is part of the name, its / escaped; escapes in the path stay escapes.
    assert files["search?q=a%2Fb&x=%252F.md"] == "Results.\n"
    assert files["%2E%2E%2Fescape.md"] == "Escaped.\n"
    assert files["a%2Fb.md"] == "Slash.\n"
    # No file for the image; nothing outside the directory.
    assert not any(name.startswith("logo") for name in files)
    assert sorted(path.name for path in work.iterdir()) == ["saved"]
    assert files["llms.txt"] == "\n".join([
        "# Example Docs", "",
        "> Example Docs explain the example library. Start with the guide.", "",
        "## Pages", "",
        f"- [Example Docs]({site('/')}): Example Docs explain the example library. Start with the guide.",
        f"- [Search]({site('/search?q=a/b&x=%2F')}): Results.",
        f"- [{site('/notes.txt')}]({site('/notes.txt')})",
        f"- [Index]({site('/index.html')}): The index page.",
        f"- [{site('/%2E%2E%2Fescape.html')}]({site('/%2E%2E%2Fescape.html')}): Escaped.",
        f"- [{site('/a%2Fb.html')}]({site('/a%2Fb.html')}): Slash.",
        "", "## library", "",
        f"- [os]({site('/library/os.html')}): Miscellaneous operating system interfaces.",
        "", "## guide", "",
        f"- [Guide]({site('/guide/')}): Read os first.",
        "",
    ])
    full = files["llms-full.txt"]
    assert full.startswith(f"# Example Docs\n\nSource: {site('/')}\n\n# Example Docs\n")
    assert f"# os\n\nSource: {site('/library/os.html')}\n\n# os\n\nMiscellaneous operating system interfaces.\n" in full


@pytest.mark.parametrize(("url", "name"), [
    ("http://h/library/os.html", "library/os.md"),
    ("http://h/", "index.md"),
    ("http://h/guide/", "guide/index.md"),
    ("http://h/guide", "guide.md"),
    ("http://h/a//b.html", "a/{}/b.md"),
    ("http://h/%2e%2e/x.html", "%2e%2e/x.md"),
    ("http://h/s?q=../../etc/passwd", "s?q=..%2F..%2Fetc%2Fpasswd.md"),
    ("http://h/" + "x" * 300 + ".html", "x" * 50 + "{"),
])
def test_file_names_stay_inside_the_directory(url, name):
    saved = file_name(url, "markdown", html=True)
    assert saved.startswith(name) if name.endswith("{") else saved == name
    assert ".." not in saved.split("/") and not saved.startswith("/")
    assert all(len(part.encode()) < 255 for part in saved.split("/"))


def test_text_and_html_modes_and_the_api(make_site, tmp_path):
    site = make_site({"/": SITE["/library/os.html"]})
    walk(site("/"), max_depth=0, delay=0, save_dir=str(tmp_path / "text"), content="text", settings=LOOPBACK)
    walk(site("/"), max_depth=0, delay=0, save_dir=str(tmp_path / "html"), content="html", settings=LOOPBACK)
    assert (tmp_path / "text" / "index.txt").read_text() == "os\nMiscellaneous operating system interfaces."
    assert (tmp_path / "html" / "index.html").read_text() == SITE["/library/os.html"]["body"]


def test_a_resumed_walk_neither_rewrites_nor_loses_files(make_site, tmp_path):
    site = make_site({"/": {"title": "Home", "links": ["/1", "/2", "/3"]},
                      **{f"/{n}": {"title": f"Page {n}", "body": f"<p>Page {n} text.</p>"} for n in range(1, 4)}})
    common = ("-a", f"seed={site('/')}", "-a", "delay=0", "-a", "save_dir=saved", "-s", "JOBDIR=job",
              "-O", "pages.jsonl", *allow_loopback())
    first = run_cli(*common, "-a", "max_pages=2", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    saved = tmp_path / "saved"
    assert sorted(saved_files(saved)) == ["1.md", "index.md", "llms-full.txt", "llms.txt"]
    # A mark the second walk would wipe out if it wrote the page again.
    (saved / "1.md").write_text("kept\n")
    before = os.stat(saved / "index.md").st_mtime_ns
    second = run_cli(*common, "-a", "max_pages=4", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    files = saved_files(saved)
    assert sorted(files) == ["1.md", "2.md", "3.md", "index.md", "llms-full.txt", "llms.txt"]
    assert files["1.md"] == "kept\n" and os.stat(saved / "index.md").st_mtime_ns == before
    assert [line.split("](")[1].split(")")[0] for line in files["llms.txt"].splitlines() if line.startswith("- [")] == [
        site("/"), site("/1"), site("/2"), site("/3")]
    assert len((saved / MANIFEST).read_text().splitlines()) == 4
    assert [json.loads(line)["url"] for line in (tmp_path / "pages.jsonl").read_text().splitlines()] == [
        site("/"), site("/1"), site("/2"), site("/3")]


@pytest.mark.parametrize(("args", "message"), [
    (("-a", "save_dir=plain.txt"), "save_dir 'plain.txt' is or is under a file"),
    (("-a", "save_dir=d", "-a", "grep=x"), "save_dir is a field of index items"),
])
def test_save_dir_is_checked_before_any_request(make_site, tmp_path, args, message):
    (tmp_path / "plain.txt").write_text("x")
    site = make_site(SITE)
    result = run_cli("-a", f"seed={site('/')}", *args, *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 2 and message in result.stderr
    assert site.paths() == []
