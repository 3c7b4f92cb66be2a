"""Broken links with their inlinks, the JUnit file and --fail-on-broken, over real HTTP."""

from __future__ import annotations

import json

from junitparser import Failure, JUnitXml

from sitewalk import walk
from tests.conftest import LOOPBACK, allow_loopback, run_sitewalk

# Known broken links: /gone (404, linked from three pages), /err (500, from two), /dead (the
# connection closes unanswered: a failure, from one); /r redirects to /c.
BROKEN_SITE = {
    "/": {"title": "Home", "links": ["/a", "/b", "/gone", "/r"]},
    "/a": {"title": "A", "links": ["/gone", "/b", "/dead", "/err"]},
    "/b": {"title": "B", "links": ["/gone", "/err", "/"]},
    "/r": {"status": 301, "headers": {"Location": "/c"}},
    "/c": {"title": "C"},
    "/err": {"status": 500, "body": "oops"},
    "/dead": {"close": True},
}


def run(site, tmp_path, **options):
    return walk(site("/"), delay=0, max_depth=2, settings=LOOPBACK, report=str(tmp_path / "report.json"), **options)


def test_broken_links_count_every_page_that_links_to_them(make_site, tmp_path):
    site = make_site(BROKEN_SITE)
    report = run(site, tmp_path)
    # Each URL requested once, whoever links to it (/dead twice: Twisted's HTTP client sends a GET
    # again once when a kept-alive connection closes without an answer).
    assert sorted(site.paths()) == sorted(["/", "/a", "/b", "/gone", "/r", "/c", "/dead", "/dead", "/err"])
    assert [(row["url"], row["status"], row["kind"], row["inlinks"], row["linked_from"]) for row in report.broken_links] == [
        (site("/gone"), 404, "http", 3, [site("/"), site("/a"), site("/b")]),
        (site("/err"), 500, "http", 2, [site("/a"), site("/b")]),
        (site("/dead"), None, "network", 1, [site("/a")]),
    ]
    assert report.broken_links[0]["reason"] == "HTTP 404 Not Found"
    written = json.loads((tmp_path / "report.json").read_text())
    assert written["broken_links"] == report.broken_links


def test_inlinks_are_counted_from_pages_at_max_depth_whatever_outputs_are_asked(make_site, tmp_path):
    site = make_site(BROKEN_SITE)
    # max_depth=1: /a and /b are not followed further, but their links are read and counted, with
    # --report alone as with --html-report (and by the API, which asks for no output).
    inlinks = {}
    for name, outputs in (("report", []), ("html", ["--html-report", str(tmp_path / "walk.html")])):
        path = tmp_path / f"{name}.json"
        result = run_sitewalk(site("/"), "--delay", "0", "--max-depth", "1", "--report", str(path), *outputs,
                              "-o", str(tmp_path / f"{name}.jsonl"), *allow_loopback(), cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        inlinks[name] = {row["url"]: row["inlinks"] for row in json.loads(path.read_text())["broken_links"]}
        assert f"1 broken link (the report's broken_links in {path}" in result.stderr
    assert inlinks["report"] == inlinks["html"] == {site("/gone"): 3}
    plain = walk(site("/"), delay=0, max_depth=1, settings=LOOPBACK)
    assert {row["url"]: row["inlinks"] for row in plain.broken_links} == {site("/gone"): 3}
    # Links at max_depth are not fetched (only counted): /err and /dead were never requested, by
    # any of the three walks; /gone once by each.
    assert sorted(site.paths()) == sorted(["/", "/a", "/b", "/gone", "/r", "/c"] * 3)


def test_junit_one_suite_per_page_one_case_per_checked_link(make_site, tmp_path):
    site = make_site(BROKEN_SITE)
    run(site, tmp_path, junit=str(tmp_path / "links.xml"))
    xml = JUnitXml.fromfile(str(tmp_path / "links.xml"))
    suites = {suite.name: suite for suite in xml}
    # The pages fetched, in order (/dead failed: no page).
    assert list(suites) == [site(path) for path in ("/", "/a", "/b", "/gone", "/c", "/err")]
    home = suites[site("/")]
    cases = {case.name: case for case in home}
    assert list(cases) == [site("/a"), site("/b"), site("/gone"), site("/r")]
    assert cases[site("/a")].is_passed and cases[site("/r")].is_passed
    failure = cases[site("/gone")].result[0]
    assert isinstance(failure, Failure) and failure.type == "http" and failure.message == "HTTP 404 Not Found"
    page_a = {case.name: case for case in suites[site("/a")]}
    assert page_a[site("/dead")].result[0].type == "network"
    assert (home.tests, home.failures) == (4, 1)
    assert (suites[site("/a")].tests, suites[site("/a")].failures) == (4, 3)
    assert xml.failures == 1 + 3 + 2


def test_fail_on_broken_exit_status(make_site, tmp_path):
    site = make_site(BROKEN_SITE)
    junit = tmp_path / "links.xml"
    result = run_sitewalk(site("/"), "--delay", "0", "--max-depth", "2", "--junit", str(junit), "--fail-on-broken",
                          "-o", str(tmp_path / "pages.jsonl"), *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    assert "3 broken links: exit status 3 (fail_on_broken)" in result.stderr
    assert JUnitXml.fromfile(str(junit)).failures == 6
    healthy = make_site({"/": {"links": ["/a"]}, "/a": {"links": ["/"]}})
    result = run_sitewalk(healthy("/"), "--delay", "0", "--fail-on-broken", "-o", str(tmp_path / "ok.jsonl"),
                          *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert healthy.paths() == ["/", "/a"]


def test_a_link_that_redirects_to_a_known_page_is_checked_and_not_broken(make_site, tmp_path):
    site = make_site({"/": {"links": ["/a", "/old"]}, "/a": {}, "/old": {"status": 301, "headers": {"Location": "/a"}}})
    report = walk(site("/"), delay=0, settings=LOOPBACK, junit=str(tmp_path / "links.xml"))
    assert site.paths() == ["/", "/a", "/old"]
    assert report.broken_links == []
    (home, _) = JUnitXml.fromfile(str(tmp_path / "links.xml"))
    assert [(case.name, case.is_passed) for case in home] == [(site("/a"), True), (site("/old"), True)]
