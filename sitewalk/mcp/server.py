"""The MCP server: web_fetch, web_crawl and web_grep, typed and bounded, over the same walk as the CLI."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from sitewalk import __version__
from sitewalk.api import grep_async, walk_async
from sitewalk.config import WalkConfig, argument
from sitewalk.configchecks import RENDER_MODES
from sitewalk.exceptions import SeedError, SitewalkError
from sitewalk.failures import KINDS
from sitewalk.items import Page
from sitewalk.mcp.cursors import Cursors, Output
from sitewalk.mcp.options import ServerOptions
from sitewalk.mcp.text import (
    LISTED,
    MCP,
    argument_errors,
    bounded_report,
    count,
    grep_lines,
    index_lines,
    page_text,
    report_notices,
    result,
    seed_error,
    size,
)
from sitewalk.patterns import MAX_LENGTH

__all__ = ["build_server"]

_T = TypeVar("_T")
_LISTED = f"At most {LISTED} (fewer when the output cap needs the room)"


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


class BrokenLink(BaseModel):
    """A URL that pages of the site link to and that answered 4xx or 5xx, or could not be fetched."""

    url: str
    status: int | None = Field(description="The HTTP status; null when the URL could not be fetched.")
    kind: str = Field(description="http for a status, else why it could not be fetched (as failures' kind).")
    reason: str
    inlinks: int = Field(description="How many fetched pages link to it.")
    linked_from: list[str] = Field(description="The first 10 pages that link to it.")


class WalkReport(BaseModel):
    """The walk's report, as ``scrapy crawl sitewalk -a report=...`` writes it, its lists cut short."""

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
    failures: list[WalkFailure] = Field(
        description=f"Pages that could not be fetched, with the reason. {_LISTED}; failures_total counts them all."
    )
    failures_total: int = Field(description="How many pages could not be fetched.")
    robots_skipped: list[str] = Field(
        description=f"Pages not fetched because robots.txt disallows them. {_LISTED}; robots_skipped_total counts "
        "them all."
    )
    robots_skipped_total: int = Field(description="How many pages robots.txt kept out.")
    unvisited: list[str] = Field(
        description=f"Known pages within max_depth that a stop left unfetched. {_LISTED}; unvisited_total counts "
        "them all."
    )
    unvisited_total: int = Field(description="How many known pages a stop left unfetched.")
    out_of_scope: int = Field(description="Links on the origin that include, exclude or no_parent left out.")
    sitemaps: list[str] = Field(description=f"The sitemap files read (sitemap=true). {_LISTED}.")
    sitemaps_total: int = Field(description="How many sitemap files were read.")
    broken_links: list[BrokenLink] = Field(
        default_factory=list,
        description=f"Broken links (4xx, 5xx or a failure), most linked first, with the pages linking to them. {_LISTED}.",
    )
    broken_links_total: int = Field(default=0, description="How many broken URLs the walk found.")
    bytes: int = Field(description="Body bytes fetched.")
    elapsed_s: float = Field(description="Seconds the walk took.")


class FetchResult(BaseModel):
    """The page web_fetch fetched, and which part of its content the text holds."""

    url: str = Field(description="The URL asked for.")
    final_url: str = Field(description="The page's URL after redirects.")
    status: int = Field(description="The HTTP status of the answer.")
    content_type: str | None = Field(description="Its media type, e.g. text/html.")
    title: str | None = Field(description="The page's title (HTML pages).")
    bytes: int = Field(description="Body bytes fetched.")
    length: int | None = Field(description="Characters of the page's content; null when it is not text.")
    start_index: int = Field(description="Where the text's part of the content starts.")
    next_start_index: int | None = Field(
        description="The start_index of the next part; null when the text holds the content to its end."
    )


