"""What the exit status of the sitewalk command says, over real HTTP: a check that a budget stopped
early never passes (4), broken links (3), a seed that answers 4xx/5xx (1), a signal (128 + its
number); with what the site received and the JUnit file, read with junitparser."""

from __future__ import annotations

import json
import signal
import subprocess
from collections import Counter

import pytest
from junitparser import Failure, JUnitXml, Skipped

from tests import forkserver
from tests.conftest import ROOT, allow_loopback, clean_environment, run_sitewalk, sitewalk_command, wait_for_pages

# Five pages in a row: / -> /1 -> /2 -> /3 -> /4.
CHAIN = {"/": {"title": "Home", "links": ["/1"]}, **{f"/{n}": {"title": f"P{n}", "links": [f"/{n + 1}"]} for n in range(1, 4)},
         "/4": {"title": "P4"}}


def junit_cases(path):
    """Each testcase of the JUnit file as (suite, case)."""
    return [(suite, case) for suite in JUnitXml.fromfile(str(path)) for case in suite]


def the_gap(path):
    """The testcase that says whether the walk covered the site, if the JUnit file has one."""
    found = [case for suite, case in junit_cases(path) if suite.name == "sitewalk"]
    return found[0] if found else None


def summary(stderr: str) -> str:
    return next(line for line in stderr.splitlines() if "INFO: sitewalk: " in line and " in " in line)


