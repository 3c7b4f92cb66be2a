"""Ctrl-C and SIGTERM stop a walk gracefully: no new request, a valid feed, an "interrupted" report."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from tests.conftest import allow_loopback, helper_processes, running, start_cli, wait_for_pages

# Pages large enough to be read by the walk's helper process.
FILLER = "<p>" + "filler " * 3000 + "</p>"
SITE = {
    "/": {"links": [f"/p{i}" for i in range(30)], "body": FILLER},
    **{f"/p{i}": {"title": f"P{i}", "body": FILLER} for i in range(30)},
}


@pytest.mark.parametrize(
    ("signum", "group"),
    [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True)],
    ids=["SIGINT", "SIGTERM", "Ctrl-C to the process group"],
)
def test_signal_stops_the_walk_cleanly(make_site, tmp_path, signum, group):
    site = make_site(SITE)
    process = start_cli(
        "-a", f"seed={site('/')}", "-a", "delay=0.2", "-a", "report=r.json", "-O", "p.jsonl", *allow_loopback(),
        "-s", "LOG_LEVEL=DEBUG",  # for Scrapy's stats
        cwd=tmp_path, new_session=group, own_process=True,  # its helpers are its children
    )
    wait_for_pages(site, 3, process)
    helpers = helper_processes(parent=process.pid)
    assert helpers  # the walk reads pages in a helper process
    if group:  # what Ctrl-C in a terminal does: the walk's helper gets the signal too
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    sent_at = time.time()
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert "'finish_reason': 'interrupted'" in stderr  # Scrapy is told the stop too
    # The helper ended with the walk.
    assert running(helpers) == set()
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stopped"] == "interrupted"
    items = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    paths = site.paths()
    # At most the request already on its way when the signal came; nothing started after it.
    late = [e for e in site.requests() if e["time"] > sent_at + 0.05]
    assert late == []
    # The pages consumed are those first requested; what was in flight or not yet consumed after
    # the grace (see sitewalk.state.HALT_GRACE) was dropped: it heads the unvisited list.
    assert len(items) == report["fetched"] and len(paths) - 2 <= len(items) <= len(paths)
    assert [item["url"] for item in items] == [site(p) for p in paths[: len(items)]]
    dropped = [site(p) for p in paths[len(items):]]
    assert report["unvisited"][: len(dropped)] == dropped
    assert len(report["unvisited"]) > len(dropped)
