"""A walk stopped by a signal resumes from JOBDIR: same order, nothing fetched twice, whole-walk report;
a damaged journal is said, and the pages it lost are fetched again and counted."""

from __future__ import annotations

import json
import signal
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import allow_loopback, run_cli, start_cli, wait_for_pages

PAGES = 12
SITE = {
    "/": {"links": [f"/p{i}" for i in range(PAGES)]},
    **{f"/p{i}": {"title": f"P{i}", "links": [f"/p{i}/child"]} for i in range(PAGES)},
    **{f"/p{i}/child": {"title": f"C{i}"} for i in range(PAGES)},
}


def interrupt_after(pages: int, site: Any, args: list[str], cwd: Path, signum: int) -> None:
    """Start the walk, and stop it with ``signum`` once the site has received ``pages`` pages."""
    process = start_cli(*args, cwd=cwd)
    wait_for_pages(site, pages, process)
    process.send_signal(signum)
    process.communicate(timeout=30)


def test_interrupted_walk_resumes_where_it_stopped(make_site, tmp_path):
    site = make_site(SITE)
    args = ["-a", f"seed={site('/')}", "-a", "max_depth=2", "-a", "max_pages=100", "-a", "delay=0.15",
            "-a", "report=r.json", "-O", "pages.jsonl", "-s", "JOBDIR=job", *allow_loopback()]
    interrupt_after(5, site, args, tmp_path, signal.SIGTERM)
    interrupted = json.loads((tmp_path / "r.json").read_text())
    assert interrupted["stopped"] == "interrupted" and interrupted["unvisited"]
    fetched_first = len(site.paths())
    assert interrupted["fetched"] == fetched_first < 1 + 2 * PAGES

    second = run_cli(*args, cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    paths = site.paths()
    # Every page exactly once across both runs, in one breadth-first order.
    expected = ["/"] + [f"/p{i}" for i in range(PAGES)] + [f"/p{i}/child" for i in range(PAGES)]
    assert paths == expected
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stopped"] is None and report["unvisited"] == []
    assert report["fetched"] == len(expected) and report["refetched"] == 0
    assert report["elapsed_s"] >= interrupted["elapsed_s"]
    items = [json.loads(line) for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
    assert [item["url"] for item in items] == [site(p) for p in expected]
    # The pages' bytes, and robots.txt's 404 once in each run.
    assert 0 < report["bytes"] - sum(item["byte_count"] for item in items) < 2 * 400


def test_budget_spent_before_the_stop_carries_over(make_site, tmp_path):
    site = make_site(SITE)
    args = ["-a", f"seed={site('/')}", "-a", "max_depth=2", "-a", "max_pages=8", "-a", "delay=0.15",
            "-a", "report=r.json", "-O", "pages.jsonl", "-s", "JOBDIR=job", *allow_loopback()]
    interrupt_after(3, site, args, tmp_path, signal.SIGINT)
    assert run_cli(*args, cwd=tmp_path).returncode == 0
    # max_pages counts the whole walk, not each run.
    assert len(site.paths()) == 8
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["fetched"] == 8 and report["stopped"] == "max-pages"


def test_grep_match_budget_carries_over(make_site, tmp_path):
    site = make_site({
        "/": {"links": [f"/p{i}" for i in range(10)]},
        **{f"/p{i}": {"body": "<p>needle</p>"} for i in range(10)},
    })
    args = ["-a", f"seed={site('/')}", "-a", "grep=needle", "-a", "max_matches=6", "-a", "delay=0.15",
            "-a", "report=r.json", "-O", "m.jsonl", "-s", "JOBDIR=job", *allow_loopback()]
    interrupt_after(4, site, args, tmp_path, signal.SIGTERM)
    assert run_cli(*args, cwd=tmp_path).returncode == 0
    matches = [json.loads(line) for line in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert [m["url"] for m in matches] == [site(f"/p{i}") for i in range(6)]
    assert site.paths() == ["/"] + [f"/p{i}" for i in range(6)]
    assert json.loads((tmp_path / "r.json").read_text())["stopped"] == "callback"


FLAT = {"/": {"links": [f"/p{i}" for i in range(8)]}, **{f"/p{i}": {"title": f"P{i}"} for i in range(8)}}
FLAT_ORDER = list(FLAT)


def walk_part(make_site: Any, tmp_path: Path) -> tuple[Any, list[str], Path]:
    """Walk 5 of FLAT's 9 pages with JOBDIR=job (max_pages=5, one page at a time); the site, the
    arguments to go on with (max_pages raised) and the journal."""
    site = make_site(FLAT)
    args = ["-a", f"seed={site('/')}", "-a", "delay=0.02", "-a", "concurrency=1", "-a", "report=r.json",
            "-o", "pages.jsonl", "-s", "JOBDIR=job", *allow_loopback()]
    first = run_cli(*args, "-a", "max_pages=5", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert site.paths() == FLAT_ORDER[:5]
    return site, [*args, "-a", "max_pages=100"], tmp_path / "job" / "sitewalk.journal"


def done_on(line: bytes, site: Any) -> list[str]:
    """The paths a journal line names as done."""
    return [url.removeprefix(site.url) for url in json.loads(line)["done"]]


def assert_whole_walk_fetching_again(site: Any, cwd: Path, again: list[str], counted: int) -> None:
    """The resumed walk finished the site, requesting exactly ``again`` a second time, and its report
    counts ``counted`` of them; the feed holds every page once, in order."""
    requested = Counter(site.paths())
    assert set(requested) == set(FLAT_ORDER)
    assert sorted(path for path, times in requested.items() if times == 2) == sorted(again)
    assert max(requested.values()) <= 2
    report = json.loads((cwd / "r.json").read_text())
    assert report["fetched"] == len(FLAT_ORDER) and report["stopped"] is None
    assert report["refetched"] == counted
    urls = [json.loads(line)["url"] for line in (cwd / "pages.jsonl").read_text().splitlines()]
    assert urls == [site(path) for path in FLAT_ORDER]


def journal_messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "its journal" in line]


def test_a_last_line_cut_short_by_a_kill_resumes_and_its_pages_are_counted_again(make_site, tmp_path):
    site, args, journal = walk_part(make_site, tmp_path)
    lines = journal.read_bytes().split(b"\n")[:-1]
    # The walk killed as it wrote the line of its last page done: the line ends in its "origin".
    last = max(number for number, line in enumerate(lines) if number and done_on(line, site))
    again = done_on(lines[last], site)
    cut = lines[last][: lines[last].index(b'"origin"') + 3]
    journal.write_bytes(b"\n".join(lines[:last]) + b"\n" + cut)
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (said,) = journal_messages(result.stderr)
    assert "INFO" in said and f"JOBDIR job: its journal's last line (line {last + 1}) was cut short" in said
    assert_whole_walk_fetching_again(site, tmp_path, again, len(again))
    assert f"refetched: {len(again)}" in result.stderr


def nuls_after_done(line: bytes) -> bytes:
    """Part of the line overwritten with NUL bytes (a damaged disk block), its list of pages done intact."""
    start = line.index(b'"origin"')
    return line[:start] + b"\x00" * 16 + line[start + 16:]


# Each damage to the line that says the walk's third page is done, and what it is said to be.
DAMAGE: list[Any] = [
    pytest.param(nuls_after_done, "not JSON", id="not-json"),
    pytest.param(lambda line: line.replace(b'"pages":', b'"pages":"x",\x22_":'), "'pages' is not a count", id="wrong-type"),
    pytest.param(lambda line: line.replace(b'"origin"', b'"\xff\xfe"', 1), "not UTF-8", id="not-utf-8"),
    pytest.param(lambda line: b"[" + line + b"]", "not a JSON object", id="not-an-object"),
]


@pytest.mark.parametrize(("damaged", "why"), DAMAGE)
def test_a_journal_damaged_in_the_middle_resumes_before_the_damage_saying_so_and_counts_the_pages_fetched_again(
    make_site, tmp_path, damaged: Callable[[bytes], bytes], why: str
):
    site, args, journal = walk_part(make_site, tmp_path)
    lines = journal.read_bytes().split(b"\n")[:-1]
    number = next(number for number, line in enumerate(lines) if number and "/p1" in done_on(line, site))
    again = [path for line in lines[number:] for path in done_on(line, site)]
    assert len(again) >= 3  # /p1 to /p3 at least: the damaged line is in the middle
    kept = lines[:number]
    lines[number] = damaged(lines[number])
    journal.write_bytes(b"\n".join(lines) + b"\n")
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    (said,) = journal_messages(result.stderr)
    done_before = sum(len(done_on(line, site)) for line in kept[1:])
    assert "WARNING" in said and (
        f"JOBDIR job: its journal cannot be read at line {number + 1} ({why}); resuming from line {number} of "
        f"{len(lines)}: {done_before} pages done, {len(FLAT_ORDER) - done_before} queued; the pages done after it "
        "are fetched again (the report's refetched counts them)"
    ) in said
    assert_whole_walk_fetching_again(site, tmp_path, again, len(again))
    assert f"refetched: {len(again)}" in result.stderr


def test_a_line_too_damaged_to_read_is_fetched_again_and_counted_only_as_far_as_the_journal_says(make_site, tmp_path):
    site, args, journal = walk_part(make_site, tmp_path)
    lines = journal.read_bytes().split(b"\n")[:-1]
    number = next(number for number, line in enumerate(lines) if number and "/p1" in done_on(line, site))
    lost, named = done_on(lines[number], site), [path for line in lines[number + 1:] for path in done_on(line, site)]
    lines[number] = b"\x00" * len(lines[number])
    journal.write_bytes(b"\n".join(lines) + b"\n")
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (said,) = journal_messages(result.stderr)
    assert f"cannot be read at line {number + 1} (not JSON)" in said
    # The unreadable line's pages are fetched again too, and not counted: nothing says which they were.
    assert_whole_walk_fetching_again(site, tmp_path, lost + named, len(named))


@pytest.mark.parametrize(("damaged", "why"), [
    pytest.param(lambda lines: [], "its journal (sitewalk.journal) is empty", id="empty"),
    pytest.param(lambda lines: [b'{"journal": 9}', *lines[1:]], "is of another sitewalk (journal version 9",
                 id="foreign-header"),
    pytest.param(lambda lines: lines[1:], "does not start with a sitewalk journal's header (line 1 is another JSON object)",
                 id="no-header"),
    pytest.param(lambda lines: [lines[0], b"\xff" + lines[1], *lines[2:]],
                 "its journal cannot be read at line 2 (not UTF-8), before the walk's first page is recorded",
                 id="seed-line"),
])
def test_a_journal_with_nothing_to_resume_is_refused_in_one_line_and_nothing_is_touched(
    make_site, tmp_path, damaged: Callable[[list[bytes]], list[bytes]], why: str
):
    site, args, journal = walk_part(make_site, tmp_path)
    lines = damaged(journal.read_bytes().split(b"\n")[:-1])
    journal.write_bytes(b"".join(line + b"\n" for line in lines))
    before = (journal.read_bytes(), (tmp_path / "pages.jsonl").read_bytes(), len(site.requests()))
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    (error,) = [line for line in result.stderr.splitlines() if "error" in line.lower()]
    assert error.startswith("sitewalk: error: JOBDIR job: ") and why in error
    assert ": nothing in it can be resumed; delete job to start the walk over" in error
    assert (journal.read_bytes(), (tmp_path / "pages.jsonl").read_bytes(), len(site.requests())) == before