class _Server(MCPServer):
    """An MCP server whose argument errors are one line for the model: each parameter as it was
    given, the server option behind a maximum (not pydantic's validation report); an argument the
    tool does not take is an error too, not silently dropped."""

    def __init__(self, options: ServerOptions, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.options = options
        self.parameters: dict[str, list[str]] = {}

    def add_read_only_tool(self, fn: Callable[..., Any], name: str, title: str) -> None:
        """Add the tool ``fn`` (its context parameter named ``ctx``), read-only on an open world."""
        self.parameters[name] = [parameter for parameter in inspect.signature(fn).parameters if parameter != "ctx"]
        self.add_tool(fn, name=name, title=title, description=inspect.cleandoc(fn.__doc__ or ""),
                      annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True))

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        known = self.parameters.get(name)
        unknown = sorted(set(arguments) - set(known)) if known is not None else []
        if unknown:
            close = difflib.get_close_matches(unknown[0], known or [], n=1)
            hint = f"did you mean {close[0]}?" if close else f"{name} takes {', '.join(known or [])}"
            raise ToolError(f"Error executing tool {name}: unknown parameter {unknown[0]!r} ({hint})")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            # The SDK validates the arguments against the tool's schema before the tool runs, and
            # raises its ToolError from pydantic's error: read it here, where the SDK hands it on.
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(
                    f"Error executing tool {name}: {argument_errors(exc.__cause__, self.options)}"
                ) from exc.__cause__
            raise


def build_server(options: ServerOptions) -> MCPServer:
    """The MCP server with the three tools, their bounds taken from ``options``."""
    server = _Server(
        options,
        name="sitewalk",
        version=__version__,
        instructions=(
            "web_crawl lists the pages of one web site (same origin as the URL, breadth first); "
            "web_grep searches their visible text line by line; web_fetch reads one page as Markdown. "
            "All fetch only what the budgets allow and say in notices what was skipped or cut and "
            "which parameter changes it; a cut listing names a cursor that continues it."
        ),
    )
    cursors = Cursors(options.cursor_memory)
    server.add_read_only_tool(_web_fetch(options), "web_fetch", "Read a web page")
    server.add_read_only_tool(_web_crawl(options, cursors), "web_crawl", "Crawl a web site")
    server.add_read_only_tool(_web_grep(options, cursors), "web_grep", "Search a web site's text")
    return server
# -- the tools ------------------------------------------------------------------------------------
# Lines of context a web_grep call may ask for around each match.
_MAX_CONTEXT = 10
# Parameters take pydantic Field defaults so that each bound is the server's own maximum: the
# schema the model reads is the schema a call is validated against.


def _url(required: bool = True) -> Any:
    description = (
        "The http(s) URL to start from. Only pages on its origin (scheme, host, port) are walked; links to "
        "other sites are not followed."
    )
    if required:
        return Field(description=description)
    return Field(default=None, description=description + " Required unless cursor is given.")


def _cursor() -> Any:
    return Field(
        default=None,
        description="The cursor a cut output's notice names: returns the next part of that walk's output, "
        "without walking again (the other parameters are then not needed).",
    )


def _param(name: str, maximum: float | None = None) -> Any:
    """The walk argument ``name`` as a tool parameter: its default, bounds and help are the
    walk's own (:func:`sitewalk.config.argument`); ``maximum`` is this server's."""
    spec = argument(name)
    default = getattr(WalkConfig, name)
    if maximum is not None:
        default = min(default, maximum)
    description = spec.help[0].upper() + spec.help[1:] + "."
    # A pattern's length is bounded like the walk bounds it (sitewalk.patterns).
    length = MAX_LENGTH if name in ("include", "exclude") else None
    return Field(default=default, description=description, ge=spec.minimum, gt=spec.above, le=maximum, max_length=length)


def _render(options: ServerOptions) -> Any:
    modes = RENDER_MODES if options.render else ("never",)
    off = "" if options.render else " This server has it off (sitewalk-mcp --no-render): never only."
    return Field(default="never", pattern=f"^({'|'.join(modes)})$",
                 description=argument("render").help[0].upper() + argument("render").help[1:] + "." + off)


def _walk_options(options: ServerOptions) -> dict[str, Any]:
    """The parameters web_crawl and web_grep share, as pydantic fields with this server's bounds."""
    return {
        "max_depth": _param("max_depth", options.max_depth),
        "max_pages": _param("max_pages", options.max_pages),
        "deadline": _param("deadline", options.max_deadline),
        "max_bytes": _param("max_bytes", options.max_bytes),
        "concurrency": _param("concurrency", options.max_concurrency),
        "include": _param("include"),
        "exclude": _param("exclude"),
        "no_parent": _param("no_parent"),
        "sitemap": _param("sitemap"),
        "render": _render(options),
    }


