"""Benchmark of issue 20: sitewalk's concurrency against wget2 --max-threads and wget, through a latency proxy.

    python benchmarks/concurrency.py [--smoke] [--runs 3] [--rtt 0.02 --rtt 0.1]
                                     [--only latency|loopback|memory] [--write-results]

Run it as benchmarks/run.py is run (the project's Python, root or sudo for apt-get); it reuses
run.py's sites, nginx and measurements, and adds benchmarks/latency.py between the tools and
nginx. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import installs
import report
import server
from experiments import rounds
from measure import Results, Tools
from sites import HERE, Site, lock_work, prepare_docs, prepare_generated
from tables import failures, fmt, is_resource

EXPERIMENTS = ("latency", "loopback", "memory")
LEVELS = (1, 2, 4, 8, 16)
RTTS = (0.02, 0.1)
WGET2_THREADS = 8
PACKAGES = {**installs.PACKAGES, "wget2": "wget2"}


# -- the proxy


@contextmanager
def latency(site: Site, rtt: float) -> Iterator[Site]:
    """``site`` behind benchmarks/latency.py with ``rtt`` seconds per round trip, for the block:
    the same site (and access log) on the proxy's port."""
    process = subprocess.Popen(
        [sys.executable, str(HERE / "latency.py"), str(site.port), "--rtt", str(rtt)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
        start_new_session=True,  # Ctrl-C reaches this script, which then stops the proxy itself
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("listening on "):
            raise SystemExit(f"the latency proxy did not start (it said {line!r})")
        yield dataclasses.replace(site, port=int(line.rsplit(":", 1)[1]))
    finally:
        server.stop(process, signal.SIGTERM)


# -- experiments


def sitewalk_tool(n: int) -> str:
    return f"sitewalk c={n}"


# Scrapy fetching the walk's pages from a list, this many at a time (benchmarks/floor.py).
FLOOR_CONCURRENCY = 8
FLOOR_TOOL = f"scrapy floor c={FLOOR_CONCURRENCY}"


def tool_names(levels: Sequence[int]) -> tuple[str, ...]:
    return ("wget", f"wget2 t={WGET2_THREADS}", *(sitewalk_tool(n) for n in levels), FLOOR_TOOL)


def walk(results: Results, tools: Tools, work: str, site: Site, levels: Sequence[int], runs: int) -> None:
    """wget, wget2 and sitewalk at each concurrency level over ``site``, in rotating rounds."""
    print(f"{work}: {', '.join(tool_names(levels))} from {site.url}", flush=True)
    by_name = {sitewalk_tool(n): n for n in levels}
    # The floor's list: the pages a walk of the site requests (one walk beforehand, not measured).
    listing = tools.sitewalk(work, site, tool="listing", extra=["-a", f"concurrency={FLOOR_CONCURRENCY}"])
    paths = tools.tmp / f"paths-{len(results.runs)}.txt"
    paths.write_text("\n".join(listing.paths) + "\n", encoding="utf-8")
    for tool in rounds(tool_names(levels), runs):
        if tool == FLOOR_TOOL:
            results.runs.append(tools.floor(work, site, paths, FLOOR_CONCURRENCY, FLOOR_TOOL))
        elif tool == "wget":
            results.runs.append(tools.wget(work, site))
        elif tool.startswith("wget2"):
            results.runs.append(tools.wget2(work, site, WGET2_THREADS, tool=tool))
        else:
            results.runs.append(tools.sitewalk(work, site, tool=tool,
                                               extra=["-a", f"concurrency={by_name[tool]}"]))


def memory(results: Results, tools: Tools, work: str, site: Site, levels: Sequence[int], runs: int) -> None:
    """Peak RSS of sitewalk's whole walk of ``site`` at each concurrency level (on loopback)."""
    print(f"{work}: sitewalk at concurrency {', '.join(map(str, levels))} from {site.url}", flush=True)
    names = {sitewalk_tool(n): n for n in levels}
    for tool in rounds(tuple(names), runs):
        results.runs.append(tools.sitewalk(work, site, tool=tool, extra=["-a", f"concurrency={names[tool]}"]))


# -- the report


def _pages(paths: list[str]) -> set[str]:
    """Pages a walker that follows links fetches: what wget fetched less embedded resources."""
    return {path for path in paths if not is_resource(path)}


def walk_table(results: Results, works: Sequence[str], tools: Sequence[str]) -> list[str]:
    lines = [
        "| round trip | tool | runs | median wall s | min–max s | median CPU s | pages | × wget2 | × wget | × sitewalk c=1 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for work in works:
        wget2 = results.median(work, f"wget2 t={WGET2_THREADS}", "wall")
        wget = results.median(work, "wget", "wall")
        one = results.median(work, sitewalk_tool(1), "wall")
        for tool in tools:
            runs = results.of(work, tool)
            if not runs:
                continue
            wall = statistics.median(r.wall for r in runs)
            pages = statistics.median(r.pages for r in runs)
            spread = f"{min(r.wall for r in runs):.2f}–{max(r.wall for r in runs):.2f}"
            cpu = statistics.median(r.cpu for r in runs)
            lines.append(
                f"| {work} | {tool} | {len(runs)} | {wall:.2f} | {spread} | {cpu:.2f} | {pages:.0f} | "
                f"{fmt(wall / wget2 if wget2 else None, '.2f')} | {fmt(wall / wget if wget else None, '.2f')} | "
                f"{fmt(wall / one if one and tool.startswith('sitewalk') else None, '.2f')} |"
            )
    return lines


def pivot_table(results: Results, works: Sequence[str], levels: Sequence[int]) -> list[str]:
    """Median wall seconds, one column per round trip, and sitewalk / wget2 beside each."""
    head = "| tool | " + " | ".join(f"{w} s | × wget2" for w in works) + " |"
    lines = [head, "|---|" + "---|---|" * len(works)]
    for tool in tool_names(levels):
        cells = []
        for work in works:
            wall = results.median(work, tool, "wall")
            wget2 = results.median(work, f"wget2 t={WGET2_THREADS}", "wall")
            ratio = wall / wget2 if wall and wget2 else None
            cells.append(f"{fmt(wall, '.2f')} | {fmt(ratio, '.2f')}")
        lines.append(f"| {tool} | " + " | ".join(cells) + " |")
    return lines


def sanity(results: Results, works: Sequence[str], tools: Sequence[str]) -> list[str]:
    """Whether every run fetched the pages wget's first run of the same work fetched (embedded
    resources aside), and whether a tool requested a path twice."""
    lines = []
    for work in works:
        reference_runs = results.of(work, "wget")
        if not reference_runs:
            continue
        reference = _pages(reference_runs[0].paths)
        for tool in tools:
            runs = results.of(work, tool)
            if not runs:
                continue
            counts = sorted({len(_pages(r.paths)) for r in runs})
            differ = [r for r in runs if _pages(r.paths) != reference]
            twice = max(len([p for p in r.paths if not is_resource(p)]) - len(_pages(r.paths)) for r in runs)
            verdict = "the same pages as wget" if not differ else f"{len(differ)} of {len(runs)} run(s) differ from wget"
            if differ:
                first = _pages(differ[0].paths)
                verdict += (f" (first: {len(reference - first)} only wget's: {', '.join(sorted(reference - first)[:3]) or '–'}; "
                            f"{len(first - reference)} only its own: {', '.join(sorted(first - reference)[:3]) or '–'})")
            note = f"; up to {twice} page(s) requested twice in a run" if twice else ""
            lines.append(f"- {work}, {tool}: {'/'.join(map(str, counts))} pages, {verdict}{note}")
    return lines


def memory_table(results: Results, work: str, levels: Sequence[int]) -> list[str]:
    lines = ["| walk | tool | runs | pages | median wall s | median CPU s | median peak RSS MB | max peak RSS MB |",
             "|---|---|---|---|---|---|---|---|"]
    for n in levels:
        runs = results.of(work, sitewalk_tool(n))
        if runs:
            lines.append(f"| {work} | {sitewalk_tool(n)} | {len(runs)} | {statistics.median(r.pages for r in runs):.0f} | "
                         f"{statistics.median(r.wall for r in runs):.2f} | {statistics.median(r.cpu for r in runs):.2f} | "
                         f"{statistics.median(r.rss_kb for r in runs) / 1024:.1f} | {max(r.rss_kb for r in runs) / 1024:.1f} |")
    return lines


def verdicts(results: Results, rtt_works: dict[float, str], loopback: str, mem_work: str, smoke: bool) -> list[str]:
    note = " (smoke site: not the target's measurement)" if smoke else ""
    wget2_tool = f"wget2 t={WGET2_THREADS}"

    def mark(ok: bool) -> str:
        return "**met**" if ok else "**not met**"

    lines = []
    for rtt, work in rtt_works.items():
        target = 1.0 if rtt >= 0.1 else 1.5
        eight = results.median(work, sitewalk_tool(8), "wall")
        wget2 = results.median(work, wget2_tool, "wall")
        if eight and wget2:
            lines.append(f"- {work}: sitewalk c=8 / wget2 t=8 = {eight / wget2:.2f} (target ≤ {target}): "
                         f"{mark(eight / wget2 <= target)}{note}")
        floor = results.median(work, FLOOR_TOOL, "wall")
        if eight and floor and wget2:
            lines.append(f"  - for scale, not a target: {FLOOR_TOOL} (Scrapy fetching the same pages from a list, "
                         f"reading nothing) / wget2 t=8 = {floor / wget2:.2f}; sitewalk c=8 / {FLOOR_TOOL} = "
                         f"{eight / floor:.2f}")
    one = results.median(loopback, sitewalk_tool(1), "wall")
    eight = results.median(loopback, sitewalk_tool(8), "wall")
    wget = results.median(loopback, "wget", "wall")
    if one and wget:
        lines.append(f"- {loopback}: sitewalk c=1 / wget = {one / wget:.2f} (target ≤ 1.0): {mark(one / wget <= 1.0)}{note}")
    if one and eight:
        lines.append(f"- {loopback}: sitewalk c=8 / sitewalk c=1 = {eight / one:.2f} (target: no slower, ≤ 1.0): "
                     f"{mark(eight / one <= 1.0)}{note}")
    rss = results.median(mem_work, sitewalk_tool(8), "rss_kb")
    if rss:
        lines.append(f"- {mem_work}: sitewalk c=8 peak RSS {rss / 1024:.1f} MB (target ≤ 100 MB): {mark(rss / 1024 <= 100)}{note}")
    return lines


# -- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        help="a 50-page generated site, one round trip (20 ms), concurrency 1 and 8, one run each (~30 s)")
    parser.add_argument("--runs", type=int, default=3, help="runs per tool (medians are reported); default 3")
    parser.add_argument("--rtt", type=float, action="append",
                        help="seconds per round trip through the proxy (repeatable); default 0.02 and 0.1")
    parser.add_argument("--only", choices=EXPERIMENTS, action="append", help="run only this experiment (repeatable)")
    parser.add_argument("--write-results", action="store_true", help="also write this benchmark's section of benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    experiments = set(args.only or EXPERIMENTS)
    runs = 1 if args.smoke else args.runs
    rtts = tuple(args.rtt or ((0.02,) if args.smoke else RTTS))
    levels = (1, 8) if args.smoke else LEVELS
    installs.check_python()
    os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    installs.install(need_docs=not args.smoke and bool(experiments & {"latency", "loopback"}), packages=PACKAGES)
    lock_work()

    walk_site: Site | None
    mem_site: Site | None
    if args.smoke:
        walk_site = Site("smoke50", prepare_generated("smoke50", 50))
        mem_site = Site("smoke", prepare_generated("smoke", 200))
        mem_work = "smoke 200 (loopback)"
    else:
        walk_site = Site("docs", prepare_docs()) if experiments & {"latency", "loopback"} else None
        mem_site = Site("gen20k", prepare_generated("gen20k", 20_000)) if "memory" in experiments else None
        mem_work = "gen20k (loopback)"
    name = walk_site.name if walk_site else "docs"
    rtt_works = {rtt: f"{name} {rtt * 1000:g} ms" for rtt in rtts}
    loopback_work = f"{name} loopback"
    sites = [s for s in (walk_site, mem_site) if s is not None]

    server.stop_on_sigterm()
    results = Results()
    start_commit = report.head_commit()
    load_before = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="sitewalk-bench-"))
    try:
        with server.nginx(sites):
            tools = Tools(tmp)
            if walk_site is not None and "latency" in experiments:
                for rtt, work in rtt_works.items():
                    with latency(walk_site, rtt) as slow_site:
                        walk(results, tools, work, slow_site, levels, runs)
            if walk_site is not None and "loopback" in experiments:
                walk(results, tools, loopback_work, walk_site, levels, runs)
            if mem_site is not None and "memory" in experiments:
                memory(results, tools, mem_work, mem_site, (1, 8), runs)
    except KeyboardInterrupt:
        print("interrupted: nginx and the proxy stopped", file=sys.stderr)
        return 130
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        report.keep_runs(results.runs, "last-concurrency-runs.json")

    title = "smoke run (tiny site, not a measurement)" if args.smoke else f"medians of {runs} run(s) per tool"
    facts = report.facts_with_load(start_commit, load_before)
    facts[-1] += f", {_first_line(['wget2', '--version'])}"
    walk_works = [w for w in (loopback_work, *rtt_works.values()) if results.of(w, "wget")]
    out = [f"# Concurrency (issue 20): {title}", "", *facts, "",
           "Command: `python benchmarks/concurrency.py"
           + (" --smoke" if args.smoke else f" --runs {runs}")
           + "".join(f" --rtt {rtt:g}" for rtt in (args.rtt or ()))
           + "".join(f" --only {e}" for e in (args.only or ())) + " --write-results`.", "",
           "Wall time includes process start-up; CPU = user + system seconds of the tool's process and the "
           "processes it waited for (less sensitive to other load than wall time); pages = requests the server "
           "logged during the run. "
           "Round trips are added by benchmarks/latency.py (one per request, one more per new connection); "
           "loopback is nginx direct. Other processes share this machine's CPUs, so times are noisy: the "
           "min–max column shows the spread; compare ratios within one run.", ""]
    if walk_works:
        out += ["## Whole-site walks: median wall seconds, and × wget2", "", *pivot_table(results, walk_works, levels), "",
                "### Every tool, with the spread of its runs", "", *walk_table(results, walk_works, tool_names(levels)), "",
                "### Pages fetched (sanity)", "", *sanity(results, walk_works, tool_names(levels)), ""]
    if results.of(mem_work, sitewalk_tool(8)):
        out += ["## Memory", "", *memory_table(results, mem_work, (1, 8)), ""]
    out += ["## Targets", "", *verdicts(results, rtt_works, loopback_work, mem_work, args.smoke), ""]
    bad = failures(results)
    if bad:
        out += ["## Failed runs", "", *bad, ""]
    text = "\n".join(out)
    print("\n" + text)
    if args.write_results:
        # One section for each set of experiments, so that a partial run does not erase the others.
        report.write_results(f"concurrency.py {','.join(sorted(experiments))}", text)
    return 1 if bad else 0


def _first_line(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return (done.stdout or done.stderr or "?").strip().splitlines()[0]


if __name__ == "__main__":
    sys.exit(main())
