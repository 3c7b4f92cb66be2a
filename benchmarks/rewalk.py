"""A walk that remembers (issue 33): a site walked again with ``--state``, against ``wget -N``, on nginx.

    python benchmarks/rewalk.py [--pages 500] [--rtt 0.02] [--concurrency 8]

On a generated site (:mod:`gensite`) served by nginx, which answers ``If-None-Match`` and
``If-Modified-Since`` with 304: sitewalk's first walk with a new state, the same walk again with
nothing changed, then again after 10 files changed and one was deleted; and ``wget -r -N`` (which
asks with ``If-Modified-Since``) the same three times. For each walk: its time, the body bytes
nginx sent (its access log's ``$body_bytes_sent``), the 304s, and what sitewalk's report says
changed. With ``--rtt``, every walk goes through :mod:`latency`'s proxy (that round trip added)
and sitewalk keeps ``--concurrency`` requests in flight; wget has one.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gensite
from server import nginx, stop
from sites import WORK, Site, lock_work

HERE = Path(__file__).resolve().parent
SITEWALK = Path(sys.executable).parent / "sitewalk"
CHANGED = 10


def _served(log: Path, start: int) -> tuple[int, int, int]:
    """Requests, body bytes and 304s in nginx's access log after its first ``start`` lines."""
    lines = log.read_text().splitlines()[start:]
    requests = [line.split(" ") for line in lines]
    return len(requests), sum(int(fields[3]) for fields in requests), sum(fields[2] == "304" for fields in requests)


def _sitewalk(url: str, work: Path, concurrency: int) -> dict[str, object]:
    command = [str(SITEWALK), url, "--max-depth", "50", "--max-pages", "100000", "--max-bytes", "2G", "--deadline", "1h",
               "--delay", "0", "--concurrency", str(concurrency), "--no-robots", "--allow-networks", "127.0.0.1/32",
               "--state", "state", "--report", "report.json", "-o", "pages.jsonl"]
    (work / "pages.jsonl").unlink(missing_ok=True)
    subprocess.run(command, cwd=work, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report = json.loads((work / "report.json").read_text())
    changes = report["changes"]
    return {"pages": report["fetched"], "new": changes["new"], "changed": changes["changed"],
            "unchanged": changes["unchanged"], "removed": [entry["why"] for entry in changes["removed"]]}


def _wget(url: str, work: Path, *more: str) -> dict[str, object]:
    command = ["wget", "-r", "-N", "-l", "inf", "-nH", "-q", "-e", "robots=off", "-P", "mirror", *more, url]
    subprocess.run(command, cwd=work, check=False)
    return {}


# wget -N asks with If-Modified-Since; --no-if-modified-since makes it send a HEAD first instead,
# and then it reads the unchanged pages it has for their links.
WGET = {"wget -N": (), "wget -N --no-if-modified-since": ("--no-if-modified-since",)}


def _change(root: Path, pages: int) -> list[str]:
    """Edit ``CHANGED`` pages spread over the site and delete one more; their paths."""
    step = pages // (CHANGED + 2)
    edited = [gensite.page_path(step * (i + 1)) for i in range(CHANGED)]
    for path in edited:
        file = root / path
        file.write_text(file.read_text().replace("</body>", "<p>edited</p></body>"))
    gone = gensite.page_path(step * (CHANGED + 1))
    (root / gone).unlink()
    return [*edited, gone]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--rtt", type=float, default=0.0)
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args(argv)
    lock_work()
    source = WORK / "sites" / f"rewalk-{args.pages}"
    gensite.generate(source, args.pages, links=10)
    rows = []
    for tool in ("sitewalk", *WGET):
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
                for label in ("first walk", "nothing changed", f"{CHANGED} changed, 1 deleted"):
                    if label.startswith(str(CHANGED)):
                        _change(root, args.pages)
                    start = len(site.access_log.read_text().splitlines())
                    began = time.perf_counter()
                    said = _sitewalk(url, work, args.concurrency) if tool == "sitewalk" else _wget(url, work, *WGET[tool])
                    seconds = time.perf_counter() - began
                    requests, body, not_modified = _served(site.access_log, start)
                    rows.append({"tool": tool, "walk": label, "seconds": round(seconds, 2), "requests": requests,
                                 "body_bytes": body, "304s": not_modified, **said})
                    print(json.dumps(rows[-1]), flush=True)
            finally:
                if proxy is not None:
                    stop(proxy, 15)
    print()
    print(f"| tool | walk | s | requests | body bytes | 304s | new | changed | unchanged | removed |  (pages={args.pages}, "
          f"rtt={args.rtt}, concurrency={args.concurrency})")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['tool']} | {row['walk']} | {row['seconds']} | {row['requests']} | {row['body_bytes']} | {row['304s']} | "
              f"{row.get('new', '')} | {row.get('changed', '')} | {row.get('unchanged', '')} | {row.get('removed', '')} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
