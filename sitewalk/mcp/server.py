"""The MCP server: web_crawl and web_grep, typed and bounded, over the same walk as the CLI."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from sitewalk import __version__
from sitewalk.api import grep_async, walk_async
from sitewalk.config import WalkConfig, argument
from sitewalk.exceptions import SeedError, SitewalkError
from sitewalk.failures import KINDS
from sitewalk.items import Page
from sitewalk.mcp.options import ServerOptions
from sitewalk.mcp.text import MCP, count, grep_lines, index_line, report_notices, result, seed_error

__all__ = ["build_server"]

_T = TypeVar("_T")


class WalkFailure(BaseModel):
    """A page that could not be fetched, what kind of failure and why, and the page that linked to it."""

    url: str
    kind: str = Field(description="What went wrong, one of: " + ", ".join(sorted(KINDS)) + ".")
    reason: str | None
    found_on: str | None


class SeedFailure(BaseModel):
    """Why the URL the walk started from could not be fetched."""

    url: str
    kind: str = Field(description="What went wrong, one of: " + ", ".join(sorted(KINDS)) + ".")
    reason: str


class WalkReport(BaseModel):
    """The walk's report, as ``scrapy crawl sitewalk -a report=...`` writes it."""

    seed: str = Field(description="The URL the walk started from.")
    origin: str | None = Field(description="scheme://host[:port] of the seed's final URL; only it was walked.")
    fetched: int = Field(description="Pages fetched (any HTTP status), the seed included.")
    stopped: str | None = Field(
        description="null when the walk ran out of pages; else what stopped it with pages left: "
        "max-pages, deadline, max-bytes, callback (web_grep: max_matches reached) or interrupted."
    )
    error: SeedFailure | None = Field(
        default=None, description="Why the start URL could not be fetched; null when it was."
    )
    failures: list[WalkFailure] = Field(description="Pages that could not be fetched, with the reason.")
    robots_skipped: list[str] = Field(description="Pages not fetched because robots.txt disallows them.")
    unvisited: list[str] = Field(description="Known pages within max_depth that a stop left unfetched.")
    bytes: int = Field(description="Body bytes fetched.")
    elapsed_s: float = Field(description="Seconds the walk took.")


def build_server(options: ServerOptions) -> MCPServer:
    """The MCP server with the two tools, their bounds taken from ``options``."""
    server = MCPServer(
        "sitewalk",
        version=__version__,
        instructions=(
            "web_crawl lists the pages of one web site (same origin as the URL, breadth first); "
            "web_grep searches their visible text line by line. Both fetch only what the budgets "
            "allow and say in notices what was skipped or cut and which parameter changes it."
        ),
    )
    hints = ToolAnnotations(read_only_hint=True, open_world_hint=True)
    server.add_tool(_web_crawl(options), name="web_crawl", title="Crawl a web site", annotations=hints)
    server.add_tool(_web_grep(options), name="web_grep", title="Search a web site's text", annotations=hints)
    return server


# -- the tools ------------------------------------------------------------------------------------
# Lines of context a web_grep call may ask for around each match.
_MAX_CONTEXT = 10
# Parameters take pydantic Field defaults so that each bound is the server's own maximum: the
# schema the model reads is the schema a call is validated against.


def _url() -> Any:
    return Field(
        description="The http(s) URL to start from. Only pages on its origin (scheme, host, port) "
        "are walked; links to other sites are not followed."
    )


def _param(name: str, maximum: float | None = None) -> Any:
    """The walk argument ``name`` as a tool parameter: its default, bounds and help are the
    walk's own (:func:`sitewalk.config.argument`); ``maximum`` is this server's."""
    spec = argument(name)
    default = getattr(WalkConfig, name)
    if maximum is not None:
        default = min(default, maximum)
    description = spec.help[0].upper() + spec.help[1:] + "."
    return Field(default=default, description=description, ge=spec.minimum, gt=spec.above, le=maximum)


def _max_depth(options: ServerOptions) -> Any:
    return _param("max_depth", options.max_depth)


def _max_pages(options: ServerOptions) -> Any:
    return _param("max_pages", options.max_pages)


def _deadline(options: ServerOptions) -> Any:
    return _param("deadline", options.max_deadline)


def _max_bytes(options: ServerOptions) -> Any:
    return _param("max_bytes", options.max_bytes)


