"""The HTML report: written at the end of a walk over real HTTP, opened in headless Chromium."""

from __future__ import annotations

import html
import json
import signal
from pathlib import Path

import pytest

from sitewalk import walk
from sitewalk.htmlreport import MAX_ROWS, render
from sitewalk.items import Report
from sitewalk.linkreport import LinkBook
from tests.conftest import LOOPBACK, allow_loopback, run_cli, run_sitewalk, start_cli, wait_for_pages
from tests.test_walk_linkreport import BROKEN_SITE

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
# A title and a link that would run script if the report did not escape them.
HOSTILE_TITLE = "</title><script>window.pwned=1</script><img src=x onerror=\"window.pwned=2\">"
HOSTILE_SITE = {
    **BROKEN_SITE,
    "/c": {"title": HOSTILE_TITLE, "links": ["/x'><script>window.pwned=3</script>"]},
}


@pytest.fixture
def walked(make_site, tmp_path):
    site = make_site(HOSTILE_SITE)
    path = tmp_path / "walk.html"
    report = walk(site("/"), delay=0, max_depth=2, settings=LOOPBACK, html_report=str(path))
    return site, report, path


def test_the_report_is_one_self_contained_file_that_escapes_what_the_site_says(walked):
    site, report, path = walked
    text = path.read_text(encoding="utf-8")
    # No other file, no network: nothing is loaded from anywhere (the policy forbids it too).
    for needle in ("<link", "src=", "url(", "@import", "http-equiv=\"refresh\""):
        assert needle not in text.replace(html.escape(HOSTILE_TITLE), "")
    assert "default-src 'none'" in html.unescape(text)
    assert HOSTILE_TITLE not in text and html.escape(HOSTILE_TITLE) in text
    assert "<script>window.pwned" not in text
    # The tables are in the HTML itself, readable without scripts.
    assert f'<td><a href="{site("/gone")}">{site("/gone")}</a></td>' in text
    assert site.paths().count("/gone") == 1


def test_long_tables_are_cut_and_say_so():
    book = LinkBook()
    report = Report(seed="http://site.test/", origin="http://site.test", unvisited=[f"http://site.test/{n}" for n in range(MAX_ROWS + 7)])
    text = render(report, book, _config())
    assert text.count('<tr><td><a href="http://site.test/') == MAX_ROWS
    assert f"The first {MAX_ROWS} of {MAX_ROWS + 7} URLs" in text


def test_a_stopped_walk_says_what_it_left_and_which_option_changes_it(make_site, tmp_path):
    site = make_site(BROKEN_SITE)
    result = run_sitewalk(site("/"), "--delay", "0", "--max-pages", "2", "--html-report", "walk.html",
                          "-o", "pages.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert site.paths() == ["/", "/a"]
    text = (tmp_path / "walk.html").read_text(encoding="utf-8")
    assert "stopped: max-pages — raise --max-pages" in text
    assert "Known but not fetched when the walk ended (stopped: max-pages — raise --max-pages): 3" in text
    for path in ("/b", "/gone", "/r"):
        assert f'<tr><td><a href="{site(path)}"' in text


def test_scrapy_crawl_writes_it_after_ctrl_c(make_site, tmp_path):
    filler = "<p>" + "filler " * 3000 + "</p>"
    site = make_site({"/": {"links": [f"/p{i}" for i in range(30)], "body": filler},
                      **{f"/p{i}": {"title": f"P{i}", "body": filler} for i in range(30)}})
    process = start_cli("-a", f"seed={site('/')}", "-a", "delay=0.2", "-a", "html_report=walk.html",
                        "-a", "report=r.json", *allow_loopback(), cwd=tmp_path)
    wait_for_pages(site, 3, process)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stopped"] == "interrupted"
    text = (tmp_path / "walk.html").read_text(encoding="utf-8")
    assert "<dt>Outcome</dt><dd>stopped: interrupted</dd>" in text
    assert f"<dt>Pages</dt><dd>{report['fetched']}</dd>" in text
    assert f"Known but not fetched when the walk ended (stopped: interrupted): {len(report['unvisited'])}" in text


def test_a_path_that_cannot_be_written_fails_before_the_walk(make_site, tmp_path):
    site = make_site(BROKEN_SITE)
    result = run_cli("-a", f"seed={site('/')}", "-a", "html_report=no/such/dir/walk.html", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().endswith(
        "sitewalk: error: html_report 'no/such/dir/walk.html' is in a directory that does not exist ('no/such/dir'): "
        "give a file path in an existing directory, e.g. -a html_report=walk.html"
    )
    assert site.paths() == []


def _config():
    from sitewalk.config import WalkConfig

    return WalkConfig(seed="http://site.test/")


@pytest.mark.slow  # Chromium
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (.ci/run installs it)")
def test_the_report_in_headless_chromium(walked, tmp_path):
    from playwright.sync_api import sync_playwright

    site, report, path = walked
    url = path.as_uri()
    requests: list[str] = []
    console: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.on("request", lambda request: requests.append(request.url))
            page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
            page.on("pageerror", lambda error: console.append(f"pageerror: {error}"))
            page.goto(url)
            assert requests == [url]
            assert [line for line in console if line.startswith(("error", "pageerror"))] == []
            assert page.evaluate("window.pwned") is None
            assert page.title() == f"sitewalk: {site.url}"
            hostile = next(row["url"] for row in report.broken_links if "pwned" in row["url"])
            assert page.locator("#broken-links tbody tr").count() == 4

            def column(index: int) -> list[str]:
                return [text.strip() for text in page.locator(f"#broken-links tbody tr td:nth-child({index})").all_inner_texts()]

            # Most linked first, as the report JSON lists them.
            assert column(1) == [site("/gone"), site("/err"), site("/dead"), hostile]
            assert column(5) == ["3", "2", "1", "1"]
            assert column(2) == ["404", "500", "", "404"]
            by_page = page.locator("#broken-by-page tbody tr td:nth-child(1)").all_inner_texts()
            assert by_page == [site("/"), site("/a"), site("/b"), site("/c")]
            assert page.locator("#broken-by-page tbody tr td:nth-child(2)").all_inner_texts() == ["1", "3", "2", "1"]
            inlinks = page.locator("#broken-links th", has_text="Inlinks")
            inlinks.click()
            assert inlinks.get_attribute("aria-sort") == "descending"
            assert column(5) == ["3", "2", "1", "1"]
            inlinks.click()
            assert inlinks.get_attribute("aria-sort") == "ascending"
            assert column(5) == ["1", "1", "2", "3"]
            assert column(1)[2:] == [site("/err"), site("/gone")]
            page.locator("#broken-links th", has_text="Status").click()
            assert column(2) == ["500", "404", "404", ""]
            # The filter box the script adds above the table.
            page.locator("input.filter").first.fill("err")
            assert [text.strip() for text in page.locator("#broken-links tbody tr:not([hidden]) td:nth-child(1)").all_inner_texts()] == [site("/err")]
            redirect = page.locator("#redirects-table tbody tr").first.inner_text()
            assert site("/r") in redirect and site("/c") in redirect and "301" in redirect
            assert page.locator("#by-depth tbody tr").count() == 3
            assert page.locator("svg rect").count() > 5
            page.screenshot(path=str(tmp_path / "walk.png"), full_page=True)
            assert requests == [url]
        finally:
            browser.close()
    assert (tmp_path / "walk.png").stat().st_size > 1000
