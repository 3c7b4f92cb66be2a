"""The experiments: the three tools over one site, grep against index, memory by site size, and a
profile of one walk; each appends its runs to the results."""

from __future__ import annotations

import pstats
import sys
from collections.abc import Iterator, Sequence

from measure import Results, Run, Tools, measure
from sites import REPO, WORK, Site

EXPERIMENTS = ("docs", "gen20k", "grep", "memory", "startup")
TOOLS = ("wget", "baseline", "sitewalk")


def rounds(tools: Sequence[str], runs: int) -> Iterator[str]:
    """Each round runs every tool once; the order rotates so that no tool always goes first."""
    for round_ in range(runs):
        shift = round_ % len(tools)
        yield from (*tools[shift:], *tools[:shift])


def compare(results: Results, tools: Tools, work: str, site: Site, runs: int) -> None:
    print(f"{work}: wget, baseline, sitewalk from {site.url}", flush=True)
    for tool in rounds(TOOLS, runs):
        if tool == "wget":
            results.runs.append(tools.wget(work, site))
        elif tool == "baseline":
            results.runs.append(tools.baseline(work, site))
        else:
            results.runs.append(tools.sitewalk(work, site))


def grep_vs_index(results: Results, tools: Tools, work: str, site: Site, pattern: str, runs: int,
                  smoke: bool = False) -> None:
    """Index mode against grep mode at the default max_matches, with ``pattern`` (plain text, which
    it never reaches) and the same pattern as a regular expression (its first letter as a class),
    and the index walk's variants; with ``smoke``, index and grep only."""
    regex = f"[{pattern[0]}]{pattern[1:]}"
    print(f"{work}: sitewalk index vs grep={pattern!r} and grep={regex!r} (default max_matches)", flush=True)
    extras = {"sitewalk index": [], "sitewalk grep": ["-a", f"grep={pattern}"], "sitewalk grep-regex": ["-a", f"grep={regex}"],
              # The index walk again, keeping its JOBDIR journal (in the run's own directory).
              "sitewalk index-jobdir": ["-s", "JOBDIR=job"],
              # The index walk with each page's content as Markdown (html-to-markdown, beside the walk).
              "sitewalk index-markdown": ["-a", "content=markdown"],
              # The same, main content only, and main content saved as files (issue 22).
              "sitewalk index-main": ["-a", "content=markdown", "-a", "main_content=true"],
              "sitewalk index-save": ["-a", "save_dir=saved", "-a", "main_content=true"]}
    modes = ("sitewalk index", "sitewalk grep") if smoke else tuple(extras)
    for tool in rounds(modes, runs):
        results.runs.append(tools.sitewalk(work, site, tool=tool, extra=extras[tool]))


def memory(results: Results, tools: Tools, full_sites: dict[int, Site], limited: Site, runs: int,
           reuse: str | None) -> None:
    """Full walks of sites of growing size (known URLs = pages), and max_pages-limited walks of the
    largest site (where nearly every URL is known after a few hundred pages: links are random)."""
    largest = max(full_sites)
    print(f"memory: full walks of {sorted(full_sites)} pages; {limited.name} limited by max_pages", flush=True)
    smallest = full_sites[min(full_sites)]
    for _ in range(runs):
        # The floor: start-up plus one page (and the ~25 URLs it links to).
        results.runs.append(tools.sitewalk("mem limit 1", smallest, max_pages=1))
        for pages, site in sorted(full_sites.items()):
            if pages == largest and reuse and results.of(reuse, "sitewalk"):
                continue
            results.runs.append(tools.sitewalk(f"mem full {pages}", site))
        for pages in sorted(full_sites):
            if pages != largest:
                results.runs.append(tools.sitewalk(f"mem limit {pages}", limited, max_pages=pages))
    if reuse and results.of(reuse, "sitewalk"):
        for run in results.of(reuse, "sitewalk"):
            results.runs.append(Run(f"mem full {largest}", "sitewalk", run.wall, run.rss_kb, run.paths,
                                    run.exit_status, run.report, run.cpu))


def profile(tools: Tools, site: Site) -> str:
    """Profile one sitewalk walk of ``site`` with cProfile; the top entries as text."""
    out = WORK / "sitewalk.prof"
    run_dir, agent = tools.next_run("profile")
    argv = [sys.executable, "-m", "cProfile", "-o", str(out), *tools.sitewalk_argv(site, agent)]
    run = measure("profile", "sitewalk+cProfile", site, argv, run_dir, agent, tools.sitewalk_env)
    text = [f"cProfile of one sitewalk walk of {site.url}: {run.wall:.2f} s wall, {run.pages} requests "
            f"(profile in {out.relative_to(REPO)})"]
    for key in ("cumulative", "tottime"):
        stream = _Capture()
        stats = pstats.Stats(str(out), stream=stream)  # type: ignore[arg-type]
        stats.strip_dirs().sort_stats(key).print_stats(30)
        text.append(f"\n### top 30 by {key}\n" + stream.text())
    return "\n".join(text)


class _Capture:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> None:
        self.parts.append(text)

    def text(self) -> str:
        lines = "".join(self.parts).splitlines()
        start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
        return "\n".join(lines[start:])