def _web_crawl(options: ServerOptions) -> Any:
    async def web_crawl(
        ctx: Context,
        url: str = _url(),
        max_depth: int = _max_depth(options),
        max_pages: int = _max_pages(options),
        deadline: float = _deadline(options),
        max_bytes: int = _max_bytes(options),
    ) -> Annotated[CallToolResult, WalkReport]:
        """List the pages of a web site, breadth first from a URL: one line per fetched page,
        `URL STATUS BYTES bytes — TITLE`, then notices about anything skipped, failed or cut.
        The walk's report is the structured result."""
        progress = _Progress(ctx, options, max_pages)
        budgets = {"max_pages": max_pages, "deadline": deadline, "max_bytes": max_bytes}
        walk_options = {"max_depth": max_depth, **budgets}
        report = await progress.run(url, walk_options, lambda: walk_async(url, **progress.arguments(walk_options)))
        lines = [index_line(page) for page in progress.pages]
        summary = (
            f"{count(report.fetched, 'page')}, {report.bytes} bytes from {report.origin} "
            f"in {report.elapsed_s:.1f}s."
        )
        notices = report_notices(report, budgets, options)
        narrow = "lower max_pages or max_depth, or start from a deeper URL"
        return result(lines, summary, notices, report, options, unit="pages", narrow=narrow)

    return web_crawl


def _web_grep(options: ServerOptions) -> Any:
    async def web_grep(
        ctx: Context,
        url: str = _url(),
        pattern: str = Field(
            min_length=1,
            description="Python regular expression (or plain text with fixed_strings) searched for in each "
            "page's visible text, line by line.",
        ),
        max_matches: int = _param("max_matches", options.max_matches),
        max_depth: int = _max_depth(options),
        max_pages: int = _max_pages(options),
        ignore_case: bool = _param("ignore_case"),
        context: int = _param("context", _MAX_CONTEXT),
        fixed_strings: bool = _param("fixed_strings"),
        deadline: float = _deadline(options),
        max_bytes: int = _max_bytes(options),
    ) -> Annotated[CallToolResult, WalkReport]:
        """Search the visible text of a web site's pages, walked breadth first from a URL, for a
        pattern: matching lines grouped by page (`N: line`, context lines `N- line`), then notices
        about anything skipped, failed or cut. The walk's report is the structured result."""
        progress = _Progress(ctx, options, max_pages)
        budgets = {"max_pages": max_pages, "deadline": deadline, "max_bytes": max_bytes, "max_matches": max_matches}
        walk_options = {
            "max_depth": max_depth, "ignore_case": ignore_case, "context": context, "fixed_strings": fixed_strings,
            **budgets,
        }
        matches, report = await progress.run(
            url, {"grep": pattern, **walk_options}, lambda: grep_async(url, pattern, **progress.arguments(walk_options))
        )
        pages = len({match.url for match in matches})
        summary = (
            f"{count(len(matches), 'matching line')} on {pages} of {count(report.fetched, 'page')} "
            f"from {report.origin} in {report.elapsed_s:.1f}s."
        )
        notices = report_notices(report, budgets, options)
        narrow = "a narrower pattern, lower max_matches, context, max_pages or max_depth"
        return result(grep_lines(matches), summary, notices, report, options, unit="lines of matches and context",
                      narrow=narrow)

    return web_grep


class _Progress:
    """One call's walk: its ``on_page`` keeps what the index needs and reports one progress step
    per page (a no-op unless the client sent a progress token).

    A call the client cancels ends its walk gracefully after the page in flight (the API stops
    the crawl when its caller is cancelled).
    """

    def __init__(self, ctx: Context, options: ServerOptions, total: int) -> None:
        self.ctx = ctx
        self.options = options
        self.total = total
        self.pages: list[tuple[str, int, int, str | None]] = []

    def arguments(self, budgets: dict[str, Any]) -> dict[str, Any]:
        """The API arguments every walk of this server's tools takes, with the call's ``budgets``."""
        options = self.options
        return {"on_page": self.on_page, "on_page_stops": False, "settings": options.settings(),
                "delay": options.delay, **budgets}

    async def run(self, url: str, options: dict[str, Any], walk: Callable[[], Awaitable[_T]]) -> _T:
        """The result of ``walk()``, a walk of ``url`` with the walk arguments ``options``; a walk
        that cannot be made is an error the model can read, naming the tools' parameters."""
        try:
            # The API checks them too, in the words of Python callers.
            WalkConfig.from_mapping({"seed": url, **options}, MCP)
            return await walk()
        except SeedError as exc:
            raise ToolError(seed_error(exc)) from None
        except SitewalkError as exc:
            raise ToolError(str(exc)) from None

    async def on_page(self, page: Page) -> bool:
        self.pages.append((page.final_url, page.status, page.byte_count, page.title))
        await self.ctx.report_progress(len(self.pages), self.total, message=page.final_url)
        return True
