"""web_crawl and web_grep: a site walked breadth first, listed or searched, long outputs continued by cursor."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult

from sitewalk.api import grep_async, walk_async
from sitewalk.exceptions import SitewalkError
from sitewalk.items import Match, Page, Report, count
from sitewalk.mcp.cursors import Cursors, Output, part
from sitewalk.mcp.listings import grep_lines, index_lines
from sitewalk.mcp.notices import report_notices
from sitewalk.mcp.options import ServerOptions
from sitewalk.mcp.parameters import CRAWL, GREP, since_arguments, tool, walk_arguments
from sitewalk.mcp.report import WalkReport, bounded_report
from sitewalk.mcp.walk import ToolWalk

__all__ = ["crawl_tool", "grep_tool"]

Tool = Callable[..., Awaitable[CallToolResult]]

# What a model needs to know of both tools' walks, said once.
_WALK = (
    "The walk stays on url's origin, breadth first, until done or a limit stops it; notices "
    "after the listing say what was skipped, failed or cut, and what would change that."
)


def crawl_tool(options: ServerOptions, cursors: Cursors) -> Tool:
    """The web_crawl tool of a server with ``options``, its cut outputs kept in ``cursors``."""

    async def web_crawl(ctx: Context, arguments: dict[str, Any]) -> CallToolResult:
        if arguments["cursor"] is not None:
            return _continue(options, cursors, CRAWL, arguments["cursor"])
        # Of each page, its line's fields and marks (not the page: it holds the body).
        walk = ToolWalk(ctx, options, arguments["max_pages"], read=lambda page: (_entry(page), _signals(page)))
        report = await walk.run(walk_async, {**walk_arguments(CRAWL, arguments), **since_arguments(arguments, options)})
        lines, suffix = index_lines([entry for entry, _ in walk.pages])
        lines = [line + marks for line, (_, marks) in zip(lines, walk.pages, strict=True)]
        summary = (
            f"{count(report.fetched, 'page')}, {report.bytes} bytes from {report.origin} "
            f"in {report.elapsed_s:.1f}s."
        )
        if suffix:
            summary += f" Titles ending {suffix.strip()!r} are shown without it."
        summary += _since(report)
        narrow = "lower max_pages or max_depth, give include or exclude, or start from a deeper URL"
        output = Output(CRAWL, lines, summary, report_notices(report, arguments, options),
                        bounded_report(report, options.max_output_chars), unit="pages", narrow=narrow)
        return part(output, options, cursors)

    return tool(CRAWL, options, web_crawl, WalkReport,
                "List a web site's pages from url, one line each: `URL STATUS SIZE — TITLE`. " + _WALK)


def _entry(page: Page) -> tuple[str, int, int, str | None]:
    return page.final_url, page.status, page.byte_count, page.title


def _signals(page: Page) -> str:
    """What a page says of its own indexing, as web_crawl's line shows it."""
    marks = " [noindex]" if page.noindex else ""
    if page.canonical is not None and page.canonical not in (page.url, page.final_url):
        marks += f" [canonical: {page.canonical}]"
    return marks


def grep_tool(options: ServerOptions, cursors: Cursors) -> Tool:
    """The web_grep tool of a server with ``options``, its cut outputs kept in ``cursors``."""

    async def web_grep(ctx: Context, arguments: dict[str, Any]) -> CallToolResult:
        if arguments["cursor"] is not None:
            return _continue(options, cursors, GREP, arguments["cursor"])
        if arguments["pattern"] is None:
            raise ToolError("missing pattern: give the text or regular expression to search for (or a cut "
                            "output's cursor to continue it)")
        walk = ToolWalk(ctx, options, arguments["max_pages"])
        matches, report = await walk.run(_grep, {**walk_arguments(GREP, arguments), **since_arguments(arguments, options)})
        pages = len({match.url for match in matches})
        summary = (
            f"{count(len(matches), 'matching line')} on {pages} of {count(report.fetched, 'page')} "
            f"from {report.origin} in {report.elapsed_s:.1f}s."
        )
        summary += _since(report)
        narrow = "a narrower pattern, lower max_matches, context, max_pages or max_depth, or give include or exclude"
        output = Output(GREP, grep_lines(matches), summary, report_notices(report, arguments, options),
                        bounded_report(report, options.max_output_chars), unit="lines", narrow=narrow)
        return part(output, options, cursors)

    return tool(GREP, options, web_grep, WalkReport,
                "Search the text of a web site's pages from url for pattern: matching lines by page, `N: line` "
                "(context `N- line`). " + _WALK)


def _since(report: Report) -> str:
    """With ``since``: what changed since the last call with it, the pages removed (the first
    :data:`_REMOVED_NAMED`, and how many more), and what the listing leaves out."""
    changes = report.changes
    if changes is None:
        return ""
    removed = changes["removed"]
    said = (f" Since the last call with since: {changes['new']} new, {changes['changed']} changed, "
            f"{changes['unchanged']} unchanged (not listed), {len(removed)} removed")
    if not removed:
        return said + "."
    named = ", ".join(f"{entry['url']} ({entry['why']})" for entry in removed[:_REMOVED_NAMED])
    more = f" and {len(removed) - _REMOVED_NAMED} more" if len(removed) > _REMOVED_NAMED else ""
    return f"{said}: {named}{more}."


# How many removed pages the summary names.
_REMOVED_NAMED = 10


async def _grep(grep: str, **arguments: Any) -> tuple[list[Match], Report]:
    """:func:`sitewalk.api.grep_async` called with the walk's own name of its pattern."""
    return await grep_async(pattern=grep, **arguments)


def _continue(options: ServerOptions, cursors: Cursors, tool: str, cursor: str) -> CallToolResult:
    """The next part of the output a cursor names."""
    try:
        key, output, start = cursors.get(tool, cursor)
    except SitewalkError as exc:
        raise ToolError(str(exc)) from None
    return part(output, options, cursors, start=start, key=key)
