"""web_crawl and web_grep: a site walked breadth first, listed or searched, long outputs continued by cursor."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import Field

from sitewalk.api import grep_async, walk_async
from sitewalk.exceptions import SitewalkError
from sitewalk.items import count
from sitewalk.mcp import parameters
from sitewalk.mcp.cursors import Cursors, Output, part
from sitewalk.mcp.listings import grep_lines, index_lines
from sitewalk.mcp.notices import report_notices
from sitewalk.mcp.options import ServerOptions
from sitewalk.mcp.parameters import MAX_CONTEXT, param, walk_options
from sitewalk.mcp.report import WalkReport, bounded_report
from sitewalk.mcp.walk import ToolWalk
from sitewalk.patterns import MAX_LENGTH

__all__ = ["crawl_tool", "grep_tool"]


def crawl_tool(options: ServerOptions, cursors: Cursors) -> Any:
    """The web_crawl tool of a server with ``options``, its cut outputs kept in ``cursors``."""
    fields = walk_options(options)

    async def web_crawl(
        ctx: Context,
        url: str | None = parameters.url(required=False),
        cursor: str | None = parameters.cursor(),
        max_depth: int = fields["max_depth"],
        max_pages: int = fields["max_pages"],
        deadline: float = fields["deadline"],
        max_bytes: int = fields["max_bytes"],
        concurrency: int = fields["concurrency"],
        include: str | None = fields["include"],
        exclude: str | None = fields["exclude"],
        no_parent: bool = fields["no_parent"],
        sitemap: bool = fields["sitemap"],
    ) -> Annotated[CallToolResult, WalkReport]:
        """List the pages of a web site, breadth first from a URL: one line per fetched page,
        `URL STATUS SIZE — TITLE` (SIZE e.g. 13 kB), then notices about anything skipped, failed or cut
        (a cut listing's notice names the cursor that continues it). The walk's report is the
        structured result."""
        if cursor is not None:
            return _continue(options, cursors, "web_crawl", cursor)
        progress = ToolWalk(ctx, options, max_pages)
        budgets = {"max_pages": max_pages, "deadline": deadline, "max_bytes": max_bytes}
        walk_arguments = {"max_depth": max_depth, "include": include, "exclude": exclude, "no_parent": no_parent,
                          "sitemap": sitemap, "concurrency": concurrency, **budgets}
        report = await progress.run(url, walk_arguments, lambda: walk_async(url, **progress.arguments(walk_arguments)))
        lines, suffix = index_lines(progress.pages)
        summary = (
            f"{count(report.fetched, 'page')}, {report.bytes} bytes from {report.origin} "
            f"in {report.elapsed_s:.1f}s."
        )
        if suffix:
            summary += f" Titles ending {suffix.strip()!r} are shown without it."
        narrow = "lower max_pages or max_depth, give include or exclude, or start from a deeper URL"
        output = Output("web_crawl", lines, summary, report_notices(report, budgets, options),
                        bounded_report(report, options.max_output_chars), unit="pages", narrow=narrow)
        return part(output, options, cursors)

    return web_crawl


def grep_tool(options: ServerOptions, cursors: Cursors) -> Any:
    """The web_grep tool of a server with ``options``, its cut outputs kept in ``cursors``."""
    fields = walk_options(options)

    async def web_grep(
        ctx: Context,
        url: str | None = parameters.url(required=False),
        pattern: str | None = Field(
            default=None,
            min_length=1,
            max_length=MAX_LENGTH,
            description="Regular expression in RE2 syntax (Python's, without look-around or backreferences), or "
            "plain text with fixed_strings, searched for in each page's visible text, line by line. Required "
            "unless cursor is given.",
        ),
        cursor: str | None = parameters.cursor(),
        max_matches: int = param("max_matches", options.max_matches),
        max_depth: int = fields["max_depth"],
        max_pages: int = fields["max_pages"],
        ignore_case: bool = param("ignore_case"),
        context: int = param("context", MAX_CONTEXT),
        fixed_strings: bool = param("fixed_strings"),
        deadline: float = fields["deadline"],
        max_bytes: int = fields["max_bytes"],
        concurrency: int = fields["concurrency"],
        include: str | None = fields["include"],
        exclude: str | None = fields["exclude"],
        no_parent: bool = fields["no_parent"],
        sitemap: bool = fields["sitemap"],
    ) -> Annotated[CallToolResult, WalkReport]:
        """Search the visible text of a web site's pages, walked breadth first from a URL, for a
        pattern: matching lines grouped by page (`N: line`, context lines `N- line`), then notices
        about anything skipped, failed or cut (a cut listing's notice names the cursor that
        continues it). The walk's report is the structured result."""
        if cursor is not None:
            return _continue(options, cursors, "web_grep", cursor)
        if pattern is None:
            raise ToolError("missing pattern: give the text or regular expression to search for (or a cut "
                            "output's cursor to continue it)")
        progress = ToolWalk(ctx, options, max_pages)
        budgets = {"max_pages": max_pages, "deadline": deadline, "max_bytes": max_bytes, "max_matches": max_matches}
        walk_arguments = {
            "max_depth": max_depth, "ignore_case": ignore_case, "context": context, "fixed_strings": fixed_strings,
            "include": include, "exclude": exclude, "no_parent": no_parent, "sitemap": sitemap,
            "concurrency": concurrency, **budgets,
        }
        matches, report = await progress.run(
            url, {"grep": pattern, **walk_arguments},
            lambda: grep_async(url, pattern, **progress.arguments(walk_arguments)),
        )
        pages = len({match.url for match in matches})
        summary = (
            f"{count(len(matches), 'matching line')} on {pages} of {count(report.fetched, 'page')} "
            f"from {report.origin} in {report.elapsed_s:.1f}s."
        )
        narrow = "a narrower pattern, lower max_matches, context, max_pages or max_depth, or give include or exclude"
        output = Output("web_grep", grep_lines(matches), summary, report_notices(report, budgets, options),
                        bounded_report(report, options.max_output_chars), unit="lines",
                        narrow=narrow)
        return part(output, options, cursors)

    return web_grep


def _continue(options: ServerOptions, cursors: Cursors, tool: str, cursor: str) -> CallToolResult:
    """The next part of the output a cursor names."""
    try:
        key, output, start = cursors.get(tool, cursor)
    except SitewalkError as exc:
        raise ToolError(str(exc)) from None
    return part(output, options, cursors, start=start, key=key)
