"""The walk as one self-contained HTML file: summary, pages by depth and status, broken links,
redirects, slowest and largest pages, and what was not fetched and why."""

from __future__ import annotations

import base64
import hashlib
import heapq
from collections import Counter
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

from sitewalk.hints import CLI
from sitewalk.htmlassets import SCRIPT, STYLE
from sitewalk.items import human_bytes
from sitewalk.linkreport import BROKEN_KINDS

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from sitewalk.config import WalkConfig
    from sitewalk.hints import Surface
    from sitewalk.items import Report
    from sitewalk.linkreport import LinkBook, PageRecord

__all__ = ["MAX_ROWS", "write_html"]

# The most rows a table shows; the rest are counted (the report JSON has them all), so that a
# 20,000-page walk's report stays small and opens at once.
MAX_ROWS = 200
# How many of the slowest and of the largest pages are listed.
TOP = 50
CLASSES = ("2xx", "3xx", "4xx", "5xx", "failed")
_COLOURS = {"2xx": "#2e7d32", "3xx": "#1565c0", "4xx": "#ef6c00", "5xx": "#c62828", "failed": "#6a1b9a"}

def write_html(path: str, report: Report, book: LinkBook, config: WalkConfig, surface: Surface = CLI) -> None:
    """Write the HTML report of the walk ``report`` describes to ``path`` (the options it names
    spelt as ``surface`` takes them)."""
    Path(path).write_text(render(report, book, config, surface), encoding="utf-8")


def render(report: Report, book: LinkBook, config: WalkConfig, surface: Surface = CLI) -> str:
    """The report as one HTML document: everything inline, every URL and title escaped, and a
    Content-Security-Policy that lets only its own style and script run and loads nothing."""
    style, script = STYLE.strip(), SCRIPT.strip()
    policy = (f"default-src 'none'; style-src '{_sha256(style)}'; script-src '{_sha256(script)}'; "
              "img-src 'none'; base-uri 'none'; form-action 'none'")
    title = f"sitewalk: {report.origin or report.seed}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{escape(policy)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{escape(title)}</title><style>{style}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
    ]
    sections = [
        _summary(report, config, surface),
        _depths(report, book),
        _broken(report, book),
        _redirects(book),
        _top("Slowest pages", "slowest", book.pages, lambda page: page.latency or 0.0),
        _top("Largest pages", "largest", book.pages, lambda page: page.byte_count),
        _not_fetched(report, config, surface),
    ]
    for section in sections:
        parts.extend(["<section>", *section, "</section>"])
    parts.append(f"<script>{script}</script></body></html>")
    return "\n".join(parts) + "\n"


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def _summary(report: Report, config: WalkConfig, surface: Surface) -> list[str]:
    rows = [
        ("Seed", _link(report.seed)),
        ("Origin", escape(report.origin or "none (the seed could not be fetched)")),
        ("Pages", str(report.fetched)),
        ("Bytes", escape(human_bytes(report.bytes))),
        ("Time", f"{report.elapsed_s:.2f} s"),
        ("Broken links", str(len(report.broken_links))),
        ("Outcome", escape(report.ending(config.consumer, surface))),
        ("Failures", str(len(report.failures))),
    ]
    return ['<h2 id="walk">The walk</h2><dl>', *(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in rows), "</dl>"]


def _depths(report: Report, book: LinkBook) -> list[str]:
    """Pages by depth and status class: a stacked bar chart (SVG) and the same numbers as a table."""
    counts: Counter[tuple[int, str]] = Counter()
    depth_of = {}
    for page in book.pages:
        counts[page.depth, f"{page.status // 100}xx" if 200 <= page.status < 600 else "failed"] += 1
        depth_of[page.url] = page.depth
    for failure in report.failures:
        if failure["kind"] in BROKEN_KINDS:
            found_on = failure.get("found_on")
            counts[depth_of.get(found_on, -1) + 1 if found_on else 0, "failed"] += 1
    depths = sorted({depth for depth, _ in counts})
    totals = {depth: sum(counts[depth, name] for name in CLASSES) for depth in depths}
    out = ['<h2 id="depths">Pages by depth and status</h2>']
    if depths:
        out.append(_chart(depths, counts, max(totals.values())))
    out.append('<table id="by-depth"><thead><tr><th class="n">Depth</th>'
               + "".join(f'<th class="n">{name}</th>' for name in CLASSES) + '<th class="n">All</th></tr></thead><tbody>')
    for depth in depths:
        cells = "".join(f'<td class="n">{counts[depth, name]}</td>' for name in CLASSES)
        out.append(f'<tr><td class="n">{depth}</td>{cells}<td class="n">{totals[depth]}</td></tr>')
    out.append("</tbody></table>")
    return out