# The most characters a web_fetch call returns unless it asks for more (up to the output cap).
_FETCH_LENGTH = 10_000


def _web_fetch(options: ServerOptions) -> Any:
    cap = options.max_output_chars

    async def web_fetch(
        ctx: Context,
        url: str = Field(description="The http(s) URL of the page to read."),
        start_index: int = Field(
            default=0, ge=0, description="The character of the content to start at: the start_index a cut "
            "page's notice names continues it."
        ),
        max_length: int = Field(
            default=min(_FETCH_LENGTH, cap), ge=1, le=cap,
            description="Most characters of content to return (fewer when the notices need the room).",
        ),
        main_content: bool = Field(
            default=True,
            description="Only the page's main content, without navigation, header, footer and sidebars; false "
            "for the whole page.",
        ),
        render: str = _render(options),
    ) -> Annotated[CallToolResult, FetchResult]:
        """Read one web page: an HTML page as Markdown (headings, paragraphs, lists, links, tables,
        code), a text page (plain text, JSON, XML) as it is. A long page is cut at max_length and
        a notice names the start_index that continues it. Fetched like a walk of one page: the
        same address guard, robots.txt and budgets. Status, final URL and title are the
        structured result."""
        walk = _Progress(ctx, options, 1, read=lambda page: (page, page.content("markdown", main_content=main_content)))
        arguments = {
            "max_depth": 0, "max_pages": 1, "content": "markdown", "main_content": main_content,
            "deadline": min(WalkConfig.deadline, options.max_deadline), "max_bytes": options.max_bytes, "render": render,
        }
        await walk.run(url, arguments, lambda: walk_async(url, **walk.arguments(arguments)))
        page, content = walk.pages[0]
        text = content if content is not None else ""
        if start_index and start_index >= len(text):
            raise ToolError(
                f"start_index={start_index} is past the end of the page's content ({len(text)} characters)"
            )
        notes = []
        if page.final_url != url:
            notes.append(f"Note: {url} redirected to {page.final_url}.")
        if not 200 <= page.status < 300:
            notes.append(f"Note: the server answered HTTP {page.status}: the content is that answer's.")
        if content is None:
            notes.append(
                f"Note: the page is {page.content_type or 'of no declared type'} ({page.byte_count} bytes), not text: "
                "there is no content to show."
            )
        elif not content.strip():
            notes.append("Note: the page has no text content.")
        structured = FetchResult(
            url=url, final_url=page.final_url, status=page.status, content_type=page.content_type, title=page.title,
            bytes=page.byte_count, length=None if content is None else len(content), start_index=start_index,
            next_start_index=len(text),
        ).model_dump()
        # Sized with the largest next_start_index it can have.
        budget = cap - size(structured)
        part, end = page_text(text, start_index, max_length, budget, notes, page.final_url)
        structured["next_start_index"] = end if end < len(text) else None
        return CallToolResult(content=[TextContent(type="text", text=part)], structured_content=structured)

    return web_fetch


def _web_crawl(options: ServerOptions, cursors: Cursors) -> Any:
    fields = _walk_options(options)

    async def web_crawl(
        ctx: Context,
        url: str | None = _url(required=False),
        cursor: str | None = _cursor(),
        max_depth: int = fields["max_depth"],
        max_pages: int = fields["max_pages"],
        deadline: float = fields["deadline"],
        max_bytes: int = fields["max_bytes"],
        concurrency: int = fields["concurrency"],
        include: str | None = fields["include"],
        exclude: str | None = fields["exclude"],
        no_parent: bool = fields["no_parent"],
        sitemap: bool = fields["sitemap"],
        render: str = fields["render"],
    ) -> Annotated[CallToolResult, WalkReport]:
        """List the pages of a web site, breadth first from a URL: one line per fetched page,
        `URL STATUS SIZE — TITLE` (SIZE e.g. 13 kB), then notices about anything skipped, failed or cut
        (a cut listing's notice names the cursor that continues it). The walk's report is the
        structured result."""
        if cursor is not None:
            return _continue(options, cursors, "web_crawl", cursor)
        progress = _Progress(ctx, options, max_pages)
        budgets = {"max_pages": max_pages, "deadline": deadline, "max_bytes": max_bytes}
        walk_options = {"max_depth": max_depth, "include": include, "exclude": exclude, "no_parent": no_parent,
                        "sitemap": sitemap, "concurrency": concurrency, "render": render, **budgets}
        report = await progress.run(url, walk_options, lambda: walk_async(url, **progress.arguments(walk_options)))
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
        return result(output, options, cursors)

    return web_crawl