def test_a_walk_stopped_by_max_pages_is_incomplete_exit_4(make_site, tmp_path):
    site = make_site(CHAIN)
    result = run_sitewalk(site("/"), "--delay", "0", "--max-depth", "10", "--max-pages", "3", "--fail-on-broken",
                          "--junit", "links.xml", "-o", "pages.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 4, result.stderr
    assert site.paths() == ["/", "/1", "/2"]
    gap = the_gap(tmp_path / "links.xml")
    (failure,) = gap.result
    assert isinstance(failure, Failure) and failure.type == "incomplete"
    assert failure.message == ("the check is incomplete: max-pages left 1 page unvisited: raise --max-pages "
                               "(or give --allow-incomplete to accept an incomplete check)")
    assert "pages left unvisited: 1" in failure.text
    line = summary(result.stderr)
    assert "; incomplete: max-pages left 1 page unvisited; budgets spent: pages 3/3, " in line
    assert ("sitewalk: the check is incomplete: max-pages left 1 page unvisited: exit status 4 (fail_on_broken); "
            "raise --max-pages, or give --allow-incomplete to accept it") in result.stderr


def test_max_depth_is_scope_not_a_budget(make_site, tmp_path):
    site = make_site(CHAIN)
    result = run_sitewalk(site("/"), "--delay", "0", "--max-depth", "2", "--fail-on-broken", "--junit", "links.xml",
                          "-o", "pages.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert site.paths() == ["/", "/1", "/2"]
    assert the_gap(tmp_path / "links.xml") is None
    assert "incomplete" not in result.stderr


def test_allow_incomplete_accepts_a_bounded_sample(make_site, tmp_path):
    site = make_site(CHAIN)
    result = run_sitewalk(site("/"), "--delay", "0", "--max-depth", "10", "--max-pages", "2", "--fail-on-broken",
                          "--allow-incomplete", "--junit", "links.xml", "-o", "pages.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert site.paths() == ["/", "/1"]
    (skipped,) = the_gap(tmp_path / "links.xml").result
    assert isinstance(skipped, Skipped)
    assert skipped.message == "the check is incomplete: max-pages left 1 page unvisited (accepted by --allow-incomplete)"
    assert JUnitXml.fromfile(str(tmp_path / "links.xml")).failures == 0
    # The summary still says it.
    assert "; incomplete: max-pages left 1 page unvisited" in summary(result.stderr)


def test_broken_and_incomplete_is_3(make_site, tmp_path):
    site = make_site({**CHAIN, "/": {"title": "Home", "links": ["/1", "/gone"]}})
    result = run_sitewalk(site("/"), "--delay", "0", "--max-depth", "10", "--max-pages", "3", "--fail-on-broken",
                          "--junit", "links.xml", "-o", "pages.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    assert site.paths() == ["/", "/1", "/gone"]
    assert "1 broken link; the check is incomplete: max-pages left 1 page unvisited: exit status 3" in result.stderr
    failures = {case.name: case.result[0].type for _, case in junit_cases(tmp_path / "links.xml") if not case.is_passed}
    assert failures == {site("/gone"): "http", "the walk covered the site": "incomplete"}


@pytest.mark.parametrize(
    ("args", "spec", "reason", "fix"),
    [
        (["--max-bytes", "1k"], {"/": {"title": "Home", "links": ["/big", "/1"]}, "/big": {"size": 2000}, "/1": {}},
         "max-bytes", "--max-bytes"),
        (["--deadline", "1s"], {"/": {"title": "Home", "links": ["/slow", "/1"]}, "/slow": {"sleep": 5}, "/1": {}},
         "deadline", "--deadline"),
    ],
    ids=["max-bytes", "deadline"],
)
def test_bytes_and_time_budgets_are_incomplete_too(make_site, tmp_path, args, spec, reason, fix):
    site = make_site(spec)
    result = run_sitewalk(site("/"), "--delay", "0", "--fail-on-broken", "--junit", "links.xml", "-o", "pages.jsonl",
                          *args, *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 4, result.stderr
    assert site.paths()[:2] == ["/", spec["/"]["links"][0]]
    (failure,) = the_gap(tmp_path / "links.xml").result
    assert failure.message.startswith(f"the check is incomplete: {reason} left ")
    assert f"raise {fix} " in failure.message


def test_links_past_the_check_budget_are_skipped_and_the_check_incomplete(make_site, tmp_path):
    other = make_site({f"/{n}": {} for n in range(4)})
    site = make_site({"/": {"title": "Home", "links": [other(f"/{n}") for n in range(4)]}})
    result = run_sitewalk(site("/"), "--delay", "0", "--check-links", "--fail-on-broken", "--junit", "links.xml",
                          "-o", "pages.jsonl", "-s", "SITEWALK_LINKCHECK_MAX_CHECKS=2", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 4, result.stderr
    assert Counter((entry["method"], entry["path"]) for entry in other.requests()) == Counter({("HEAD", "/0"): 1, ("HEAD", "/1"): 1})
    cases = {case.name: case for suite, case in junit_cases(tmp_path / "links.xml") if suite.name == site("/")}
    assert cases[other("/0")].is_passed and cases[other("/1")].is_passed
    for n in (2, 3):
        (skipped,) = cases[other(f"/{n}")].result
        assert isinstance(skipped, Skipped)
        assert skipped.message == "not checked: past the link-check budget (SITEWALK_LINKCHECK_MAX_CHECKS=2)"
    (failure,) = the_gap(tmp_path / "links.xml").result
    assert failure.message.startswith("the check is incomplete: max-checks left 2 links unchecked: "
                                      "raise -s SITEWALK_LINKCHECK_MAX_CHECKS=1000")
    assert "; incomplete: max-checks left 2 links unchecked" in summary(result.stderr)


def test_a_link_robots_txt_disallows_is_skipped_but_the_check_complete(make_site, tmp_path):
    site = make_site({"/robots.txt": {"content_type": "text/plain", "body": "User-agent: *\nDisallow: /private/\n"},
                      "/": {"title": "Home", "body": '<img src="/private/i.png">'}})
    result = run_sitewalk(site("/"), "--delay", "0", "--check-links", "--fail-on-broken", "--junit", "links.xml",
                          "-o", "pages.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert site.paths() == ["/"]
    (case,) = [case for _, case in junit_cases(tmp_path / "links.xml")]
    (skipped,) = case.result
    assert isinstance(skipped, Skipped) and skipped.message.startswith("not checked: ") and "robots.txt" in skipped.message


@pytest.mark.parametrize("status", [404, 503])
def test_a_seed_that_answers_4xx_or_5xx_exits_1_with_its_items_and_report(make_site, tmp_path, status):
    site = make_site({"/": {"status": status, "title": "Not here", "links": ["/a"]}, "/a": {}})
    result = run_sitewalk(site("/"), "--delay", "0", "--report", "r.json", "-o", "pages.jsonl", *allow_loopback(),
                          cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    reason = {404: "HTTP 404 Not Found", 503: "HTTP 503 Service Unavailable"}[status]
    assert result.stderr.splitlines()[-1] == f"sitewalk: error: seed URL {site('/')} answered {reason}"
    assert [json.loads(line)["status"] for line in (tmp_path / "pages.jsonl").read_text().splitlines()][0] == status
    assert json.loads((tmp_path / "r.json").read_text())["fetched"] >= 1
    assert site.paths()[0] == "/"


@pytest.mark.parametrize(("sent", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_exits_128_plus_its_number_after_everything_is_written(make_site, tmp_path, sent, status):
    site = make_site({"/": {"links": [f"/{n}" for n in range(10)]}, **{f"/{n}": {"sleep": 0.3} for n in range(10)}})
    environment = clean_environment()
    process = subprocess.Popen(
        forkserver.command([str(sitewalk_command()), site("/"), "--delay", "0", "--report", "r.json", "-o", "pages.jsonl",
                            *allow_loopback()], environment),
        cwd=tmp_path, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    wait_for_pages(site, 2, process)
    process.send_signal(sent)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == status, stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stopped"] == "interrupted"
    fetched = [json.loads(line)["url"] for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
    assert len(fetched) == report["fetched"] and len(site.paths()) < 11


def test_every_exit_status_is_in_help_and_in_the_docs(tmp_path):
    """Each of them is run by a test: 0, 3 and 4 above, 1 and 2 here and in test_command_sitewalk.py,
    130 and 143 above."""
    result = run_sitewalk("--help", cwd=tmp_path)
    # argparse wraps the description at hyphens too: compared without whitespace.
    helped = "".join(result.stdout.split())
    table = (ROOT / "docs" / "command.md").read_text(encoding="utf-8").split("## Exit status")[1].split("\n## ")[0]
    documented = {int(status) for row in table.splitlines() if row.startswith("| ") and row[2].isdigit()
                  for status in row.split("|")[1].split(",")}
    assert documented == {0, 1, 2, 3, 4, 130, 143}
    for words in ("0 when the walk ran", "1 when the seed could not be fetched or answered 4xx/5xx",
                  "2 for invalid arguments or settings", "3 with --fail-on-broken", "4 with --fail-on-broken",
                  "--allow-incomplete accepts it", "130 and 143 when Ctrl-C or SIGTERM"):
        assert "".join(words.split()) in helped


def test_bad_input_is_2_and_an_unreachable_seed_1(tmp_path, unused_port):
    bad = run_sitewalk("http://127.0.0.1:9/", "-s", "ROBOTSTXT_OBEY=nope", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.splitlines() == [
        "sitewalk: error: -s ROBOTSTXT_OBEY=nope: ROBOTSTXT_OBEY takes true or false (e.g. -s ROBOTSTXT_OBEY=true)"]
    unreachable = run_sitewalk(f"http://127.0.0.1:{unused_port}/", "-s", "ROBOTSTXT_OBEY=false", *allow_loopback(), cwd=tmp_path)
    assert unreachable.returncode == 1
    assert unreachable.stderr.splitlines()[-1].endswith("could not be fetched: connection refused")
