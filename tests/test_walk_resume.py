"""A walk stopped by a signal resumes from JOBDIR: same order, nothing fetched twice, whole-walk report."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

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
    assert report["fetched"] == len(expected)
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
