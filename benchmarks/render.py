"""What render costs (issue 24): rendered pages per second and peak memory (the walk and its
browser together) for a walk that renders 200 app-shell pages; and how many pages render=auto
renders on two real documentation sites (none, it should be).

Run from the repository root with the project's Python: ``.venv/bin/python benchmarks/render.py``
(``--pages N``, ``--concurrency N``, ``--only shells`` or ``--only docs``). Needs Debian's
``chromium`` and, for the docs, ``python3.11-doc`` and ``postgresql-doc-15`` (skipped if absent).
Every server is on loopback: a ``python -m http.server`` started here, on a free port.

Each walk runs in a child process (this script with ``--child``), which prints the walk's report
and Scrapy's stats as JSON. Memory is sampled every 0.2 s over the child and all its descendants
(Playwright's driver, Chromium's processes): the peak of the summed RSS (shared pages counted in
each process, an over-estimate) and of the summed PSS (shared pages split between the processes
that share them, the better measure of what the walk takes from the machine).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

DOCS = {
    "python3.11-doc": Path("/usr/share/doc/python3.11-doc/html"),
    "postgresql-doc-15": Path("/usr/share/doc/postgresql-doc-15/html"),
}
FANOUT = 5
APP_JS = """
const root = document.getElementById('root');
fetch('/data/' + root.dataset.page + '.json').then(r => r.json()).then(page => {
  document.title = page.title;
  root.innerHTML = '<h1>' + page.title + '</h1>' + page.paragraphs.map(p => '<p>' + p + '</p>').join('')
    + '<ul>' + page.links.map(n => '<li><a href="/p' + n + '.html">Page ' + n + '</a></li>').join('') + '</ul>';
});
"""


def make_shells(directory: Path, pages: int) -> None:
    """``pages`` app shells, p0.html to p{pages-1}.html, each linking FANOUT more (a tree walked
    breadth first); each fetches /app.js and /app.css, and its content from /data/<n>.json."""
    (directory / "data").mkdir(parents=True, exist_ok=True)
    (directory / "app.js").write_text(APP_JS, encoding="utf-8")
    (directory / "app.css").write_text("body { font-family: sans-serif; } h1 { color: #333; }\n", encoding="utf-8")
    for number in range(pages):
        (directory / f"p{number}.html").write_text(
            "<!DOCTYPE html><html><head><meta charset='utf-8'><title>App</title>"
            "<script defer src='/app.js'></script><link rel='stylesheet' href='/app.css'></head><body>"
            "<noscript>You need to enable JavaScript to run this app.</noscript>"
            f"<div id='root' data-page='{number}'></div></body></html>", encoding="utf-8")
        links = [child for child in range(FANOUT * number + 1, FANOUT * number + FANOUT + 1) if child < pages]
        data = {"title": f"Page {number}", "links": links,
                "paragraphs": [f"Paragraph {n} of page {number}, written by a script from JSON. " * 4 for n in range(8)]}
        (directory / "data" / f"{number}.json").write_text(json.dumps(data), encoding="utf-8")


def serve(directory: Path) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", str(directory)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    assert server.stdout is not None
    found = re.search(r"port (\d+)", server.stdout.readline())
    assert found, "http.server did not start"
    return server, f"http://127.0.0.1:{found.group(1)}"


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def memory(pids: list[int]) -> tuple[int, int]:
    """Summed RSS and PSS of ``pids``, in bytes."""
    rss = pss = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith(("Rss:", "Pss:")):
                    kilobytes = int(line.split()[1]) * 1024
                    if line.startswith("Rss:"):
                        rss += kilobytes
                    else:
                        pss += kilobytes
        except (OSError, ValueError):
            continue
    return rss, pss


def measured_walk(seed: str, options: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """Walk in a child process, sampling the memory of its process tree; its report, stats,
    wall time, peak RSS and peak PSS."""
    child = subprocess.Popen([sys.executable, __file__, "--child", json.dumps([seed, options, settings])],
                             stdout=subprocess.PIPE, text=True)
    peaks = [0, 0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            rss, pss = memory(descendants(child.pid))
            peaks[0], peaks[1] = max(peaks[0], rss), max(peaks[1], pss)
            done.wait(0.2)

    sampler = threading.Thread(target=sample)
    started = time.perf_counter()
    sampler.start()
    output, _ = child.communicate()
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    if child.returncode != 0:
        raise SystemExit(f"the walk failed (exit status {child.returncode})")
    result: dict[str, Any] = json.loads(output.splitlines()[-1])
    result.update(wall_s=wall, peak_rss=peaks[0], peak_pss=peaks[1])
    return result


class Stats:
    """An extension keeping the walk's stats (the child prints them)."""

    seen: dict[str, Any] = {}

    def __init__(self, crawler: Any) -> None:
        from scrapy import signals

        self.stats = crawler.stats
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Any) -> Stats:
        return cls(crawler)

    def spider_closed(self) -> None:
        Stats.seen = {key: value for key, value in self.stats.get_stats().items() if isinstance(value, (int, float))}


