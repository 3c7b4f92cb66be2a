"""`scrapy crawl sitewalk` as users script it: feeds, the report, exit codes, one-line errors."""

from __future__ import annotations

import csv
import json

import pytest

from tests.conftest import allow_loopback, run_cli, run_sitewalk

SITE = {
    "/": {"title": "Home", "links": ["/a", "/b"]},
    "/a": {"title": "A, with a comma", "links": ["/a1"]},
    "/b": {"title": "B"},
    "/a1": {"title": "A1"},
}
INDEX_FIELDS = ["url", "final_url", "status", "byte_count", "depth", "content_type", "title", "found_on", "canonical",
                "noindex"]


def test_index_feed_and_report(make_site, tmp_path):
    site = make_site(SITE)
    result = run_cli(
        "-a", f"seed={site('/')}", "-a", "max_depth=1", "-a", "delay=0", "-a", "report=report.json",
        "-O", "pages.jsonl", *allow_loopback(), cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    items = [json.loads(line) for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
    assert [list(item) for item in items] == [INDEX_FIELDS] * 3
    assert [item["url"] for item in items] == [site("/"), site("/a"), site("/b")]
    assert items[1] == {
        "url": site("/a"), "final_url": site("/a"), "status": 200, "byte_count": items[1]["byte_count"],
        "depth": 1, "content_type": "text/html", "title": "A, with a comma", "found_on": site("/"),
        "canonical": None, "noindex": False,
    }
    assert items[1]["byte_count"] > 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert list(report) == [
        "seed", "origin", "fetched", "stopped", "error", "failures", "robots_skipped", "unvisited", "bytes",
        "elapsed_s", "out_of_scope", "sitemaps", "sitemaps_not_read", "broken_links", "unchecked_links", "refetched", "changes",
    ]
    assert report["error"] is None
    assert report["seed"] == site("/") and report["origin"] == site.url
    assert report["fetched"] == 3 and report["stopped"] is None
    # Every byte the site sent: the pages' (status line, headers and body) and robots.txt's 404.
    robots = [entry for entry in site.requests() if entry["path"] == "/robots.txt"]
    assert len(robots) == 1 and 0 < report["bytes"] - sum(item["byte_count"] for item in items) < 400
    assert site.paths() == ["/", "/a", "/b"]
    # The one summary line at the end of the walk.
    assert "sitewalk: 3 pages" in result.stderr and "stopped: no" in result.stderr


@pytest.mark.parametrize("feed", ["pages.csv", "pages.json"])
def test_other_feed_formats(make_site, tmp_path, feed):
    site = make_site(SITE)
    result = run_cli("-a", f"seed={site('/')}", "-a", "delay=0", "-O", feed, *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    if feed.endswith(".csv"):
        with (tmp_path / feed).open(newline="") as handle:
            rows = list(csv.DictReader(handle))
        assert list(rows[0]) == INDEX_FIELDS
        assert rows[1]["title"] == "A, with a comma" and rows[0]["found_on"] == ""
    else:
        rows = json.loads((tmp_path / feed).read_text())
        assert rows[0]["found_on"] is None
    assert [row["url"] for row in rows] == [site("/"), site("/a"), site("/b")]


def test_stop_is_a_reason_and_exit_zero(make_site, tmp_path):
    site = make_site(SITE)
    result = run_cli(
        "-a", f"seed={site('/')}", "-a", "max_pages=2", "-a", "delay=0", "-a", "report=r.json",
        "-O", "p.jsonl", *allow_loopback(), cwd=tmp_path,
    )
    assert result.returncode == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stopped"] == "max-pages" and report["unvisited"] == [site("/b")]
    assert site.paths() == ["/", "/a"]
    # The summary names the option that would have let the walk go on.
    assert "sitewalk: 2 pages, " in result.stderr and "; stopped: max-pages — raise -a max_pages; " in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "missing seed"),
        (["-a", "seed=ftp://example.com/"], "seed 'ftp://example.com/' is not an http(s) URL"),
        (["-a", "seed=not a url"], "is not an http(s) URL"),
        (["-a", "seed=http://127.0.0.1/", "-a", "max_depth=-1"], "max_depth must be >= 0"),
        (["-a", "seed=http://127.0.0.1/", "-a", "max_pages=0"], "max_pages must be >= 1"),
        (["-a", "seed=http://127.0.0.1/", "-a", "max_pages=ten"], "max_pages must be a whole number, got 'ten'"),
        (["-a", "seed=http://127.0.0.1/", "-a", "delay=soon"], "delay must be a number of seconds"),
        (["-a", "seed=http://127.0.0.1/", "-a", "deadline=0"], "deadline must be > 0"),
        (["-a", "seed=http://127.0.0.1/", "-a", "max_deth=2"], "unknown argument 'max_deth'"),
    ],
)
def test_bad_arguments_give_one_line_and_exit_2(tmp_path, args, message):
    result = run_cli(*args, "-O", "p.jsonl", cwd=tmp_path)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith("sitewalk: error:")]
    assert len(lines) == 1 and message in lines[0]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "p.jsonl").exists()