def _chart(depths: Sequence[int], counts: Counter[tuple[int, str]], most: int) -> str:
    bar, gap, left, width = 22, 6, 70, 600
    height = len(depths) * (bar + gap) + 30
    shapes = []
    for row, depth in enumerate(depths):
        y = row * (bar + gap)
        shapes.append(f'<text x="{left - 8}" y="{y + bar - 6}" text-anchor="end">depth {depth}</text>')
        x = float(left)
        for name in CLASSES:
            count = counts[depth, name]
            if count:
                size = count / most * width
                shapes.append(f'<rect x="{x:.1f}" y="{y}" width="{max(size, 1):.1f}" height="{bar}" '
                              f'fill="{_COLOURS[name]}"><title>depth {depth}, {name}: {count}</title></rect>')
                x += size
    legend_y = len(depths) * (bar + gap) + 16
    for index, name in enumerate(CLASSES):
        x = left + index * 90
        shapes.append(f'<rect x="{x}" y="{legend_y - 10}" width="12" height="12" fill="{_COLOURS[name]}"></rect>'
                      f'<text x="{x + 16}" y="{legend_y}">{name}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="pages by depth and status class" '
            f'width="{left + width + 20}" height="{height}" font-size="12">' + "".join(shapes) + "</svg>")


def _broken(report: Report, book: LinkBook) -> list[str]:
    rows = report.broken_links
    out = [f'<h2 id="broken">Broken links ({len(rows)})</h2>', "<h3>By broken URL</h3>"]
    out.append('<table id="broken-links" data-filter><thead><tr><th data-sortable>URL</th>'
               '<th data-sortable class="n">Status</th><th data-sortable>Kind</th><th>Reason</th>'
               '<th data-sortable class="n">Inlinks</th><th>Linked from</th></tr></thead><tbody>')
    for row in rows[:MAX_ROWS]:
        status = row["status"] if row["status"] is not None else ""
        linked = "".join(f"<li>{_link(url)}</li>" for url in row["linked_from"])
        more = row["inlinks"] - len(row["linked_from"])
        if more > 0:
            linked += f'<li class="more">and {more} more</li>'
        out.append(
            f'<tr><td>{_link(row["url"])}</td><td class="n" data-v="{status or 0}">{status}</td>'
            f'<td>{escape(row["kind"])}</td><td>{escape(row["reason"])}</td>'
            f'<td class="n" data-v="{row["inlinks"]}">{row["inlinks"]}</td><td><ul class="from">{linked}</ul></td></tr>'
        )
    out.append("</tbody></table>")
    out.extend(_more(len(rows), "broken URLs", "the report JSON's broken_links has them all"))
    by_url = {row["url"]: row for row in rows}
    pages = [(page, [by_url[url] for url in urls]) for page, urls in _pages_linking(book, set(by_url))]
    out.append("<h3>By linking page</h3>")
    out.append('<table id="broken-by-page" data-filter><thead><tr><th data-sortable>Page</th>'
               '<th data-sortable class="n">Broken links</th><th>Links</th></tr></thead><tbody>')
    for page, links in pages[:MAX_ROWS]:
        items = "".join(f'<li>{_link(link["url"])} ({escape(link["reason"])})</li>' for link in links)
        out.append(f'<tr><td>{_link(page.final_url)}</td><td class="n" data-v="{len(links)}">{len(links)}</td>'
                   f'<td><ul class="from">{items}</ul></td></tr>')
    out.append("</tbody></table>")
    out.extend(_more(len(pages), "linking pages", "the JUnit file (junit) lists every page's links"))
    return out


def _pages_linking(book: LinkBook, broken: set[str]) -> Iterable[tuple[PageRecord, list[str]]]:
    if not broken:
        return
    for page, urls in book.page_links():
        found = [url for url in urls if url in broken]
        if found:
            yield page, found


def _redirects(book: LinkBook) -> list[str]:
    out = [f'<h2 id="redirects">Redirects ({len(book.redirects)})</h2>',
           '<table id="redirects-table" data-filter><thead><tr><th data-sortable>From</th><th data-sortable>To</th>'
           '<th data-sortable class="n">Status</th></tr></thead><tbody>']
    for source, target, status in book.redirects[:MAX_ROWS]:
        out.append(f'<tr><td>{_link(source)}</td><td>{_link(target)}</td>'
                   f'<td class="n" data-v="{status or 0}">{status or ""}</td></tr>')
    out.append("</tbody></table>")
    out.extend(_more(len(book.redirects), "redirects", ""))
    return out


