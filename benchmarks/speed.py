"""Benchmark of issue 34, in one run: start-up, CPU per page, the latency table, loopback docs, gen20k, Markdown.

    python benchmarks/speed.py [--runs 1] [--only startup|cpu|latency|loopback|gen20k|markdown] [--write-results]

Run it as benchmarks/run.py is run (the project's Python, root or sudo for apt-get); it reuses
run.py's sites, nginx and measurements, concurrency.py's latency proxy and floor, and startup.py.
It writes one section of benchmarks/RESULTS.md, with a line for each of issue 34's targets.
See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import installs
import report
import server
import startup
from concurrency import FLOOR_CONCURRENCY, FLOOR_TOOL, PACKAGES, latency, sitewalk_tool
from experiments import rounds
from measure import Results, Tools
from sites import Site, lock_work, prepare_docs, prepare_generated
from tables import failures, fmt
from targets import Measure, Target, peak_rss_mb, ratio

EXPERIMENTS = ("startup", "cpu", "latency", "loopback", "gen20k", "markdown")
RTTS = (0.02, 0.1)
LEVELS = (1, 8, 16)
THREADS = (8, 16)
ONE_PAGE = "sitewalk 1 page"
# The same walks on asyncio's own event loop instead of uvloop's (ASYNCIO_EVENT_LOOP in sitewalk.settings):
# the measurement of that seam.
ASYNCIO = "sitewalk asyncio loop"
ASYNCIO_ONE_PAGE = "sitewalk asyncio loop 1 page"
ASYNCIO_ARGS = ["-s", "ASYNCIO_EVENT_LOOP=asyncio.SelectorEventLoop"]
MARKDOWN = "sitewalk index-main"
MARKDOWN_ARGS = ["-a", "content=markdown", "-a", "main_content=true"]


def wget2_tool(threads: int) -> str:
    return f"wget2 t={threads}"


# -- experiments


def cpu_per_page(results: Results, tools: Tools, work: str, site: Site, runs: int) -> None:
    """Whole walks of ``site`` and walks stopped after one page (start-up, the helpers' too), in
    rounds: what a page costs in each process is the difference over the pages between."""
    print(f"{work}: sitewalk, whole site and one page, CPU of each process; on uvloop and on asyncio's loop", flush=True)
    for tool in rounds(("sitewalk", ONE_PAGE, ASYNCIO, ASYNCIO_ONE_PAGE), runs):
        max_pages = 1 if tool in (ONE_PAGE, ASYNCIO_ONE_PAGE) else 100_000
        extra = ASYNCIO_ARGS if tool in (ASYNCIO, ASYNCIO_ONE_PAGE) else []
        results.runs.append(tools.sitewalk(work, site, tool=tool, max_pages=max_pages, extra=extra))


def per_page(results: Results, work: str, attr: str, tool: str = "sitewalk", one_page: str = ONE_PAGE) -> float | None:
    """Median CPU seconds (``attr``) of ``tool``'s whole walks less those of its one-page walks,
    per page after the first; None when a run did not say."""
    whole, one = results.of(work, tool), results.of(work, one_page)
    if not whole or not one or any(getattr(r, attr) is None for r in (*whole, *one)):
        return None
    pages = statistics.median(r.pages for r in whole) - statistics.median(r.pages for r in one)
    spent = statistics.median(getattr(r, attr) for r in whole) - statistics.median(getattr(r, attr) for r in one)
    return spent / pages if pages > 0 else None


def latency_walks(results: Results, tools: Tools, work: str, site: Site, runs: int) -> None:
    """wget2 at each thread count, sitewalk at each concurrency and the Scrapy floor, in rounds."""
    names = (*(wget2_tool(t) for t in THREADS), *(sitewalk_tool(n) for n in LEVELS), FLOOR_TOOL)
    print(f"{work}: {', '.join(names)} from {site.url}", flush=True)
    listing = tools.sitewalk(work, site, tool="listing", extra=["-a", f"concurrency={FLOOR_CONCURRENCY}"])
    paths = tools.tmp / f"paths-{len(results.runs)}.txt"
    paths.write_text("\n".join(listing.paths) + "\n", encoding="utf-8")
    for tool in rounds(names, runs):
        if tool == FLOOR_TOOL:
            results.runs.append(tools.floor(work, site, paths, FLOOR_CONCURRENCY, FLOOR_TOOL))
        elif tool.startswith("wget2"):
            results.runs.append(tools.wget2(work, site, int(tool.rpartition("=")[2]), tool=tool))
        else:
            results.runs.append(tools.sitewalk(work, site, tool=tool, extra=["-a", f"concurrency={tool.rpartition('=')[2]}"]))


def against_wget(results: Results, tools: Tools, work: str, site: Site, runs: int) -> None:
    print(f"{work}: wget, sitewalk from {site.url}", flush=True)
    for tool in rounds(("wget", "sitewalk"), runs):
        results.runs.append(tools.wget(work, site) if tool == "wget" else tools.sitewalk(work, site))


def markdown(results: Results, tools: Tools, work: str, site: Site, runs: int) -> None:
    print(f"{work}: sitewalk index, and content=markdown main_content=true, from {site.url}", flush=True)
    for tool in rounds(("sitewalk", MARKDOWN), runs):
        extra = MARKDOWN_ARGS if tool == MARKDOWN else []
        results.runs.append(tools.sitewalk(work, site, tool=tool, extra=extra))


# -- the report


def runs_table(results: Results, works: Sequence[str]) -> list[str]:
    lines = ["| work | tool | runs | median wall s | min–max s | median CPU s | walk's process CPU s | helpers' CPU s "
             "| pages | peak RSS MB |", "|---|---|---|---|---|---|---|---|---|---|"]
    for work in works:
        for tool in dict.fromkeys(r.tool for r in results.runs if r.work == work):
            runs = results.of(work, tool)
            walks = [r.cpu_walk for r in runs if r.cpu_walk is not None]
            helpers = [r.cpu_helpers for r in runs if r.cpu_helpers is not None]
            lines.append(
                f"| {work} | {tool} | {len(runs)} | {statistics.median(r.wall for r in runs):.2f} | "
                f"{min(r.wall for r in runs):.2f}–{max(r.wall for r in runs):.2f} | "
                f"{statistics.median(r.cpu for r in runs):.2f} | "
                f"{fmt(statistics.median(walks) if walks else None, '.2f')} | "
                f"{fmt(statistics.median(helpers) if helpers else None, '.2f')} | "
                f"{statistics.median(r.pages for r in runs):.0f} | {statistics.median(r.rss_kb for r in runs) / 1024:.1f} |")
    return lines


def latency_table(results: Results, works: Sequence[str]) -> list[str]:
    """Median wall seconds, one column per round trip, with the ratio to wget2 at the same threads
    as sitewalk's concurrency (8 threads for c=1 and the floor)."""
    head = "| tool | " + " | ".join(f"{w} s | × wget2 (threads)" for w in works) + " |"
    lines = [head, "|---|" + "---|---|" * len(works)]
    names = (*(wget2_tool(t) for t in THREADS), *(sitewalk_tool(n) for n in LEVELS), FLOOR_TOOL)
    for tool in names:
        threads = 16 if tool == sitewalk_tool(16) else 8
        cells = []
        for work in works:
            wall, wget2 = results.median(work, tool, "wall"), results.median(work, wget2_tool(threads), "wall")
            cells.append(f"{fmt(wall, '.2f')} | {fmt(wall / wget2 if wall and wget2 else None, '.2f')} ({threads})")
        lines.append(f"| {tool} | " + " | ".join(cells) + " |")
    return lines


def cpu_table(results: Results, work: str) -> list[str]:
    lines = ["| event loop | process | CPU per page, ms | one-page walk (start-up) CPU s | whole walk CPU s |",
             "|---|---|---|---|---|"]
    for loop, tool, one_page in (("uvloop (sitewalk's)", "sitewalk", ONE_PAGE), ("asyncio's", ASYNCIO, ASYNCIO_ONE_PAGE)):
        for label, attr in (("the walk's", "cpu_walk"), ("its page-reading helpers", "cpu_helpers"), ("both", "cpu")):
            value = per_page(results, work, attr, tool, one_page)
            one = [getattr(r, attr) for r in results.of(work, one_page) if getattr(r, attr) is not None]
            whole = [getattr(r, attr) for r in results.of(work, tool) if getattr(r, attr) is not None]
            if not whole:
                continue
            lines.append(f"| {loop} | {label} | {fmt(value * 1000 if value is not None else None, '.2f')} | "
                         f"{fmt(statistics.median(one) if one else None, '.2f')} | "
                         f"{fmt(statistics.median(whole) if whole else None, '.2f')} |")
    return lines


def cpu_ms(attr: str) -> Measure:
    def value(results: Results, work: str) -> float | None:
        seconds = per_page(results, work, attr)
        return seconds * 1000 if seconds is not None else None

    return value


def paired(tool: str, threads: int) -> Measure:
    return ratio(tool, wget2_tool(threads))


# Issue 34's targets (start-up's are startup.py's own lines).
TARGETS = (
    Target("20 ms", "sitewalk c=8 / wget2 t=8 wall time", paired(sitewalk_tool(8), 8), 1.5, unit="×"),
    Target("100 ms", "sitewalk c=8 / wget2 t=8 wall time", paired(sitewalk_tool(8), 8), 1.0, unit="×"),
    Target("20 ms", "sitewalk c=16 / wget2 t=16 wall time", paired(sitewalk_tool(16), 16), 2.0, unit="×"),
    Target("loopback", "sitewalk / wget wall time", ratio("sitewalk", "wget"), 0.8, unit="×"),
    Target("gen20k", "sitewalk peak RSS", peak_rss_mb("sitewalk"), 100.0, unit=" MB"),
    Target("gen20k", "sitewalk / wget wall time", ratio("sitewalk", "wget"), 4.0, unit="×"),
    Target("markdown", "content=markdown main_content / index wall time", ratio(MARKDOWN, "sitewalk"), 2.0, unit="×"),
    Target("cpu", "CPU per page in the walk's process", cpu_ms("cpu_walk"), 2.0, unit=" ms"),
)


def verdicts(results: Results, works: dict[str, str], smoke: bool) -> list[str]:
    note = " (smoke site: not the target's measurement)" if smoke else ""
    lines = []
    for target in TARGETS:
        work = works.get(target.experiment)
        value = target.value(results, work) if work else None
        if work is None or value is None:
            continue
        mark = "**met**" if target.met(value) else "**not met**"
        lines.append(f"- {work}: {target.what} = {value:.2f}{target.unit} (target ≤ {target.limit:g}{target.unit}): {mark}{note}")
    return lines


# -- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a 50-page generated site, one run each, 20 ms only")
    parser.add_argument("--runs", type=int, default=2, help="runs per tool (medians are reported); default 2")
    parser.add_argument("--only", choices=EXPERIMENTS, action="append", help="run only this experiment (repeatable)")
    parser.add_argument("--write-results", action="store_true", help="also write its section of benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    experiments = [e for e in EXPERIMENTS if e in set(args.only or EXPERIMENTS)]
    runs = 1 if args.smoke else args.runs
    installs.check_python()
    os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    installs.install(need_docs=not args.smoke, packages=PACKAGES)
    lock_work()

    if args.smoke:
        docs = gen = Site("smoke50", prepare_generated("smoke50", 50))
        rtts: tuple[float, ...] = (0.02,)
    else:
        docs = Site("docs", prepare_docs())
        gen = Site("gen20k", prepare_generated("gen20k", 20_000)) if "gen20k" in experiments else docs
        rtts = RTTS
    works = {"cpu": f"{docs.name} loopback (CPU)", "loopback": f"{docs.name} loopback",
             "gen20k": gen.name, "markdown": f"{docs.name} markdown",
             **{f"{rtt * 1000:g} ms": f"{docs.name} {rtt * 1000:g} ms" for rtt in rtts}}
    experiment_of: dict[str, Callable[[Results, Tools, str, Site, int], None]] = {
        "cpu": cpu_per_page, "loopback": against_wget, "gen20k": against_wget, "markdown": markdown}

    server.stop_on_sigterm()
    results = Results()
    start_commit = report.head_commit()
    load_before = os.getloadavg()
    startup_lines: list[str] = []
    startup_targets: list[str] = []
    if "startup" in experiments:
        # Before nginx starts, on a server of its own; at least 5 rounds (a round takes seconds).
        startup_lines, startup_targets = startup.section(3 if args.smoke else max(runs, 5), args.smoke)
    tmp = Path(tempfile.mkdtemp(prefix="sitewalk-bench-"))
    try:
        with server.nginx(list({s.name: s for s in (docs, gen)}.values())):
            tools = Tools(tmp)
            for experiment in experiments:
                if experiment == "latency":
                    for rtt in rtts:
                        with latency(docs, rtt) as slow:
                            latency_walks(results, tools, works[f"{rtt * 1000:g} ms"], slow, runs)
                elif experiment in experiment_of:
                    site = gen if experiment == "gen20k" else docs
                    experiment_of[experiment](results, tools, works[experiment], site, runs)
    except KeyboardInterrupt:
        print("interrupted: nginx and the proxy stopped", file=sys.stderr)
        return 130
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        report.keep_runs(results.runs, "last-speed-runs.json")

    title = "smoke run (tiny site, not a measurement)" if args.smoke else f"medians of {runs} run(s) per tool"
    facts = report.facts_with_load(start_commit, load_before)
    out = [f"# Speed (issue 34), one run: {title}", "", *facts, "",
           "Command: `python benchmarks/speed.py" + (" --smoke" if args.smoke else f" --runs {runs}")
           + "".join(f" --only {e}" for e in (args.only or ())) + (" --write-results`." if args.write_results else "`."), "",
           "Wall time includes process start-up; CPU = user + system seconds of the tool and the processes it "
           "waited for; sitewalk's is also split between the walk's own process and its page-reading helpers "
           "(each read with getrusage as the walk exits). Round trips come from benchmarks/latency.py. "
           "Other processes share this machine's CPUs: compare ratios within one run.", "", *startup_lines]
    cpu_work = works["cpu"]
    if results.of(cpu_work, "sitewalk"):
        out += ["## CPU per page (both processes)", "",
                "Whole walks of the site against walks stopped after one page (start-up, the helpers' included): "
                "the difference in CPU seconds over the pages between, per process, on loopback, concurrency 1; "
                "then the same on asyncio's own event loop (`-s ASYNCIO_EVENT_LOOP=asyncio.SelectorEventLoop`).", "",
                *cpu_table(results, cpu_work), ""]
    rtt_works = [works[f"{rtt * 1000:g} ms"] for rtt in rtts if results.of(works[f"{rtt * 1000:g} ms"], sitewalk_tool(8))]
    if rtt_works:
        out += ["## Latency table: median wall seconds, and × wget2", "", *latency_table(results, rtt_works), ""]
    walked = [w for w in dict.fromkeys(r.work for r in results.runs)]
    out += ["## Every run's medians", "", *runs_table(results, walked), ""]
    out += ["## Targets", "", *startup_targets, *verdicts(results, works, args.smoke), ""]
    bad = failures(results)
    if bad:
        out += ["## Failed runs", "", *bad, ""]
    text = "\n".join(out)
    print("\n" + text)
    if args.write_results:
        report.write_results("speed.py", text)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