def child(arguments: str) -> int:
    from sitewalk import walk

    seed, options, settings = json.loads(arguments)
    report = walk(seed, settings={**settings, "EXTENSIONS": {"__main__.Stats": 900}}, **options)
    print(json.dumps({"fetched": report.fetched, "bytes": report.bytes, "elapsed_s": report.elapsed_s,
                      "failures": len(report.failures), "stopped": report.stopped, "stats": Stats.seen}))
    return 0


COMMON = {"delay": 0, "deadline": 3600, "max_bytes": 10_000_000_000, "max_depth": 100}
SETTINGS = {"ROBOTSTXT_OBEY": False, "SITEWALK_GUARD_ALLOW_NETWORKS": "127.0.0.1/32"}


def shells(pages: int, concurrency: int) -> None:
    with tempfile.TemporaryDirectory(prefix="sitewalk-render-") as work:
        make_shells(Path(work), pages)
        server, origin = serve(Path(work))
        try:
            result = measured_walk(f"{origin}/p0.html", {**COMMON, "render": "always", "max_pages": pages,
                                                         "concurrency": concurrency},
                                   {**SETTINGS, "SITEWALK_RENDER_PAGES_OPEN": max(concurrency, 2)})
        finally:
            server.kill()
            server.wait()
    stats = result["stats"]
    rendered = stats.get("sitewalk/render/pages", 0)
    print(f"{pages} app shells, render=always, concurrency {concurrency}: {result['fetched']} pages, {rendered} rendered, "
          f"{stats.get('sitewalk/render/requests', 0)} browser requests, {stats.get('sitewalk/render/launches', 0)} browser launches, "
          f"{result['failures']} failures")
    print(f"  walk {result['elapsed_s']:.1f}s ({rendered / result['elapsed_s']:.2f} rendered pages/s), process {result['wall_s']:.1f}s; "
          f"peak RSS {result['peak_rss'] / 1e6:.0f} MB, peak PSS {result['peak_pss'] / 1e6:.0f} MB (the walk and its browser)")


def docs() -> None:
    for name, root in DOCS.items():
        if not root.is_dir():
            print(f"{name}: not installed (apt-get install {name}), skipped")
            continue
        server, origin = serve(root)
        try:
            for mode in ("never", "auto"):
                result = measured_walk(f"{origin}/index.html", {**COMMON, "render": mode, "max_pages": 100_000}, SETTINGS)
                stats = result["stats"]
                print(f"{name}, render={mode}: {result['fetched']} pages in {result['elapsed_s']:.1f}s, "
                      f"{stats.get('sitewalk/render/pages', 0)} rendered, {stats.get('sitewalk/render/plain', 0)} left as they came, "
                      f"{stats.get('sitewalk/render/launches', 0)} browser launches; peak RSS {result['peak_rss'] / 1e6:.0f} MB")
        finally:
            server.kill()
            server.wait()


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        return child(sys.argv[2])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--only", choices=("shells", "docs"))
    options = parser.parse_args()
    print(f"load average at the start: {' '.join(f'{load:.1f}' for load in os.getloadavg())}")
    if options.only in (None, "shells"):
        shells(options.pages, options.concurrency)
    if options.only in (None, "docs"):
        docs()
    print(f"load average at the end: {' '.join(f'{load:.1f}' for load in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