def _top(heading: str, key_name: str, pages: Sequence[PageRecord], key: Callable[[PageRecord], float]) -> list[str]:
    chosen = heapq.nlargest(TOP, pages, key=key)
    out = [f'<h2 id="{key_name}">{heading}</h2>',
           f'<table id="{key_name}-pages"><thead><tr><th data-sortable>Page</th><th data-sortable>Title</th>'
           '<th data-sortable class="n">Status</th><th data-sortable class="n">Depth</th>'
           '<th data-sortable class="n">Time (s)</th><th data-sortable class="n">Bytes</th></tr></thead><tbody>']
    for page in chosen:
        latency = page.latency or 0.0
        out.append(f'<tr><td>{_link(page.url)}</td><td>{escape(page.title or "")}</td>'
                   f'<td class="n" data-v="{page.status}">{page.status}</td><td class="n" data-v="{page.depth}">{page.depth}</td>'
                   f'<td class="n" data-v="{latency:.3f}">{latency:.3f}</td>'
                   f'<td class="n" data-v="{page.byte_count}">{escape(human_bytes(page.byte_count))}</td></tr>')
    out.append("</tbody></table>")
    return out


def _not_fetched(report: Report, config: WalkConfig, surface: Surface) -> list[str]:
    guarded = [failure["url"] or "" for failure in report.failures if failure["kind"] == "guard"]
    stop = report.ending(config.consumer, surface)
    groups = [
        ("robots", "Disallowed by robots.txt (set -s ROBOTSTXT_OBEY=false to fetch them)", report.robots_skipped),
        ("guard", "Refused by the address guard (allow their network with SITEWALK_GUARD_ALLOW_NETWORKS)", guarded),
        ("unvisited", f"Known but not fetched when the walk ended ({stop})", report.unvisited),
    ]
    if config.check_links:
        groups.append(("unchecked", "Links not checked (past SITEWALK_LINKCHECK_MAX_CHECKS, or left when the walk "
                       "ended)", report.unchecked_links))
    out = ['<h2 id="not-fetched">Not fetched</h2>',
           f"<p>Out of scope (include, exclude, no_parent): {report.out_of_scope} links.</p>"]
    for key, heading, urls in groups:
        out.append(f'<h3 id="{key}">{escape(heading)}: {len(urls)}</h3>')
        if urls:
            out.append(f'<table id="{key}-table" data-filter><thead><tr><th data-sortable>URL</th></tr></thead><tbody>')
            out.extend(f"<tr><td>{_link(url)}</td></tr>" for url in urls[:MAX_ROWS])
            out.append("</tbody></table>")
            out.extend(_more(len(urls), "URLs", "the report JSON has them all"))
    # Every failure, broken link or not (a redirect off the origin, a body past DOWNLOAD_MAXSIZE,
    # a download cut off by the budget, a page that could not be read).
    failures = report.failures
    out.append(f'<h3 id="failures">Failures: {len(failures)}</h3>')
    if failures:
        out.append('<table id="failures-table" data-filter><thead><tr><th data-sortable>URL</th><th data-sortable>Kind</th>'
                   "<th>Reason</th><th data-sortable>Found on</th></tr></thead><tbody>")
        out.extend(f'<tr><td>{_link(failure["url"] or "")}</td><td>{escape(failure["kind"] or "")}</td>'
                   f'<td>{escape(failure["reason"] or "")}</td><td>{_link(failure.get("found_on") or "")}</td></tr>'
                   for failure in failures[:MAX_ROWS])
        out.append("</tbody></table>")
        out.extend(_more(len(failures), "failures", "the report JSON has them all"))
    return out


def _more(count: int, what: str, where: str) -> list[str]:
    if count <= MAX_ROWS:
        return []
    return [f'<p class="more">The first {MAX_ROWS} of {count} {escape(what)}{"; " + escape(where) if where else ""}.</p>']


def _link(url: str) -> str:
    """``url`` as a link when it is an http(s) URL, else as text; escaped either way."""
    text = escape(url)
    if url.startswith(("http://", "https://")):
        return f'<a href="{text}">{text}</a>'
    return text