def test_unfetchable_seed_exits_non_zero_with_one_line(tmp_path, unused_port):
    result = run_cli(
        "-a", f"seed=http://127.0.0.1:{unused_port}/", "-s", "ROBOTSTXT_OBEY=false",
        "-O", "p.jsonl", *allow_loopback(), cwd=tmp_path,
    )
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"sitewalk: error: seed http://127.0.0.1:{unused_port}/ could not be fetched: connection refused"
    )
    assert "Traceback" not in result.stderr


def test_seed_disallowed_by_robots_names_the_setting(make_site, tmp_path):
    site = make_site({"/robots.txt": {"content_type": "text/plain", "body": "User-agent: *\nDisallow: /\n"}, "/": {}})
    result = run_cli("-a", f"seed={site('/')}", "-O", "p.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"sitewalk: error: seed {site('/')} could not be fetched: disallowed by the site's robots.txt; "
        "set -s ROBOTSTXT_OBEY=false to fetch it anyway"
    )
    assert site.paths() == []
    assert "Traceback" not in result.stderr


def test_progress_lines_and_stats(make_site, tmp_path):
    site = make_site(SITE)
    result = run_cli(
        "-a", f"seed={site('/')}", "-a", "max_depth=2", "-a", "delay=0", "-a", "max_bytes=1000000",
        "-s", "SITEWALK_PROGRESS_INTERVAL=0", "-O", "p.jsonl", *allow_loopback(), cwd=tmp_path,
    )
    assert result.returncode == 0
    progress = [line.split("INFO: ", 1)[1] for line in result.stderr.splitlines() if "INFO: progress:" in line]
    # One line at each new depth, with every budget and its limit.
    assert [line.split(", elapsed")[0].rsplit(", ", 1)[0] for line in progress] == [
        "progress: pages 1/20, depth 0/2",
        "progress: pages 2/20, depth 1/2",
        "progress: pages 4/20, depth 2/2",
    ]
    # Bytes in human units, the pace, and the pages waiting once the first page of each depth
    # went through the consumers (its links admitted): /a and /b, then /b behind /a and /a's link.
    assert " B/1 MB, elapsed " in progress[0] and "/60s, " in progress[0]
    assert [line.split(" pages/s, ")[1] for line in progress] == ["2 queued", "2 queued", "0 queued"]


# Bad input, as users have typed it ({seed}: the local site), and what the error line says.
BAD_INPUT = [
    (["-a", "seed=http://127.0.0.1:99999/"],
     "seed 'http://127.0.0.1:99999/' is not a valid URL: port out of range 0-65535 "
     "(give e.g. -a seed=https://docs.example.com/)"),
    (["-a", "seed=http://host :80/"],
     "seed 'http://host :80/' is not a valid URL: its host has a space in it (give e.g. -a seed=https://docs.example.com/)"),
    (["-a", "seed=http://[::1/"],
     "seed 'http://[::1/' is not a valid URL: invalid IPv6 URL (give e.g. -a seed=https://docs.example.com/)"),
    (["-a", "seed={seed}", "-a", "report=/no/such/dir/r.json"],
     "report '/no/such/dir/r.json' is in a directory that does not exist ('/no/such/dir'): "
     "give a file path in an existing directory, e.g. -a report=report.json"),
    (["-a", "seed={seed}", "-s", "SITEWALK_GUARD_ALLOW_NETWORKS=127.0.0.1/33"],
     "-s SITEWALK_GUARD_ALLOW_NETWORKS=127.0.0.1/33: '127.0.0.1/33' is not an IP network "
     "(use CIDRs such as 127.0.0.1/32,10.0.0.0/8)"),
    (["-a", "seed={seed}", "-s", "SITEWALK_PROGRESS_INTERVAL=abc"],
     "-s SITEWALK_PROGRESS_INTERVAL=abc is not a number of seconds "
     "(give e.g. -s SITEWALK_PROGRESS_INTERVAL=10; 0 = a progress line at each new depth only)"),
    # Scrapy would make the directory and fail with a traceback.
    (["-a", "seed={seed}", "-s", "JOBDIR=out.jsonl/job"],
     "-s JOBDIR=out.jsonl/job is or is under a file ('out.jsonl'): give a directory to create or write to, "
     "e.g. -s JOBDIR=job"),
]