def _web_grep(options: ServerOptions, cursors: Cursors) -> Any:
    fields = _walk_options(options)

    async def web_grep(
        ctx: Context,
        url: str | None = _url(required=False),
        pattern: str | None = Field(
            default=None,
            min_length=1,
            max_length=MAX_LENGTH,
            description="Regular expression in RE2 syntax (Python's, without look-around or backreferences), or "
            "plain text with fixed_strings, searched for in each page's visible text, line by line. Required "
            "unless cursor is given.",
        ),
        cursor: str | None = _cursor(),
        max_matches: int = _param("max_matches", options.max_matches),
        max_depth: int = fields["max_depth"],
        max_pages: int = fields["max_pages"],
        ignore_case: bool = _param("ignore_case"),
        context: int = _param("context", _MAX_CONTEXT),
        fixed_strings: bool = _param("fixed_strings"),
        deadline: float = fields["deadline"],
        max_bytes: int = fields["max_bytes"],
        concurrency: int = fields["concurrency"],
        include: str | None = fields["include"],
        exclude: str | None = fields["exclude"],
        no_parent: bool = fields["no_parent"],
        sitemap: bool = fields["sitemap"],
        render: str = fields["render"],
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
        progress = _Progress(ctx, options, max_pages)
        budgets = {"max_pages": max_pages, "deadline": deadline, "max_bytes": max_bytes, "max_matches": max_matches}
        walk_options = {
            "max_depth": max_depth, "ignore_case": ignore_case, "context": context, "fixed_strings": fixed_strings,
            "include": include, "exclude": exclude, "no_parent": no_parent, "sitemap": sitemap,
            "concurrency": concurrency, "render": render, **budgets,
        }
        matches, report = await progress.run(
            url, {"grep": pattern, **walk_options}, lambda: grep_async(url, pattern, **progress.arguments(walk_options))
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
        return result(output, options, cursors)

    return web_grep


def _continue(options: ServerOptions, cursors: Cursors, tool: str, cursor: str) -> CallToolResult:
    """The next part of the output a cursor names."""
    try:
        key, output, start = cursors.get(tool, cursor)
    except SitewalkError as exc:
        raise ToolError(str(exc)) from None
    return result(output, options, cursors, start=start, key=key)


def _index_entry(page: Page) -> tuple[str, int, int, str | None]:
    return page.final_url, page.status, page.byte_count, page.title


class _Progress:
    """One call's walk: its ``on_page`` keeps what the call needs of each page (``read``: by
    default what the index lists) and reports one progress step per page (a no-op unless the
    client sent a progress token).

    A call the client cancels ends its walk gracefully after the page in flight (the API stops
    the crawl when its caller is cancelled).
    """

    def __init__(self, ctx: Context, options: ServerOptions, total: int,
                 read: Callable[[Page], Any] = _index_entry) -> None:
        self.ctx = ctx
        self.options = options
        self.total = total
        self.read = read
        self.pages: list[Any] = []

    def arguments(self, budgets: dict[str, Any]) -> dict[str, Any]:
        """The API arguments every walk of this server's tools takes, with the call's ``budgets``."""
        options = self.options
        return {"on_page": self.on_page, "on_page_stops": False, "settings": options.settings(),
                "delay": options.delay, **budgets}

    async def run(self, url: str | None, options: dict[str, Any], walk: Callable[[], Awaitable[_T]]) -> _T:
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
        self.pages.append(self.read(page))
        await self.ctx.report_progress(len(self.pages), self.total, message=page.final_url)
        return True
