"""robots.txt: obeyed by default, skipped pages listed, RFC 9309 rules for an unreadable file."""

from __future__ import annotations

import json

import pytest

from sitewalk import SeedError, __version__, walk
from tests.conftest import LOOPBACK, allow_loopback, run_cli

PAGES = {"/": {"links": ["/public", "/private/a", "/private/b", "/also"]}, "/public": {}, "/also": {},
         "/private/a": {}, "/private/b": {}}


def robots(text: str, status: int = 200) -> dict:
    return {"/robots.txt": {"status": status, "content_type": "text/plain", "body": text}}


def test_disallowed_pages_are_listed_not_fetched(make_site):
    site = make_site({**PAGES, **robots("User-agent: *\nDisallow: /private/\n")})
    report = walk(site("/"), delay=0, settings=LOOPBACK)
    assert site.paths() == ["/", "/public", "/also"]
    assert report.robots_skipped == [site("/private/a"), site("/private/b")]
    assert report.failures == [] and report.fetched == 3
    assert [e["path"] for e in site.requests()].count("/robots.txt") == 1


def test_rules_for_our_user_agent_apply(make_site):
    site = make_site({**PAGES, **robots("User-agent: sitewalk\nDisallow: /also\n\nUser-agent: *\nDisallow: /\n")})
    report = walk(site("/"), delay=0, settings=LOOPBACK)
    assert site.paths() == ["/", "/public", "/private/a", "/private/b"]
    assert report.robots_skipped == [site("/also")]


def test_robots_can_be_ignored_by_setting(make_site):
    site = make_site({**PAGES, **robots("User-agent: *\nDisallow: /private/\n")})
    report = walk(site("/"), delay=0, settings={**LOOPBACK, "ROBOTSTXT_OBEY": False})
    assert report.robots_skipped == [] and report.fetched == 5
    assert "/robots.txt" not in [e["path"] for e in site.requests()]


@pytest.mark.parametrize("status", [401, 403, 404, 410])
def test_a_4xx_robots_txt_allows_everything(make_site, status):
    site = make_site({**PAGES, **robots("User-agent: *\nDisallow: /\n", status=status)})
    report = walk(site("/"), delay=0, settings=LOOPBACK)
    assert report.fetched == 5 and report.robots_skipped == []


@pytest.mark.parametrize("status", [500, 503])
def test_a_5xx_robots_txt_disallows_everything(make_site, status):
    site = make_site({**PAGES, **robots("", status=status)})
    with pytest.raises(SeedError, match=rf"robots.txt could not be fetched \(it answered {status}\)"):
        walk(site("/"), delay=0, settings=LOOPBACK)
    assert site.paths() == []


def test_a_robots_txt_that_times_out_disallows_everything(make_site):
    site = make_site({**PAGES, "/robots.txt": {"sleep": 3, "body": ""}})
    with pytest.raises(SeedError, match=r"robots.txt could not be fetched \(timed out"):
        walk(site("/"), delay=0, settings={**LOOPBACK, "DOWNLOAD_TIMEOUT": 1})
    assert site.paths() == []


def test_end_of_walk_log_names_the_setting(make_site, tmp_path):
    site = make_site({**PAGES, **robots("User-agent: *\nDisallow: /private/\n")})
    result = run_cli("-a", f"seed={site('/')}", "-a", "delay=0", "-a", "report=r.json", "-O", "p.jsonl",
                     *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0
    assert "2 pages skipped because robots.txt disallows them (set -s ROBOTSTXT_OBEY=false to fetch them)" in result.stderr
    assert json.loads((tmp_path / "r.json").read_text())["robots_skipped"] == [site("/private/a"), site("/private/b")]


def test_user_agent_names_sitewalk_and_is_configurable(make_site):
    site = make_site(PAGES)
    walk(site("/"), max_depth=0, delay=0, settings=LOOPBACK)
    walk(site("/"), max_depth=0, delay=0, settings={**LOOPBACK, "USER_AGENT": "acme-docs-bot/2 (ops@acme.test)"})
    agents = [e["headers"]["User-Agent"] for e in site.requests() if e["path"] == "/"]
    assert agents[0] == f"sitewalk/{__version__} (+https://pypi.org/project/sitewalk/)"
    assert agents[1] == "acme-docs-bot/2 (ops@acme.test)"