@pytest.mark.parametrize(("args", "message"), BAD_INPUT, ids=["port", "space", "bracket", "report", "networks", "interval", "jobdir"])
def test_bad_input_is_one_line_exit_2_and_costs_no_file(make_site, tmp_path, args, message):
    site = make_site(SITE)
    (tmp_path / "out.jsonl").write_text("a feed from an earlier walk\n")
    arguments = [arg.replace("{seed}", site("/")) for arg in args]
    result = run_cli(*arguments, "-O", "out.jsonl", "-a", "delay=0", cwd=tmp_path)
    assert result.returncode == 2
    assert [line for line in result.stderr.splitlines() if line.startswith("sitewalk: error:")] == [
        f"sitewalk: error: {message}"
    ]
    assert "Traceback" not in result.stderr
    assert (tmp_path / "out.jsonl").read_text() == "a feed from an earlier walk\n"
    assert site.requests() == []


# Settings a component checks as Scrapy builds it (from_crawler), and what the error line says.
COMPONENT_SETTINGS = [
    (["-s", "SITEWALK_GUARD_ALLOW_NETWORKS=127.0.0.1/33"],
     "-s SITEWALK_GUARD_ALLOW_NETWORKS=127.0.0.1/33: '127.0.0.1/33' is not an IP network "
     "(use CIDRs such as 127.0.0.1/32,10.0.0.0/8)"),
    (["-s", "SITEWALK_PROGRESS_INTERVAL=abc"],
     "-s SITEWALK_PROGRESS_INTERVAL=abc is not a number of seconds "
     "(give e.g. -s SITEWALK_PROGRESS_INTERVAL=10; 0 = a progress line at each new depth only)"),
    (["-a", "render=always", "-s", "SITEWALK_RENDER_CHROMIUM=no-such-chromium"],
     "render needs Chromium, and 'no-such-chromium' is not an executable: install Debian's (apt-get install chromium) "
     "or point -s SITEWALK_RENDER_CHROMIUM=/path/to/chromium at one"),
]
# A feed an earlier walk left: a rewrite, even of the same items, would not keep these bytes.
EARLIER_FEED = b'{"url": "http://old.test/"}\n\xff and no newline at the end'


@pytest.mark.parametrize("process", ["AsyncCrawlerProcess", "CrawlerProcess"])
@pytest.mark.parametrize(("args", "message"), COMPONENT_SETTINGS, ids=["networks", "interval", "chromium"])
def test_a_component_refusing_its_setting_is_one_line_exit_2_before_any_request(make_site, tmp_path, process, args, message):
    site = make_site(SITE)
    feed = tmp_path / "out.jsonl"
    feed.write_bytes(EARLIER_FEED)
    force = ["-s", "FORCE_CRAWLER_PROCESS=True"] if process == "CrawlerProcess" else []
    result = run_cli("-a", f"seed={site('/')}", "-a", "delay=0", *allow_loopback(), *args, *force, "-O", "out.jsonl",
                     cwd=tmp_path)
    assert result.returncode == 2
    # Only the line: no traceback, no "Unhandled error in Deferred", no "Task exception was never retrieved".
    assert result.stderr.splitlines() == [f"sitewalk: error: {message}"]
    assert feed.read_bytes() == EARLIER_FEED
    assert site.requests() == []


