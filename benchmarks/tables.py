"""The report's tables: tools side by side, grep against index, memory per known URL, which paths
each tool fetched compared with wget's, and the runs that failed."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from experiments import TOOLS
from measure import Results, Run
from report import MB


def fmt(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def main_table(results: Results, works: Sequence[str]) -> list[str]:
    lines = [
        "| work | tool | runs | median wall s | pages | pages/s | peak RSS MB | × wget | × baseline |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for work in works:
        wget = results.median(work, "wget", "wall")
        base = results.median(work, "baseline", "wall")
        for tool in TOOLS:
            runs = results.of(work, tool)
            if not runs:
                continue
            wall = results.median(work, tool, "wall")
            pages = results.median(work, tool, "pages")
            rss = results.median(work, tool, "rss_kb")
            assert wall is not None and pages is not None and rss is not None
            lines.append(
                f"| {work} | {tool} | {len(runs)} | {wall:.2f} | {pages:.0f} | {pages / wall:.0f} | "
                f"{rss / 1024:.1f} | {fmt(wall / wget if wget else None, '.2f')} | "
                f"{fmt(wall / base if base else None, '.3f')} |"
            )
    return lines


def grep_table(results: Results, work: str) -> list[str]:
    lines = ["| work | mode | runs | median wall s | pages | peak RSS MB | × index |", "|---|---|---|---|---|---|---|"]
    index = results.median(work, "sitewalk index", "wall")
    for tool in ("sitewalk index", "sitewalk grep", "sitewalk grep-regex", "sitewalk index-jobdir",
                 "sitewalk index-markdown"):
        runs = results.of(work, tool)
        if runs:
            wall = results.median(work, tool, "wall") or 0.0
            lines.append(
                f"| {work} | {tool.split()[1]} | {len(runs)} | {wall:.2f} | "
                f"{results.median(work, tool, 'pages'):.0f} | {(results.median(work, tool, 'rss_kb') or 0) / 1024:.1f} | "
                f"{fmt(wall / index if index else None, '.2f')} |"
            )
    return lines


def _known(run: Run) -> int:
    if run.report is None:
        return run.pages
    return int(run.report.get("fetched", 0)) + len(run.report.get("unvisited", []))


def memory_table(results: Results) -> list[str]:
    lines = [
        "| walk | runs | pages fetched | known URLs | median wall s | peak RSS MB | RSS / known URL | "
        "(RSS − floor) / known URL |",
        "|---|---|---|---|---|---|---|---|",
    ]
    floor_runs = results.of("mem limit 1", "sitewalk")
    floor = statistics.median(r.rss_kb for r in floor_runs) * 1024 if floor_runs else None
    floor_known = int(statistics.median(_known(r) for r in floor_runs)) if floor_runs else 0
    points: list[tuple[int, float]] = []
    works = sorted({r.work for r in results.runs if r.work.startswith("mem ")},
                   key=lambda w: (w.split()[1], int(w.split()[2])))
    for work in works:
        runs = results.of(work, "sitewalk")
        rss = statistics.median(r.rss_kb for r in runs) * 1024
        known = int(statistics.median(_known(r) for r in runs))
        fetched = int(statistics.median(r.pages for r in runs))
        wall = statistics.median(r.wall for r in runs)
        if not known:
            lines.append(f"| {work[4:]} | {len(runs)} | {fetched} | 0 | {wall:.2f} | {rss / MB:.1f} | – | – |")
            continue
        above = "–"
        if floor is not None and known > floor_known:
            above = f"{(rss - floor) / (known - floor_known):.0f} B"
        if work.startswith("mem full"):
            points.append((known, rss))
        lines.append(f"| {work[4:]} | {len(runs)} | {fetched} | {known} | {wall:.2f} | {rss / MB:.1f} | "
                     f"{rss / known / 1024:.1f} kB | {above} |")
    if len(points) >= 2:
        (k0, r0), (k1, r1) = points[0], points[-1]
        if k1 != k0:
            lines.append("")
            lines.append(f"Marginal memory per known URL (full walks, {k0} → {k1} URLs): "
                         f"{(r1 - r0) / (k1 - k0):.0f} bytes.")
    return lines


# What wget -r fetches because a page embeds it (<link>, <script>, <img>), not because it links to it.
RESOURCE_EXTENSIONS = frozenset({"css", "js", "png", "jpg", "jpeg", "gif", "svg", "ico", "webp", "woff", "woff2", "xml"})


def is_resource(path: str) -> bool:
    name = path.split("?", 1)[0].rsplit("/", 1)[-1]
    return "." in name and name.rsplit(".", 1)[1].lower() in RESOURCE_EXTENSIONS


def wget_pages(results: Results, work: str) -> set[str] | None:
    """Paths wget fetched in its first run, less embedded resources (stylesheets, scripts, images)."""
    runs = results.of(work, "wget")
    return {p for p in runs[0].paths if not is_resource(p)} if runs else None


def set_comparison(results: Results, work: str) -> list[str]:
    """How each tool's set of requested paths differs from wget's."""
    wget_runs = results.of(work, "wget")
    if not wget_runs:
        return []
    everything = set(wget_runs[0].paths)
    reference = wget_pages(results, work)
    assert reference is not None
    resources = len(everything) - len(reference)
    lines = []
    if resources:
        lines.append(f"- {work}: wget fetched {len(everything)} paths, {resources} of them resources that pages "
                     f"embed ({', '.join(sorted(everything - reference)[:3])}, ...), which walkers that follow "
                     f"links do not fetch; compared below: the other {len(reference)}")
    for tool in ("baseline", "sitewalk"):
        runs = results.of(work, tool)
        if not runs:
            continue
        got = set(runs[0].paths)
        varied = any(set(r.paths) != got for r in runs[1:])
        stable = " (differs between runs!)" if varied else ""
        dupes = runs[0].pages - len(got)
        dup_note = f"; {dupes} path(s) requested twice" if dupes else ""
        if got == reference:
            lines.append(f"- {work}: {tool} fetched the same {len(got)} paths as wget{stable}{dup_note}")
            continue
        only_tool = sorted(got - reference)
        only_wget = sorted(reference - got)
        lines.append(
            f"- {work}: {tool} fetched {len(got)} paths: "
            f"{len(only_wget)} fetched only by wget ({', '.join(only_wget[:5]) or '–'}), "
            f"{len(only_tool)} only by {tool} ({', '.join(only_tool[:5]) or '–'}){stable}{dup_note}"
        )
    return lines


def failures(results: Results) -> list[str]:
    # wget and wget2 exit 8 when the server answered some request with an error (a broken link).
    bad = [r for r in results.runs if r.exit_status not in ((0, 8) if r.tool.split()[0] in ("wget", "wget2") else (0,))]
    return [f"- {r.work} {r.tool}: exit status {r.exit_status}" for r in bad]
