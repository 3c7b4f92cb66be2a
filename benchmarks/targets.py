"""The targets run.py checks, in one table, and the report's verdict on each."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from measure import Results
from tables import wget_pages

Measure = Callable[[Results, str], float | None]


@dataclass(frozen=True)
class Target:
    """A bound on what one experiment measured: ``value`` (None while its runs are missing) at most
    ``limit``, or at least ``limit`` with ``at_least``; with no ``limit``, ``value`` is 1 (yes) or 0 (no)."""

    experiment: str
    what: str
    value: Measure
    limit: float | None = None
    at_least: bool = False
    unit: str = ""

    def met(self, value: float) -> bool:
        if self.limit is None:
            return value == 1
        return value >= self.limit if self.at_least else value <= self.limit


def ratio(tool: str, other: str, attr: str = "wall") -> Measure:
    """The median ``attr`` of ``tool``'s runs over that of ``other``'s runs."""

    def value(results: Results, work: str) -> float | None:
        mine, theirs = results.median(work, tool, attr), results.median(work, other, attr)
        return mine / theirs if mine and theirs else None

    return value


def pages_per_second(tool: str, other: str) -> Measure:
    """``tool``'s pages per second over ``other``'s, each from its median pages and median wall time."""

    def value(results: Results, work: str) -> float | None:
        walls = results.median(work, tool, "wall"), results.median(work, other, "wall")
        if not walls[0] or not walls[1]:
            return None
        return ((results.median(work, tool, "pages") or 0) / walls[0]) / ((results.median(work, other, "pages") or 0) / walls[1])

    return value


def peak_rss_mb(tool: str) -> Measure:
    def value(results: Results, work: str) -> float | None:
        rss = results.median(work, tool, "rss_kb")
        return rss / 1024 if rss else None

    return value


def same_pages_as_wget(tool: str) -> Measure:
    """1 if every run of ``tool`` requested the paths wget's first run did (embedded resources aside), else 0."""

    def value(results: Results, work: str) -> float | None:
        runs, reference = results.of(work, tool), wget_pages(results, work)
        if not runs or reference is None:
            return None
        return float(all(set(r.paths) == reference for r in runs))

    return value


# Issue 7's targets, then those of the index walk's variants added since (Markdown, main content, save_dir, JOBDIR).
TARGETS = (
    Target("docs", "sitewalk / wget wall time", ratio("sitewalk", "wget"), 1.0),
    Target("docs", "speed-up over baseline (baseline / sitewalk wall time)", ratio("baseline", "sitewalk"), 12.0,
           at_least=True, unit="×"),
    Target("docs", "same pages as wget (embedded resources aside)", same_pages_as_wget("sitewalk")),
    Target("gen20k", "sitewalk / baseline pages per second", pages_per_second("sitewalk", "baseline"), 2.0,
           at_least=True, unit="×"),
    Target("gen20k", "sitewalk peak RSS", peak_rss_mb("sitewalk"), 100.0, unit=" MB"),
    Target("gen20k", "same pages as wget (embedded resources aside)", same_pages_as_wget("sitewalk")),
    Target("grep", "grep / index wall time", ratio("sitewalk grep", "sitewalk index"), 1.5),
    Target("grep", "index with content=markdown / index", ratio("sitewalk index-markdown", "sitewalk index"), 2.0),
    Target("grep", "index with content=markdown main_content / index", ratio("sitewalk index-main", "sitewalk index"), 2.0),
    Target("grep", "index with save_dir main_content / index", ratio("sitewalk index-save", "sitewalk index"), 2.0),
    Target("grep", "index with JOBDIR / index", ratio("sitewalk index-jobdir", "sitewalk index"), 1.05),
)


def verdicts(results: Results, works: Mapping[str, str], smoke: bool) -> list[str]:
    """A line for each target whose runs are there; ``works`` names the work each experiment ran as."""
    note = " (smoke site: not the target's measurement)" if smoke else ""
    lines = []
    for target in TARGETS:
        work = works[target.experiment]
        value = target.value(results, work)
        if value is None:
            continue
        mark = "**met**" if target.met(value) else "**not met**"
        if target.limit is None:
            lines.append(f"- {work}: {target.what}: {mark}{note}")
        else:
            bound = "≥" if target.at_least else "≤"
            lines.append(f"- {work}: {target.what} = {value:.2f}{target.unit} "
                         f"(target {bound} {target.limit:g}{target.unit}): {mark}{note}")
    return lines
