"""The README's first command: `sitewalk-example` serves the built-in site and walks it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


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
    report = json.loads(result.stdout.split("# report (report.json)")[1])
    assert report["fetched"] == 7 and report["stopped"] is None
    assert [url.rsplit("/", 2)[-2:] for url in report["robots_skipped"]] == [["private", "drafts.html"]]
