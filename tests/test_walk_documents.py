"""PDFs as content over real HTTP: their text in the index, grep and save_dir; hostile ones a page's
failure within their limits while the walk goes on."""

from __future__ import annotations

import io
import json

import pytest

from sitewalk import grep, walk
from sitewalk import pagereader as pagereader_module
from sitewalk.documents import DocumentError, document_content
from sitewalk.pagereader import MARKDOWN, ReadPage, ReadRequest, serve
from tests.conftest import LOOPBACK, allow_loopback, run_cli
from tests.pdfs import pdf

MANUAL = pdf([["Preface text.", "Getting started", "Install it with pip install sitewalk."],
              ["Usage", "Call walk(seed) and read the report."]],
             outline=[(1, "Getting started", 0), (2, "Usage", 1)], title="The Manual")


def served(document: bytes, **page: object) -> dict[str, object]:
    # The mock site sends text; Latin-1 maps each byte to one character and back.
    return {"content_type": "application/pdf", "encoding": "latin-1", "body": document.decode("latin-1"), **page}


SITE = {
    "/": {"title": "Home", "links": ["/manual.pdf", "/readme.md", "/after"]},
    "/manual.pdf": served(MANUAL),
    "/readme.md": {"content_type": "text/markdown", "body": "# Readme\n\nPlain Markdown.\n"},
    "/after": {"title": "After", "body": "<p>After the documents.</p>"},
}


def test_a_pdf_is_content_with_its_outline_as_headings(make_site, tmp_path):
    site = make_site(SITE)
    result = run_cli("-a", f"seed={site('/')}", "-a", "delay=0", "-a", "content=markdown", "-O", "pages.jsonl",
                     *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    items = {item["url"]: item for item in map(json.loads, (tmp_path / "pages.jsonl").read_text().splitlines())}
    manual = items[site("/manual.pdf")]
    assert manual["title"] == "The Manual"
    assert manual["content"] == ("Preface text.\n# Getting started\nInstall it with pip install sitewalk.\n\n"
                                 "## Usage\nCall walk(seed) and read the report.\n")
    # Its bytes as sent: the document, its status line and headers.
    assert len(MANUAL) < manual["byte_count"] < len(MANUAL) + 400
    assert items[site("/readme.md")]["content"] == "# Readme\n\nPlain Markdown.\n"


def test_a_pdf_is_grepped_and_saved_and_listed(make_site, tmp_path):
    site = make_site(SITE)
    matches, report = grep(site("/"), "walk\\(seed\\)", delay=0, settings=LOOPBACK)
    assert [(match.url, match.line, match.text) for match in matches] == [
        (site("/manual.pdf"), 6, "Call walk(seed) and read the report.")]
    assert report.failures == []
    walk(site("/"), delay=0, save_dir=str(tmp_path / "saved"), settings=LOOPBACK)
    saved = tmp_path / "saved"
    assert (saved / "manual.pdf.md").read_text().startswith("Preface text.\n# Getting started\n")
    assert (saved / "readme.md").read_text() == "# Readme\n\nPlain Markdown.\n"
    listed = (saved / "llms.txt").read_text()
    assert f"- [The Manual]({site('/manual.pdf')}): Preface text." in listed
    assert f"({site('/readme.md')})" in listed
    assert "Call walk(seed)" in (saved / "llms-full.txt").read_text()


# Made when the test runs (a bomb takes a second to deflate), not when the tests are collected.
@pytest.mark.parametrize(("document", "reason"), [
    # 100 MB of content deflated into 100 kB: past what pypdf decompresses of one stream.
    (lambda: pdf([["a"]], bomb=100_000_000), "Limit reached while decompressing"),
    (lambda: pdf([["a"], ["b"]], page_tree_loop=True), "cyclic page references"),
    (lambda: pdf([["p"]] * 10_000), "the PDF has 10000 pages, more than the 2000 read"),
    (lambda: b"%PDF-1.7\nnot really", "the PDF cannot be read"),
], ids=["bomb", "page-tree-loop", "10000-pages", "broken"])
def test_a_hostile_pdf_is_the_pages_failure_and_the_walk_goes_on(make_site, tmp_path, document, reason):
    site = make_site({"/": {"title": "Home", "links": ["/hostile.pdf", "/after"]},
                      "/hostile.pdf": served(document()), "/after": SITE["/after"]})
    report = walk(site("/"), delay=0, content="text", max_bytes=100_000_000, settings=LOOPBACK)
    assert [(failure["url"], failure["kind"]) for failure in report.failures] == [(site("/hostile.pdf"), "read")]
    assert reason in str(report.failures[0]["reason"])
    assert site.paths() == ["/", "/hostile.pdf", "/after"]
    assert report.stopped is None and report.fetched == 3


def test_the_documents_helper_stops_a_read_at_its_time_limit(monkeypatch):
    """In the helper's own loop: a document read past DOCUMENT_SECONDS is answered with the limit."""
    monkeypatch.setattr(pagereader_module, "DOCUMENT_SECONDS", 0.001)
    monkeypatch.setattr(pagereader_module, "_limit_memory", lambda: None)
    requests = io.BytesIO(pagereader_module._frame(tuple(ReadRequest(
        pdf([["line"] * 40] * 1500), "http://h/slow.pdf", MARKDOWN, None, {}, "application/pdf"))))
    answers = io.BytesIO()
    serve(requests, answers, documents=True)
    answers.seek(0)
    answer = pagereader_module.pickle.loads(pagereader_module._read_frame(answers) or b"")
    assert not isinstance(answer, ReadPage) and "longer than 0.001 s" in answer


def test_pdf_text_without_an_outline_and_a_broken_one():
    title, text = document_content(pdf([["One", "Two"], ["Three"]]), "markdown")
    assert (title, text) == (None, "One\nTwo\n\nThree\n")
    with pytest.raises(DocumentError, match="cannot be read"):
        document_content(b"%PDF-1.4 garbage", "text")
