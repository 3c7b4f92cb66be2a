"""A walk that remembers (issue 33): a site walked again with ``--state``, against ``wget2 -N`` and ``wget -N``, on nginx.

    python benchmarks/rewalk.py [--site docs|generated] [--pages 500] [--rtt 0.02] [--concurrency 8]

On a copy of the Python docs (``--site docs``, the default: :func:`sites.prepare_docs`, copied
again for each tool) or a generated site (:mod:`gensite`), served by nginx, which answers
``If-None-Match`` and ``If-Modified-Since`` with 304: sitewalk's first walk with a new state, the
same walk again with nothing changed, then again after 10 files changed, one of them edited to
remove every link to a page that is then deleted (on the docs; on the generated site the page is
deleted with its links left, so it answers 404); and ``wget2 -N`` and ``wget -N`` (which ask with
``If-Modified-Since``) the same three times on the same files. For each walk: its time, the body
bytes nginx sent (its access log's ``$body_bytes_sent``), the 304s, how many of the changed files
nginx sent whole, and what sitewalk's report says changed, checked against the files changed. With
``--rtt``, every walk goes through :mod:`latency`'s proxy (that round trip added), sitewalk keeps
``--concurrency`` requests in flight and wget2 as many threads; wget has one.
"""

from __future__ import annotations

import argparse
import collections
import json
import posixpath
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gensite
from server import nginx, stop
from sites import WORK, Site, lock_work, prepare_docs

HERE = Path(__file__).resolve().parent
SITEWALK = Path(sys.executable).parent / "sitewalk"
CHANGED = 10
WALKS = ("first walk", "nothing changed", f"{CHANGED} changed, 1 removed")
# The links a walk follows on the docs' pages (sitewalk and wget read <a> and <area>).
_HREF = re.compile(r'<(?:a|area)\b[^>]*?\bhref="([^"]*)"', re.IGNORECASE)
_EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//|#)", re.IGNORECASE)


def _served(log: Path, start: int, changed: set[str]) -> dict[str, int]:
    """What nginx's access log says after its first ``start`` lines: requests, body bytes, 304s,
    and how many of the ``changed`` paths it sent whole (a GET answered 200; a HEAD sends no body)."""
    requests = [line.split(" ") for line in log.read_text().splitlines()[start:]]
    return {"requests": len(requests), "body_bytes": sum(int(fields[3]) for fields in requests),
            "304s": sum(fields[2] == "304" for fields in requests),
            "changed_sent": len({fields[1] for fields in requests if fields[0] == "GET" and fields[2] == "200"} & changed)}


