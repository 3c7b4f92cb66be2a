"""Hostile patterns over real HTTP: the walk keeps its deadline, and a pattern RE2 refuses costs no request."""

from __future__ import annotations

import json

from tests.conftest import allow_loopback, run_cli

DEADLINE = 10
# Each of these takes Python's backtracking re longer than any deadline on the text below.
A40 = "/" + "a" * 40 + "!"
SITE = {
    "/": {"title": "Home", "links": [A40, "/b"], "body": "<p>" + "x" * 40 + "</p><p>xxy</p>"},
    A40: {"title": "A"},
    "/b": {"title": "B", "body": "<p>" + "x" * 40 + "</p>"},
}


def walk(make_site, tmp_path, *args: str):
    site = make_site(SITE)
    result = run_cli("-a", f"seed={site('/')}", "-a", "delay=0", "-a", f"deadline={DEADLINE}", "-a", "report=r.json",
                     "-O", "out.jsonl", *allow_loopback(), *args, cwd=tmp_path, timeout=DEADLINE + 60)
    return site, result


def test_a_catastrophic_scope_pattern_keeps_the_deadline(make_site, tmp_path):
    site, result = walk(make_site, tmp_path, "-a", "include=(a+)+$")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["elapsed_s"] < DEADLINE and report["stopped"] is None
    # Neither link ends in a's: both are left out, the seed alone is fetched.
    assert site.paths() == ["/"] and report["out_of_scope"] == 2

    site, result = walk(make_site, tmp_path, "-a", "exclude=(a+)+$")
    assert result.returncode == 0, result.stderr
    assert site.paths() == ["/", A40, "/b"]


def test_a_catastrophic_grep_pattern_keeps_the_deadline(make_site, tmp_path):
    site, result = walk(make_site, tmp_path, "-a", "grep=(x+x+)+y")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["elapsed_s"] < DEADLINE and report["stopped"] is None
    assert site.paths() == ["/", A40, "/b"]
    matches = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [(match["url"], match["text"]) for match in matches] == [(site("/"), "xxy")]


def test_a_catastrophic_extract_regex_keeps_the_deadline(make_site, tmp_path):
    site, result = walk(make_site, tmp_path, "-a", "css=p::text", "-a", "regex=(x+x+)+y")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["elapsed_s"] < DEADLINE
    extracts = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [(item["url"], item["values"]) for item in extracts] == [(site("/"), ["xx"])]


def test_a_pattern_re2_cannot_run_is_one_line_exit_2_and_no_request(make_site, tmp_path):
    for args, message in [
        (("-a", r"grep=(\w+) \1"), r"grep '(\\w+) \\1' uses a backreference (\1), which RE2"),
        (("-a", "exclude=(?<!docs)/private"), "exclude '(?<!docs)/private' uses negative look-behind (?<!...), which RE2"),
    ]:
        site, result = walk(make_site, tmp_path, *args)
        assert result.returncode == 2
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("sitewalk: error: ") and message in lines[0]
        assert site.requests() == []
        assert not (tmp_path / "out.jsonl").exists()