FORMATS = "json, jsonlines, jsonl, jl, csv, xml, marshal, pickle"
FORMAT_HINT = f"(end it with .jsonl, .json, .csv or .xml, or give FILE:FORMAT with one of {FORMATS})"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-o", "out.txt"], f"-o 'out.txt': its extension .txt names no feed format {FORMAT_HINT}"),
        (["-O", "out.txt"], f"-O 'out.txt': its extension .txt names no feed format {FORMAT_HINT}"),
        (["-o", "somedir"], f"-o 'somedir': it has no extension to name its feed format {FORMAT_HINT}"),
        (["-o", "out.jsonl:jsonx"], f"-o 'out.jsonl:jsonx': 'jsonx' after the colon is not a feed format {FORMAT_HINT}"),
        (["-t", "jsonx", "-o", "out.jsonl"],
         "unrecognized argument '-t' (scrapy crawl names a feed's format after a colon: -o FILE:FORMAT)"),
        (["--bogus"], "unrecognized argument '--bogus' (scrapy crawl sitewalk -h lists the options)"),
        (["--nolgo"], "unrecognized argument '--nolgo' (did you mean --nolog?)"),
        (["extra"], "unrecognized argument 'extra' (scrapy crawl sitewalk -h lists the options)"),
        (["-a", "delay"], "Invalid -a value, use -a NAME=VALUE"),
        (["-o", "a.jsonl", "-O", "b.jsonl"], "Please use only one of -o/--output and -O/--overwrite-output"),
    ],
    ids=["extension", "overwrite", "directory", "colon", "t", "unknown", "close", "positional", "a", "o-and-O"],
)
def test_a_bad_option_is_one_line_exit_2_and_no_request(make_site, tmp_path, args, message):
    site = make_site(SITE)
    (tmp_path / "somedir").mkdir()
    result = run_cli("-a", f"seed={site('/')}", "-a", "delay=0", *allow_loopback(), *args, cwd=tmp_path)
    assert result.returncode == 2
    # No usage block: the one line.
    assert result.stderr.splitlines() == [f"sitewalk: error: {message}"]
    assert site.requests() == []
    assert sorted(path.name for path in tmp_path.iterdir()) == ["site0", "somedir"]


@pytest.mark.parametrize("output", ["out.txt", "somedir", "out.jsonl:jsonx"])
def test_an_output_without_a_format_is_refused_alike_by_both_commands(tmp_path, output):
    (tmp_path / "somedir").mkdir()
    crawl = run_cli("-a", "seed=http://127.0.0.1:9/", "-o", output, cwd=tmp_path)
    command = run_sitewalk("http://127.0.0.1:9/", "-o", output, cwd=tmp_path)
    assert crawl.returncode == command.returncode == 2
    assert crawl.stderr == command.stderr and len(crawl.stderr.splitlines()) == 1


def test_a_failed_seed_is_the_reports_error_and_the_summary_says_so(tmp_path, unused_port):
    seed = f"http://127.0.0.1:{unused_port}/"
    result = run_cli("-a", f"seed={seed}", "-a", "report=r.json", "-O", "p.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 1
    # The seed's own problem, not that of its robots.txt, which was asked for first.
    assert result.stderr.splitlines()[-1] == f"sitewalk: error: seed {seed} could not be fetched: connection refused"
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["error"] == {"url": seed, "kind": "refused", "reason": "connection refused"}
    summary = next(line for line in result.stderr.splitlines() if "sitewalk: 0 pages" in line)
    assert "walk failed: connection refused;" in summary and "ran out of pages" not in summary


def test_default_log_is_progress_and_summary_debug_has_scrapy_s_lines(make_site, tmp_path):
    site = make_site(SITE)
    args = ("-a", f"seed={site('/')}", "-a", "delay=0", "-O", "p.jsonl", *allow_loopback())
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # Every stderr line is one of sitewalk's: no start-up banner, settings, components or stats.
    loggers = [line.split(" [", 1)[1].split("]", 1)[0] for line in result.stderr.splitlines()]
    assert loggers == ["sitewalk.ledger", "sitewalk.ledger", "sitewalk.extensions"], result.stderr

    debug = run_cli(*args, "-s", "LOG_LEVEL=DEBUG", cwd=tmp_path)
    assert debug.returncode == 0
    for line in ("[scrapy.utils.log] INFO: Scrapy", "[scrapy.middleware] INFO: Enabled item pipelines",
                 "[scrapy.statscollectors] INFO: Dumping Scrapy stats", "'sitewalk/budget/pages': 3"):
        assert line in debug.stderr