def _sitewalk(url: str, work: Path, concurrency: int) -> dict[str, Any]:
    command = [str(SITEWALK), url, "--max-depth", "50", "--max-pages", "100000", "--max-bytes", "2G", "--deadline", "1h",
               "--delay", "0", "--concurrency", str(concurrency), "--no-robots", "--allow-networks", "127.0.0.1/32",
               "--state", "state", "--report", "report.json", "-o", "pages.jsonl"]
    (work / "pages.jsonl").unlink(missing_ok=True)
    subprocess.run(command, cwd=work, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report = json.loads((work / "report.json").read_text())
    changes = report["changes"]
    pages = [json.loads(line) for line in (work / "pages.jsonl").read_text().splitlines()]
    origin = url.rsplit("/", 1)[0]
    return {"pages": report["fetched"], "new": changes["new"], "changed": changes["changed"],
            "unchanged": changes["unchanged"],
            "removed": [f"{entry['url'].removeprefix(origin + '/')} ({entry['why']})" for entry in changes["removed"]],
            "changed_paths": sorted(page["url"].removeprefix(origin) for page in pages if page["change"] == "changed")}


def _wget(tool: str, url: str, work: Path, concurrency: int) -> dict[str, Any]:
    if tool == "wget2 -N":
        command = ["wget2", "-r", "-N", "-l", "inf", "-nH", "-q", "--no-robots", f"--max-threads={concurrency}",
                   "-P", "mirror", url]
    else:
        command = ["wget", "-r", "-N", "-l", "inf", "-nH", "-q", "-e", "robots=off", "-P", "mirror", *TOOLS[tool], url]
    subprocess.run(command, cwd=work, check=False)
    return {}


# wget -N asks with If-Modified-Since; --no-if-modified-since makes it send a HEAD first instead,
# and then it reads the unchanged pages it has for their links.
TOOLS: dict[str, tuple[str, ...]] = {"sitewalk": (), "wget2 -N": (), "wget -N": (),
                                     "wget -N --no-if-modified-since": ("--no-if-modified-since",)}


def _graph(root: Path) -> dict[str, set[str]]:
    """Each HTML file of ``root`` (a site path) and the site paths its links point to."""
    graph = {}
    for file in sorted(root.rglob("*.html")):
        path = file.relative_to(root).as_posix()
        targets = set()
        for href in _HREF.findall(file.read_text(errors="replace")):
            target = href.split("#", 1)[0].split("?", 1)[0]
            if target and not _EXTERNAL.match(href):
                targets.add(posixpath.normpath(posixpath.join(posixpath.dirname(path), target)))
        graph[path] = targets
    return graph


def _reached(graph: dict[str, set[str]], without: str | None = None) -> set[str]:
    seen, queue = {"index.html"}, ["index.html"]
    while queue:
        for target in graph[queue.pop()]:
            if target != without and target in graph and target not in seen:
                seen.add(target)
                queue.append(target)
    return seen


def plan_docs(root: Path) -> tuple[list[str], str]:
    """The docs' files to change and the page to remove: a library page with the fewest pages
    linking to it whose removal leaves every other page reachable; the pages that link to it lose
    those links, and more pages spread over the site are edited, ``CHANGED`` in all."""
    graph = _graph(root)
    reached = _reached(graph)
    inlinks = collections.defaultdict(set)
    for path in reached:
        for target in graph[path] - {path}:
            inlinks[target].add(path)
    removed = min((len(inlinks[path]), path) for path in reached
                  if path.startswith("library/") and _reached(graph, path) == reached - {path})[1]
    linkers = sorted(inlinks[removed])
    others = sorted(reached - {"index.html", removed, *linkers})
    step = len(others) // (CHANGED - len(linkers) + 1)
    return [*linkers, *(others[step * (i + 1)] for i in range(CHANGED - len(linkers)))], removed


def change_docs(root: Path, edited: list[str], removed: str) -> None:
    for path in edited:
        file = root / path
        text = file.read_text()
        relative = posixpath.relpath(removed, posixpath.dirname(path))
        # Every element linking to the page removed (<a>, <area>, <link rel=next>), with its content.
        pattern = (rf'<a\b[^>]*\bhref="{re.escape(relative)}(?:#[^"]*)?"[^>]*>.*?</a>'
                   rf'|<(?:area|link)\b[^>]*\bhref="{re.escape(relative)}(?:#[^"]*)?"[^>]*>')
        text = re.sub(pattern, "", text, flags=re.DOTALL)
        file.write_text(text.replace("</body>", "<p>edited</p></body>"))
    (root / removed).unlink()


def plan_generated(pages: int) -> tuple[list[str], str]:
    step = pages // (CHANGED + 2)
    return [gensite.page_path(step * (i + 1)) for i in range(CHANGED)], gensite.page_path(step * (CHANGED + 1))


def change_generated(root: Path, edited: list[str], removed: str) -> None:
    """Edit ``edited`` and delete ``removed``, its links left (it answers 404)."""
    for path in edited:
        file = root / path
        file.write_text(file.read_text().replace("</body>", "<p>edited</p></body>"))
    (root / removed).unlink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", choices=("docs", "generated"), default="docs")
    parser.add_argument("--pages", type=int, default=500, help="pages of the generated site")
    parser.add_argument("--rtt", type=float, default=0.0)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--tools", default=",".join(TOOLS), help="comma-separated, among: " + ", ".join(TOOLS))
    parser.add_argument("--rounds", type=int, default=1, help="each tool's three walks this many times (medians)")
    args = parser.parse_args(argv)
    lock_work()
    if args.site == "docs":
        source = prepare_docs()
        edited, removed = plan_docs(source)
        change = change_docs
    else:
        source = WORK / "sites" / f"rewalk-{args.pages}"
        gensite.generate(source, args.pages, links=10)
        edited, removed = plan_generated(args.pages)
        change = change_generated
    changed = {"/" + path for path in [*edited, removed]}
    print(f"edited: {', '.join(edited)}; removed: {removed}", flush=True)
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for tool in [tool for _ in range(args.rounds) for tool in args.tools.split(",")]:
        root = WORK / "sites" / "rewalk-served"
        if root.exists():
            shutil.rmtree(root)
        shutil.copytree(source, root)
        site = Site("rewalk", root)
        with nginx([site]), tempfile.TemporaryDirectory() as scratch:
            work = Path(scratch)
            proxy = None
            port = site.port
            if args.rtt:
                proxy = subprocess.Popen([sys.executable, str(HERE / "latency.py"), str(site.port), "--rtt", str(args.rtt)],
                                         stdout=subprocess.PIPE, text=True)
                assert proxy.stdout is not None
                port = int(proxy.stdout.readline().strip().rsplit(":", 1)[1])
            url = f"http://127.0.0.1:{port}/index.html"
            try:
                for label in WALKS:
                    if label == WALKS[2]:
                        change(root, edited, removed)
                    start = len(site.access_log.read_text().splitlines())
                    began = time.perf_counter()
                    said = (_sitewalk(url, work, args.concurrency) if tool == "sitewalk"
                            else _wget(tool, url, work, args.concurrency))
                    seconds = time.perf_counter() - began
                    row = {"tool": tool, "walk": label, "seconds": round(seconds, 2),
                           **_served(site.access_log, start, changed), **said}
                    runs.setdefault((tool, label), []).append(row)
                    print(json.dumps(row), flush=True)
            finally:
                if proxy is not None:
                    stop(proxy, 15)
    # Each walk's median time and its ratio to the first walk's in the same round; the rest, the last round's.
    rows = [{**done[-1], "seconds": statistics.median(row["seconds"] for row in done),
             "ratio": statistics.median(row["seconds"] / first["seconds"]
                                        for row, first in zip(done, runs[(tool, WALKS[0])], strict=True))}
            for (tool, _), done in runs.items()]
    print()
    print(f"| tool | walk | s | × first | requests | body bytes | % of first | 304s | changed files sent | new | changed "
          f"| unchanged | removed |  (site={args.site}, rtt={args.rtt}, concurrency={args.concurrency}, "
          f"median of {args.rounds})")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    first: dict[str, dict[str, Any]] = {}
    for row in rows:
        base = first.setdefault(row["tool"], row)
        share = 100 * row["body_bytes"] / max(1, base["body_bytes"])
        print(f"| {row['tool']} | {row['walk']} | {row['seconds']:.2f} | {row['ratio']:.2f} | {row['requests']} | {row['body_bytes']} | "
              f"{share:.2f} % | {row['304s']} | {row['changed_sent']} | {row.get('new', '')} | {row.get('changed', '')} | "
              f"{row.get('unchanged', '')} | {', '.join(row.get('removed', []))} |")
    print()
    for row in rows:
        if row["tool"] == "sitewalk" and row["walk"] == WALKS[1]:
            print(f"- nothing changed: every page unchanged: {row['unchanged'] == row['pages']}")
        if row["tool"] == "sitewalk" and row["walk"] == WALKS[2]:
            expected = sorted("/" + path for path in edited)
            if args.site == "generated":
                expected = sorted([*expected, "/" + removed])
            print(f"- {WALKS[2]}: the changed pages are the files changed: {row['changed_paths'] == expected} "
                  f"(said {len(row['changed_paths'])}: {row['changed_paths']}; expected {expected})")
            print(f"- {removed} in removed: {any(entry.startswith(removed + ' ') for entry in row['removed'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
