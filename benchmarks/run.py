"""Benchmark of issue 7: sitewalk against wget -r and a plain-Scrapy CrawlSpider, on nginx on loopback.

    python benchmarks/run.py [--smoke] [--runs 3] [--only docs|gen20k|grep|memory|startup] [--write-results]
                             [--profile]

Run it with the project's Python (the one that imports sitewalk and Scrapy), as root or with sudo
available: it installs nginx-light, python3.11-doc, wget and time with apt-get when they are
missing. Sites and nginx files live in benchmarks/.work/ (kept between runs; the generated sites
are rebuilt only when their parameters change); each run's output goes to a temporary directory
outside the repository, deleted at the end. See benchmarks/README.md.

Its parts, one job a module: installs.py (what the machine needs), sites.py (the work directory and
its sites), server.py (nginx), rss.py and measure.py (one measured run of a tool), experiments.py,
tables.py, targets.py (the one table of targets) and report.py (the header and RESULTS.md);
startup.py measures start-up on a server of its own.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from experiments import EXPERIMENTS, compare, grep_vs_index, memory, profile
from installs import check_python, install
from measure import Results, Tools
from report import head_commit, keep_runs, machine_facts, write_results
from server import nginx, stop_on_sigterm
from sites import Site, lock_work, prepare_docs, prepare_generated
from startup import section as startup_section
from tables import failures, grep_table, main_table, memory_table, set_comparison
from targets import verdicts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a 50-page generated site, one run each, grep against index only (< 30 s)")
    parser.add_argument("--runs", type=int, default=3, help="runs per tool (medians are reported); default 3")
    parser.add_argument("--only", choices=EXPERIMENTS, action="append", help="run only this experiment (repeatable)")
    parser.add_argument("--write-results", action="store_true", help="also write benchmarks/RESULTS.md")
    parser.add_argument("--profile", action="store_true", help="also profile one sitewalk walk of the docs")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    experiments = set(args.only or EXPERIMENTS)
    runs = 1 if args.smoke else args.runs
    check_python()
    # nginx lives in /usr/sbin, which a non-root PATH may lack.
    os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    need_docs = not args.smoke and bool(experiments & {"docs", "grep"} or args.profile)
    install(need_docs)
    lock_work()

    docs_site: Site | None
    grep_site: Site | None
    gen_site: Site | None
    full_sizes: dict[int, Site | None]
    if args.smoke:
        small = Site("smoke50", prepare_generated("smoke50", 50))
        sites = {"smoke50": small}
        docs_site, gen_site, grep_site = None, small, small
        gen_work, docs_work, grep_work, pattern = "smoke 50", "docs", "smoke grep", "frontier"
        full_sizes = {50: small}
    else:
        sites = {}
        if experiments & {"docs", "grep"} or args.profile:
            sites["docs"] = Site("docs", prepare_docs())
        if experiments & {"gen20k", "memory"}:
            sites["gen20k"] = Site("gen20k", prepare_generated("gen20k", 20_000))
        if "memory" in experiments:
            sites["gen5k"] = Site("gen5k", prepare_generated("gen5k", 5_000))
            sites["gen10k"] = Site("gen10k", prepare_generated("gen10k", 10_000))
        docs_site, gen_site, grep_site = sites.get("docs"), sites.get("gen20k"), sites.get("docs")
        gen_work, docs_work, grep_work, pattern = "gen20k", "docs", "docs grep", "Mersenne"
        full_sizes = {5_000: sites.get("gen5k"), 10_000: sites.get("gen10k"), 20_000: gen_site}

    stop_on_sigterm()
    results = Results()
    start_commit = head_commit()
    profile_text = ""
    startup_lines: list[str] = []
    startup_targets: list[str] = []
    if "startup" in experiments:
        # Before nginx starts, on a server of its own. A round takes seconds and one run's noise is large:
        # at least 5 rounds (3, of the sitewalk command only, in a smoke run).
        startup_lines, startup_targets = startup_section(3 if args.smoke else max(runs, 5), args.smoke)
    tmp = Path(tempfile.mkdtemp(prefix="sitewalk-bench-"))
    try:
        with nginx(list(sites.values())):
            tools = Tools(tmp)
            if "docs" in experiments and docs_site is not None:
                compare(results, tools, docs_work, docs_site, runs)
            if "gen20k" in experiments and gen_site is not None:
                compare(results, tools, gen_work, gen_site, runs)
            if "grep" in experiments and grep_site is not None:
                grep_vs_index(results, tools, grep_work, grep_site, pattern, runs, args.smoke)
            if "memory" in experiments and gen_site is not None:
                full = {n: s for n, s in full_sizes.items() if s is not None}
                reuse = gen_work if "gen20k" in experiments else None
                memory(results, tools, full, gen_site, runs, reuse)
            if args.profile:
                profile_site = docs_site or gen_site
                assert profile_site is not None
                profile_text = profile(tools, profile_site)
    except KeyboardInterrupt:
        print("interrupted: nginx stopped", file=sys.stderr)
        return 130
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        keep_runs(results.runs, "last-runs.json")

    title = "smoke run (tiny site, not a measurement)" if args.smoke else f"medians of {runs} run(s) per tool"
    out = [f"# sitewalk benchmark: {title}", "", *machine_facts(start_commit), "",
           "Wall time includes process start-up; pages = requests the server logged during the run. "
           "Other processes share this machine's CPUs, so times are noisy: compare ratios within one run.", ""]
    works = [w for w in (docs_work, gen_work) if results.of(w, "wget") or results.of(w, "sitewalk")]
    if works:
        out += ["## Whole-site walks", "", *main_table(results, works), ""]
        for work in works:
            out += set_comparison(results, work)
        out.append("")
    if results.of(grep_work, "sitewalk grep"):
        out += [f"## grep vs index (grep={pattern!r}; grep-regex: the same pattern as a regular expression; "
                "index-jobdir: the index walk keeping its JOBDIR journal; index-markdown: with content=markdown; "
                "index-main: with content=markdown and main_content; index-save: with save_dir and main_content)", "",
                *grep_table(results, grep_work), "",
                "A plain-text pattern lets the walk tell, from a page's source, that the page cannot match, "
                "so the next page downloads while it is read; a regular expression makes each page wait until "
                "its lines are read and counted (sitewalk.absence.Absence).", ""]
    if any(r.work.startswith("mem ") for r in results.runs):
        out += ["## Memory", "", *memory_table(results), ""]
    out += startup_lines
    worked_as = {"docs": docs_work, "gen20k": gen_work, "grep": grep_work}
    out += ["## Targets", "", *verdicts(results, worked_as, args.smoke), *startup_targets, ""]
    bad = failures(results)
    if bad:
        out += ["## Failed runs", "", *bad, ""]
    text = "\n".join(out)
    print("\n" + text)
    if profile_text:
        print("\n## Profile\n\n" + profile_text)
    if args.write_results:
        write_results("run.py", text)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
