"""Every command of docs/report.md, run as written against a local site with known broken links."""

from __future__ import annotations

import json
import re

from junitparser import JUnitXml

from tests.conftest import LOOPBACK, ROOT
from tests.test_readme import DOCS, blocks, commands, on_site, run

PAGE = (ROOT / "docs" / "report.md").read_text(encoding="utf-8")
SITE = {
    "/": {"title": "Docs", "links": ["/guide", "/api", "/gone"]},
    "/guide": {"title": "Guide", "links": ["/gone", "/guide/old"]},
    "/api": {"title": "API", "links": ["/gone"]},
    "/guide/old": {"title": "Old guide", "links": ["/api/v1"]},
}


def test_the_html_report_command(make_site, tmp_path):
    html_walk, ci_walk, scrapy_walk = commands(PAGE)
    site = make_site(SITE)
    result = run(on_site(html_walk, site), tmp_path)
    assert result.returncode == 0, result.stderr
    assert site.paths() == ["/", "/guide", "/api", "/gone", "/guide/old", "/api/v1"]
    report = json.loads((tmp_path / "report.json").read_text())
    assert [(row["url"], row["inlinks"]) for row in report["broken_links"]] == [(site("/gone"), 3), (site("/api/v1"), 1)]
    text = (tmp_path / "walk.html").read_text(encoding="utf-8")
    assert "Broken links (2)" in text and "<script>" in text


def test_the_ci_commands(make_site, tmp_path):
    _, ci_walk, scrapy_walk = commands(PAGE)
    # The workflow's step runs the command the page shows (and this test runs).
    assert re.search(r"^  run: (.*)$", blocks(PAGE, "yaml")[0], re.MULTILINE).group(1) == ci_walk
    site = make_site(SITE)
    result = run(on_site(ci_walk, site), tmp_path)
    assert result.returncode == 3, result.stderr
    assert JUnitXml.fromfile(str(tmp_path / "links.xml")).failures == 4
    assert len(site.paths()) == 6

    site = make_site(SITE)
    result = run(on_site(scrapy_walk, site), tmp_path)
    assert result.returncode == 0, result.stderr
    assert JUnitXml.fromfile(str(tmp_path / "links.xml")).failures == 4
    assert "Broken links (2)" in (tmp_path / "walk.html").read_text(encoding="utf-8")
    assert len(site.paths()) == 6


def test_the_python_example(make_site, tmp_path, capsys, monkeypatch):
    (code,) = blocks(PAGE, "python")
    site = make_site(SITE)
    monkeypatch.chdir(tmp_path)
    # As written, but at the local site and with its loopback address allowed.
    local = code.replace(DOCS, site("/")).replace("html_report=", f"settings={LOOPBACK!r}, delay=0, html_report=")
    exec(compile(local, "docs/report.md", "exec"), {})
    assert capsys.readouterr().out.splitlines() == [f"{site('/gone')} HTTP 404 Not Found linked from 3 pages",
                                                    f"{site('/api/v1')} HTTP 404 Not Found linked from 1 pages"]
    assert (tmp_path / "walk.html").exists()
