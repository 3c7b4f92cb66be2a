"""The README's first command: `sitewalk-example` serves the built-in site and walks it."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

# sitewalk-example runs its server and its walk as processes of their own (left to CI: -m slow).
pytestmark = pytest.mark.slow


def test_the_example_walks_the_built_in_site():
    script = Path(sys.executable).parent / "sitewalk-example"
    result = subprocess.run([str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    # What the example site's server received, in order.
    served = [line.split()[3] for line in result.stderr.splitlines() if line.startswith("example site: GET")]
    assert served == ["/robots.txt", "/", "/guide/", "/faq.html", "/notes.txt", "/moved.html",
                      "/guide/install.html", "/guide/usage.html", "/index.html"]
    assert "/private/drafts.html" not in served  # robots.txt disallows it
    index = result.stdout.split("# index (pages.jsonl)")[1].split("# report")[0].strip().splitlines()
    # depth, status, bytes, final URL, title: one line per page, in fetch order.
    assert [(line.split()[0], line.split()[4].split("/", 3)[3]) for line in index] == [
        ("0", ""), ("1", "guide/"), ("1", "faq.html"), ("1", "notes.txt"),
        ("2", "guide/install.html"), ("2", "guide/usage.html"), ("2", "index.html"),
    ]
    report = json.loads(result.stdout.split("# report (report.json)")[1].split("\n# To run")[0])
    assert report["fetched"] == 7 and report["stopped"] is None
    assert [url.rsplit("/", 2)[-2:] for url in report["robots_skipped"]] == [["private", "drafts.html"]]


def test_the_example_prints_commands_that_run_as_they_are(tmp_path):
    script = Path(sys.executable).parent / "sitewalk-example"
    first, again = tmp_path / "first", tmp_path / "again"
    first.mkdir()
    again.mkdir()
    result = subprocess.run([str(script)], cwd=first, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    walk_command, serve_command = [line[2:] for line in result.stdout.splitlines() if line.startswith("$ ")]
    assert "..." not in walk_command
    assert "-s SITEWALK_GUARD_ALLOW_NETWORKS=127.0.0.1/32" in walk_command
    server = subprocess.Popen(shlex.split(serve_command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        assert url in walk_command
        rerun = subprocess.run(walk_command, shell=True, cwd=again, capture_output=True, text=True, timeout=120, check=False)
    finally:
        server.terminate()
        _, served_log = server.communicate(timeout=30)
    assert rerun.returncode == 0, rerun.stderr
    pages = [json.loads(line) for line in (again / "pages.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(pages) == 7 and pages[0]["url"] == url
    assert json.loads((again / "report.json").read_text(encoding="utf-8"))["fetched"] == 7
    served = [line.split()[3] for line in served_log.splitlines() if line.startswith("example site: GET")]
    assert served[:2] == ["/robots.txt", "/"] and len(served) == 9
    assert list(first.iterdir()) == []
