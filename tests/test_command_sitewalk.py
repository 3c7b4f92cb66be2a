"""The ``sitewalk`` command, installed and run from a directory outside the checkout."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET

import pytest

from sitewalk.config import arguments
from tests.conftest import ROOT, allow_loopback, run_cli, run_sitewalk

SITE = {
    "/": {"title": "Home", "links": ["/a", "/b"]},
    "/a": {"title": "A", "links": ["/a1"], "body": "<p>needle, one</p><h2>x, y</h2>"},
    "/b": {"title": "B", "body": "<p>Needle two</p><h2>z</h2>"},
    "/a1": {"title": "A1"},
}


def lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_items_go_to_stdout_and_only_progress_and_summary_to_stderr(make_site, tmp_path):
    assert not tmp_path.is_relative_to(ROOT)
    site = make_site(SITE)
    workdir = tmp_path / "work"
    workdir.mkdir()
    result = run_sitewalk(site("/"), "--delay", "0", *allow_loopback(), cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert [(item["url"], item["depth"], item["title"]) for item in lines(result.stdout)] == [
        (site("/"), 0, "Home"), (site("/a"), 1, "A"), (site("/b"), 1, "B"),
    ]
    assert site.paths() == ["/", "/a", "/b"]
    messages = [line.split(" INFO: ", 1)[1] for line in result.stderr.splitlines()]
    assert [message.split(":")[0] for message in messages] == ["progress", "progress", "sitewalk"]
    assert messages[-1].startswith("sitewalk: 3 pages")
    assert list(workdir.iterdir()) == []


def test_walk_options_reach_the_walk(make_site, tmp_path):
    site = make_site(SITE)
    result = run_sitewalk(
        site("/"), "--max-depth", "2", "--max-pages", "3", "--delay", "0", "--report", "r.json",
        "--headers", "X-Test: 1", "-o", "pages.jsonl", *allow_loopback(), cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert site.paths() == ["/", "/a", "/b"]
    assert [entry["headers"].get("X-Test") for entry in site.requests()] == ["1"] * 4  # robots.txt too
    assert [item["url"] for item in lines((tmp_path / "pages.jsonl").read_text())] == [site("/"), site("/a"), site("/b")]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stopped"] == "max-pages" and report["unvisited"] == [site("/a1")]


def test_output_file_is_replaced_not_appended(make_site, tmp_path):
    site = make_site(SITE)
    for _ in range(2):
        result = run_sitewalk(site("/"), "--max-depth", "0", "--delay", "0", "-o", "p.json", *allow_loopback(), cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    assert [item["url"] for item in json.loads((tmp_path / "p.json").read_text())] == [site("/")]


def test_grep_options(make_site, tmp_path):
    site = make_site(SITE)
    result = run_sitewalk(
        site("/"), "--grep", "needle", "--ignore-case", "--context", "0", "--max-matches", "5",
        "--delay", "0", *allow_loopback(), cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert [(item["url"], item["text"], item["before"]) for item in lines(result.stdout)] == [
        (site("/a"), "needle, one", []), (site("/b"), "Needle two", []),
    ]


def test_extract_with_a_format_given_by_t(make_site, tmp_path):
    site = make_site(SITE)
    result = run_sitewalk(
        site("/"), "--css", "h2::text", "--delay", "0", "-t", "csv", "-o", "values.out", *allow_loopback(), cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    with (tmp_path / "values.out").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(row["url"], row["depth"]) for row in rows] == [(site("/a"), "1"), (site("/b"), "1")]


def test_config_file_and_options_over_it(make_site, tmp_path):
    site = make_site(SITE)
    (tmp_path / "walk.toml").write_text(f'seed = "{site("/")}"\nmax_depth = 0\ndelay = 0\n', encoding="utf-8")
    result = run_sitewalk("--config", "walk.toml", "--max-depth", "1", "-o", "p.xml", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    urls = [item.findtext("url") for item in ET.parse(tmp_path / "p.xml").getroot()]
    assert urls == [site("/"), site("/a"), site("/b")]


def test_help_lists_every_argument_with_its_default():
    result = run_sitewalk("--help", cwd=ROOT.parent)
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    for name, _, default, spec in arguments():
        if name != "seed":
            assert f"--{name.replace('_', '-')}" in text
            assert f"{' '.join(spec.help.split())} (default: {default})" in text
    for option in ("-o FILE", "-t FORMAT", "--jobdir DIR", "-s NAME=VALUE"):
        assert option in text
    assert "--no-no-" not in text  # a negative flag (no_parent) is --no-parent alone


def test_scrapy_crawl_help_lists_the_same_arguments(tmp_path):
    result = run_cli("-h", cwd=tmp_path)
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    for name, _, default, spec in arguments():
        assert f"-a {name}=" in text
        assert " ".join(spec.help.split()) in text
        if default != "required":
            assert f"(default: {default})" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-pages", "0"], "sitewalk: error: --max-pages must be >= 1, got 0"),
        (["--max-page", "3"], "sitewalk: error: unrecognized argument '--max-page' (did you mean --max-pages?)"),
        (["--delay", "soon"], "sitewalk: error: --delay must be a number of seconds, got 'soon'"),
        (["-o", "p.nope"], "sitewalk: error: -o 'p.nope': its extension .nope names no feed format (end it with .jsonl, "
         ".json, .csv or .xml, or give FILE:FORMAT with one of json, jsonlines, jsonl, jl, csv, xml, marshal, pickle)"),
        (["-o", "p.json:nope"], "sitewalk: error: -o 'p.json:nope': 'nope' after the colon is not a feed format (end"),
        (["-o", "."], "sitewalk: error: -o '.': it has no extension to name its feed format (end"),
        (["-t", "jsonx"], "sitewalk: error: -t 'jsonx' is not a feed format (give one of json, jsonlines, jsonl, jl, csv,"),
        (["--zork"], "sitewalk: error: unrecognized argument '--zork' (sitewalk --help lists the options)"),
        (["--max-pages"], "sitewalk: error: argument --max-pages: expected one argument"),
        (["-o", "/proc/p.jsonl"], "sitewalk: error: output '/proc/p.jsonl' cannot be written (No such file or directory): "
         "give a file path in an existing directory, e.g. -o pages.jsonl"),
        (["-o", "no/such/dir/p.jsonl"], "sitewalk: error: output 'no/such/dir/p.jsonl' is in a directory that does not exist "
         "('no/such/dir'): give a file path in an existing directory, e.g. -o pages.jsonl"),
        (["-o", "/proc:jsonl"], "sitewalk: error: output '/proc' is a directory"),
        (["--report", "/proc/r.json"], "sitewalk: error: report '/proc/r.json' cannot be written (No such file or directory)"),
        # Messages name the input to change as this command spells it.
        (["--grep", "a("], "sitewalk: error: --grep 'a(' is not a valid regular expression"),
        (["--grep", "a(", "--css", "p"], "sitewalk: error: grep and css/xpath are different consumers"),
        (["--regex", "x"], "sitewalk: error: regex filters css/xpath values: give --css ... or --xpath ... too"),
        (["--report", "/no/such/dir/r.json"], "sitewalk: error: report '/no/such/dir/r.json' is in a directory"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(make_site, tmp_path, args, message):
    site = make_site(SITE)
    result = run_sitewalk(site("/"), *args, *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 2
    # One line: no usage block before it.
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(message)
    assert site.requests() == []
    assert [path.name for path in tmp_path.iterdir()] == ["site0"]


def test_missing_seed_is_exit_2(tmp_path):
    result = run_sitewalk("--max-pages", "3", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == "sitewalk: error: missing seed URL: give the URL to walk, e.g. https://docs.example.com/"


def test_unfetchable_seed_is_exit_1(tmp_path, unused_port):
    result = run_sitewalk(f"http://127.0.0.1:{unused_port}/", "-s", "ROBOTSTXT_OBEY=false", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"sitewalk: error: seed URL http://127.0.0.1:{unused_port}/ could not be fetched: connection refused"
    )
    assert result.stdout == ""


def test_a_failed_seed_names_the_fix_as_this_command_spells_it(make_site, tmp_path):
    site = make_site({"/robots.txt": {"content_type": "text/plain", "body": "User-agent: *\nDisallow: /\n"}, "/": {}})
    result = run_sitewalk(site("/"), *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1].startswith(f"sitewalk: error: seed URL {site('/')} could not be fetched: ")
    assert result.stderr.splitlines()[-1].endswith("-s ROBOTSTXT_OBEY=false to fetch it anyway")
    assert site.paths() == []


def test_feeds_setting_replaces_stdout(make_site, tmp_path):
    site = make_site(SITE)
    result = run_sitewalk(
        site("/"), "--max-depth", "0", "--delay", "0", "-s", 'FEEDS={"f.json": {"format": "json"}}', *allow_loopback(),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert [item["url"] for item in json.loads((tmp_path / "f.json").read_text())] == [site("/")]


def test_a_component_refusing_its_setting_is_one_line_exit_2_before_any_request(make_site, tmp_path):
    site = make_site(SITE)
    feed = tmp_path / "out.jsonl"
    feed.write_bytes(b'{"url": "http://old.test/"}\n\xff and no newline at the end')
    result = run_sitewalk(site("/"), "-s", "SITEWALK_PROGRESS_INTERVAL=abc", "-o", "out.jsonl", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "sitewalk: error: -s SITEWALK_PROGRESS_INTERVAL=abc is not a number of seconds "
        "(give e.g. -s SITEWALK_PROGRESS_INTERVAL=10; 0 = a progress line at each new depth only)"
    ]
    assert feed.read_bytes() == b'{"url": "http://old.test/"}\n\xff and no newline at the end'
    assert site.requests() == []


def test_the_options_sitewalk_mcp_has_set_the_same_settings(make_site, tmp_path):
    from sitewalk.cli import _SETTING_OPTIONS
    from sitewalk.config import SETTINGS
    from sitewalk.mcp.options import OPTIONS

    # The same names and settings as sitewalk-mcp's, and as a config file's keys.
    assert {name: SETTINGS[name][0] for name in _SETTING_OPTIONS} == {
        name: OPTIONS[name].setting for name in ("allow_networks", "robots", "user_agent")}
    site = make_site({"/robots.txt": {"content_type": "text/plain", "body": "User-agent: *\nDisallow: /\n"},
                      "/": {"title": "Home"}})
    result = run_sitewalk(site("/"), "--allow-networks", "127.0.0.1/32", "--no-robots", "--user-agent", "ci-check/1",
                          "--max-depth", "0", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # robots.txt not asked, the page fetched though it disallows it, with the User-Agent given.
    assert [(entry["path"], entry["headers"].get("User-Agent")) for entry in site.requests()] == [("/", "ci-check/1")]
    refused = run_sitewalk(site("/"), "--max-depth", "0", "--robots", cwd=tmp_path)
    assert refused.returncode == 1
    assert site.requests() == [site.requests()[0]]  # the guard refused loopback without --allow-networks
