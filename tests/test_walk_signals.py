"""Ctrl-C and SIGTERM stop a walk gracefully: no new request, a valid feed, an "interrupted" report."""

from __future__ import annotations

import json
import signal
import time

import pytest

from tests.conftest import allow_loopback, start_cli, wait_for_pages

SITE = {"/": {"links": [f"/p{i}" for i in range(30)]}, **{f"/p{i}": {"title": f"P{i}"} for i in range(30)}}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_stops_the_walk_cleanly(make_site, tmp_path, signum):
    site = make_site(SITE)
    process = start_cli(
        "-a", f"seed={site('/')}", "-a", "delay=0.2", "-a", "report=r.json", "-O", "p.jsonl", *allow_loopback(),
        cwd=tmp_path,
    )
    wait_for_pages(site, 3, process)
    process.send_signal(signum)
    sent_at = time.time()
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stopped"] == "interrupted"
    items = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    paths = site.paths()
    # At most the request already on its way when the signal came; nothing started after it.
    late = [e for e in site.requests() if e["time"] > sent_at + 0.05]
    assert late == []
    assert len(items) == report["fetched"] and len(paths) - 1 <= len(items) <= len(paths)
    assert [item["url"] for item in items] == [site(p) for p in paths[: len(items)]]
    assert report["unvisited"] and not set(report["unvisited"]) & {site(p) for p in paths}
