"""The walk's own words at its end: the summary line names the fix as each front end spells it."""

from __future__ import annotations

import re

import pytest

from sitewalk.hints import API, CLI, COMMAND, SCRAPYD
from sitewalk.items import Report
from tests.conftest import allow_loopback, run_cli, run_sitewalk


@pytest.mark.parametrize(
    ("stopped", "consumer", "surface", "fix"),
    [
        ("max-pages", "index", CLI, "raise -a max_pages"),
        ("max-pages", "index", SCRAPYD, "raise max_pages"),
        ("max-pages", "index", COMMAND, "raise --max-pages"),
        ("max-pages", "index", API, "raise max_pages"),
        ("deadline", "grep", CLI, "raise -a deadline"),
        ("max-bytes", "extract", COMMAND, "raise --max-bytes"),
        ("callback", "grep", CLI, "raise -a max_matches"),
        ("callback", "grep", COMMAND, "raise --max-matches"),
    ],
)
def test_the_fix_is_spelled_as_the_front_end_takes_it(stopped, consumer, surface, fix):
    report = Report(seed="http://site.test/", origin="http://site.test", fetched=2, stopped=stopped)
    assert f"; stopped: {stopped} — {fix}; " in report.summary(consumer, surface)


def test_one_page_and_the_matches_of_a_grep_walk():
    report = Report(seed="http://site.test/", origin="http://site.test", fetched=1)
    assert report.summary().startswith("1 page, 0 B in 0.00s from http://site.test; stopped: no (ran out of pages)")
    assert "http://site.test; 1 matching line; stopped" in report.summary("grep", CLI, 1)
    assert "http://site.test; 0 matching lines; stopped" in report.summary("grep", CLI, 0)


SITE = {
    "/": {"title": "Home", "links": ["/big", "/a", "/private"], "body": "<p>needle one</p>"},
    "/big": {"size": 50_000, "content_type": "text/plain"},
    "/a": {"title": "A", "body": "<p>needle two</p><p>needle three</p>"},
    "/private": {"title": "Private"},
    "/robots.txt": {"content_type": "text/plain", "body": "User-agent: *\nDisallow: /private\n"},
}


def info_lines(stderr: str) -> list[str]:
    return [line.split("] ", 1)[1] for line in stderr.splitlines() if "] " in line and "progress:" not in line]


def test_a_page_cut_by_max_bytes_is_said_once_in_the_walk_s_words(make_site, tmp_path):
    site = make_site(SITE)
    result = run_cli("-a", f"seed={site('/')}", "-a", "delay=0", "-a", "max_bytes=5000", "-O", "p.jsonl",
                     *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert site.paths() == ["/", "/big"]
    sent = {entry["sent"]: entry["bytes_sent"] for entry in site.log() if "sent" in entry}
    # No WARNING from Scrapy about its download max size: the cut is the walk's own stop.
    assert "WARNING" not in result.stderr and "larger than download max size" not in result.stderr
    cut, summary = info_lines(result.stderr)
    # What was left: max_bytes less the seed and robots.txt, their headers included.
    left = int(re.fullmatch(rf"INFO: {re.escape(site('/big'))} cut off at max_bytes \(max_bytes=5000, (\d+) left for this page\): stopping the walk", cut)[1])
    assert left < 5000 - sent["/"]
    assert summary.startswith("INFO: sitewalk: 1 page, ") and "; stopped: max-bytes — raise -a max_bytes; " in summary


def test_a_page_larger_than_download_maxsize_keeps_scrapy_s_warning(make_site, tmp_path):
    site = make_site(SITE)
    result = run_cli("-a", f"seed={site('/')}", "-a", "delay=0", "-s", "DOWNLOAD_MAXSIZE=5000", "-O", "p.jsonl",
                     *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "larger than download max size (5000)" in result.stderr
    assert "stopping the walk" not in result.stderr


def test_a_grep_walk_says_how_many_lines_matched(make_site, tmp_path):
    site = make_site(SITE)
    result = run_sitewalk(site("/"), "--grep", "needle", "--delay", "0", "-o", "m.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary, robots = [line for line in info_lines(result.stderr) if line.startswith("INFO: sitewalk: ")]
    assert summary.startswith("INFO: sitewalk: 3 pages, ") and "; 3 matching lines; stopped: no (ran out of pages); " in summary
    assert robots == "INFO: sitewalk: 1 page skipped because robots.txt disallows them (set -s ROBOTSTXT_OBEY=false to fetch them)"


def test_a_scrapyd_job_names_its_parameters(make_site, tmp_path):
    # As scrapyd runs a job: scrapy crawl with the job's id as the _job argument.
    site = make_site(SITE)
    result = run_cli("-a", f"seed={site('/')}", "-a", "_job=j1", "-a", "delay=0", "-a", "max_pages=1", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"sitewalk: error: seed {site('/')} could not be fetched: refused address 127.0.0.1 (not a public address); "
        "set setting=SITEWALK_GUARD_ALLOW_NETWORKS=127.0.0.1 to fetch it anyway"
    )
    result = run_cli("-a", f"seed={site('/')}", "-a", "_job=j2", "-a", "delay=0", "-a", "max_pages=1",
                     *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "; stopped: max-pages — raise max_pages; " in result.stderr
