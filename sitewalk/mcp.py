"""sitewalk-mcp: the walk as two MCP tools, web_crawl and web_grep, served over stdio."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from sitewalk import __version__
from sitewalk.api import grep_async, walk_async
from sitewalk.config import WalkConfig
from sitewalk.exceptions import SitewalkError
from sitewalk.guard import parse_networks
from sitewalk.items import Match, Page, Report

__all__ = ["ServerOptions", "build_server", "main"]

logger = logging.getLogger(__name__)


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# How many failures a notice names before it refers to the report for the rest.
_NAMED_FAILURES = 3
_GUARD_OPTION = "--allow-networks (env SITEWALK_GUARD_ALLOW_NETWORKS)"
_ROBOTS_OPTION = "--no-robots (env ROBOTSTXT_OBEY=false)"


@dataclass(frozen=True)
class ServerOptions:
    """What the server's operator decides; a tool call can ask for less, never for more.

    ``max_*`` are the largest budgets a call may request: the tools' input schemas carry them as
    ``maximum``, so a call above one is rejected before anything is fetched. ``delay`` is the
    pause between requests (politeness is the operator's choice, not the model's).
    """

    allow_networks: str | None = None
    robots: bool = True
    user_agent: str | None = None
    delay: float = WalkConfig.delay
    max_depth: int = 5
    max_pages: int = 200
    max_deadline: float = 300.0
    max_bytes: int = 50_000_000
    max_matches: int = 500
    max_output_chars: int = 20_000

    def settings(self) -> dict[str, Any]:
        """The Scrapy settings every walk of this server runs with."""
        settings: dict[str, Any] = {"ROBOTSTXT_OBEY": self.robots}
        if self.allow_networks:
            settings["SITEWALK_GUARD_ALLOW_NETWORKS"] = self.allow_networks
        if self.user_agent:
            settings["USER_AGENT"] = self.user_agent
        return settings


class WalkFailure(BaseModel):
    """A page that could not be fetched, the reason, and the page that linked to it."""

    url: str
    reason: str | None
    found_on: str | None


class WalkReport(BaseModel):
    """The walk's report, as ``scrapy crawl sitewalk -a report=...`` writes it."""

    seed: str = Field(description="The URL the walk started from.")
    origin: str | None = Field(description="scheme://host[:port] of the seed's final URL; only it was walked.")
    fetched: int = Field(description="Pages fetched (any HTTP status), the seed included.")
    stopped: str | None = Field(
        description="null when the walk ran out of pages; else what stopped it with pages left: "
        "max-pages, deadline, max-bytes, callback (web_grep: max_matches reached) or interrupted."
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
# Parameters take pydantic Field defaults so that each bound is the server's own maximum: the
# schema the model reads is the schema a call is validated against.


def _url() -> Any:
    return Field(
        description="The http(s) URL to start from. Only pages on its origin (scheme, host, port) "
        "are walked; links to other sites are not followed."
    )


def _max_depth(options: ServerOptions) -> Any:
    return Field(
        default=min(WalkConfig.max_depth, options.max_depth),
        ge=0,
        le=options.max_depth,
        description="Link depth to follow: 0 = the URL only, 1 = it and the pages it links to, ...",
    )


def _max_pages(options: ServerOptions) -> Any:
    return Field(
        default=min(WalkConfig.max_pages, options.max_pages),
        ge=1,
        le=options.max_pages,
        description="Most pages to fetch (any HTTP status), the start URL included.",
    )


def _deadline(options: ServerOptions) -> Any:
    return Field(
        default=min(WalkConfig.deadline, options.max_deadline),
        gt=0,
        le=options.max_deadline,
        description="Seconds the whole walk may take; it stops when they run out.",
    )


def _max_bytes(options: ServerOptions) -> Any:
    return Field(
        default=min(WalkConfig.max_bytes, options.max_bytes),
        ge=1,
        le=options.max_bytes,
        description="Most body bytes to download for the whole walk.",
    )


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
        progress = _Progress(ctx, max_pages)
        try:
            report = await walk_async(
                url,
                on_page=progress.on_page,
                settings=options.settings(),
                max_depth=max_depth,
                max_pages=max_pages,
                deadline=deadline,
                max_bytes=max_bytes,
                delay=options.delay,
            )
        except SitewalkError as exc:
            raise ToolError(_for_this_server(str(exc))) from None
        lines = [_index_line(page) for page in progress.pages]
        summary = (
            f"{_count(report.fetched, 'page')}, {report.bytes} bytes from {report.origin} "
            f"in {report.elapsed_s:.1f}s."
        )
        budgets = {"max_pages": max_pages, "deadline": deadline, "max_bytes": max_bytes}
        notices = _notices(report, budgets, options)
        return _result(
            lines,
            summary,
            notices,
            report,
            options,
            unit="pages",
            narrow="lower max_pages or max_depth, or start from a deeper URL",
        )

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
        max_matches: int = Field(
            default=min(WalkConfig.max_matches, options.max_matches),
            ge=1,
            le=options.max_matches,
            description="Most matching lines to return; the walk stops once this many are found.",
        ),
        max_depth: int = _max_depth(options),
        max_pages: int = _max_pages(options),
        ignore_case: bool = Field(default=WalkConfig.ignore_case, description="Match regardless of letter case."),
        context: int = Field(default=WalkConfig.context, ge=0, le=10, description="Lines of context before and after each match."),
        fixed_strings: bool = Field(default=WalkConfig.fixed_strings, description="Treat pattern as plain text, not a regex."),
        deadline: float = _deadline(options),
        max_bytes: int = _max_bytes(options),
    ) -> Annotated[CallToolResult, WalkReport]:
        """Search the visible text of a web site's pages, walked breadth first from a URL, for a
        pattern: matching lines grouped by page (`N: line`, context lines `N- line`), then notices
        about anything skipped, failed or cut. The walk's report is the structured result."""
        progress = _Progress(ctx, max_pages)
        try:
            matches, report = await grep_async(
                url,
                pattern,
                on_page=progress.on_page,
                settings=options.settings(),
                max_matches=max_matches,
                ignore_case=ignore_case,
                context=context,
                fixed_strings=fixed_strings,
                max_depth=max_depth,
                max_pages=max_pages,
                deadline=deadline,
                max_bytes=max_bytes,
                delay=options.delay,
            )
        except SitewalkError as exc:
            raise ToolError(_for_this_server(str(exc))) from None
        pages = len({match.url for match in matches})
        summary = (
            f"{_count(len(matches), 'matching line')} on {pages} of {_count(report.fetched, 'page')} "
            f"from {report.origin} in {report.elapsed_s:.1f}s."
        )
        budgets = {"max_pages": max_pages, "deadline": deadline, "max_bytes": max_bytes, "max_matches": max_matches}
        notices = _notices(report, budgets, options)
        return _result(
            _grep_lines(matches),
            summary,
            notices,
            report,
            options,
            unit="lines of matches and context",
            narrow="a narrower pattern, lower max_matches, context, max_pages or max_depth",
        )

    return web_grep


class _Progress:
    """One call's walk: its ``on_page`` keeps what the index needs and reports one progress step
    per page (a no-op unless the client sent a progress token).

    A call the client cancels ends its walk gracefully after the page in flight (the API stops
    the crawl when its caller is cancelled).
    """

    def __init__(self, ctx: Context, total: int) -> None:
        self.ctx = ctx
        self.total = total
        self.pages: list[tuple[str, int, int, str | None]] = []

    async def on_page(self, page: Page) -> bool:
        self.pages.append((page.final_url, page.status, page.byte_count, page.title))
        await self.ctx.report_progress(len(self.pages), self.total, message=page.final_url)
        return True


# -- the text the model reads -------------------------------------------------------------------


def _index_line(page: tuple[str, int, int, str | None]) -> str:
    final_url, status, byte_count, title = page
    line = f"{final_url} {status} {byte_count} bytes"
    return f"{line} — {' '.join(title.split())}" if title and title.strip() else line


def _grep_lines(matches: list[Match]) -> list[str]:
    """Matches grouped by page, grep style: ``N: text`` for a match, ``N- text`` for context,
    ``--`` between separate runs of lines; overlapping context is shown once."""
    by_page: dict[str, dict[int, tuple[str, bool]]] = {}
    for match in matches:
        shown = by_page.setdefault(match.url, {})
        for offset, text in enumerate(match.before):
            shown.setdefault(match.line - len(match.before) + offset, (text, False))
        for offset, text in enumerate(match.after, start=1):
            shown.setdefault(match.line + offset, (text, False))
        shown[match.line] = (match.text, True)
    lines: list[str] = []
    for url, shown in by_page.items():
        lines.append(url)
        previous = None
        for number in sorted(shown):
            if previous is not None and number > previous + 1:
                lines.append("  --")
            text, is_match = shown[number]
            lines.append(f"  {number}{':' if is_match else '-'} {text}")
            previous = number
    return lines


def _notices(report: Report, budgets: dict[str, float], options: ServerOptions) -> list[str]:
    """What the model should know about what it did not get, each with what would change it."""
    notices = []
    if report.stopped:
        notices.append(_stop_notice(report, budgets, options))
    if report.robots_skipped:
        notices.append(
            f"{_count(len(report.robots_skipped), 'page')} not fetched because the site's robots.txt disallows "
            f"them ({_examples(report.robots_skipped)}). This server obeys robots.txt; its operator can "
            f"start it with {_ROBOTS_OPTION} to fetch them."
        )
    refused = [f for f in report.failures if (f["reason"] or "").startswith("refused address")]
    failed = [f for f in report.failures if f not in refused]
    if refused:
        notices.append(
            f"{_count(len(refused), 'page')} refused by the address guard, which blocks non-public addresses: "
            f"{_failure_examples(refused)}. The server's operator can allow a network with {_GUARD_OPTION}."
        )
    if failed:
        notices.append(
            f"{_count(len(failed), 'page')} could not be fetched: {_failure_examples(failed)}. "
            "Failures do not count toward max_pages; the report's failures list has them all."
        )
    return notices


def _stop_notice(report: Report, budgets: dict[str, float], options: ServerOptions) -> str:
    left = f"{_count(len(report.unvisited), 'known page')} left unfetched (the report's unvisited list)"
    limits = {
        "max-pages": ("max_pages", options.max_pages),
        "deadline": ("deadline", options.max_deadline),
        "max-bytes": ("max_bytes", options.max_bytes),
        "callback": ("max_matches", options.max_matches),
    }
    if report.stopped not in limits:
        return f"The walk ended early ({report.stopped}); {left}."
    parameter, maximum = limits[report.stopped]
    value = budgets[parameter]
    if value < maximum:
        change = f"raise {parameter} (this server allows up to {_number(maximum)})"
    else:
        change = f"{parameter} is at this server's maximum; start from a deeper URL to reach the rest"
    return f"Stopped by {parameter}={_number(value)}: {left}. To get more, {change}."


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _examples(urls: Sequence[str]) -> str:
    shown = ", ".join(urls[:_NAMED_FAILURES])
    return shown if len(urls) <= _NAMED_FAILURES else f"{shown} and {len(urls) - _NAMED_FAILURES} more"


def _failure_examples(failures: Sequence[dict[str, str | None]]) -> str:
    shown = "; ".join(f"{f['url']} ({f['reason']})" for f in failures[:_NAMED_FAILURES])
    more = len(failures) - _NAMED_FAILURES
    return shown if more <= 0 else f"{shown}; and {more} more"


def _result(
    lines: list[str],
    summary: str,
    notices: list[str],
    report: Report,
    options: ServerOptions,
    *,
    unit: str,
    narrow: str,
) -> CallToolResult:
    """The text (at most ``max_output_chars``; lines are dropped from the end of the listing, never
    the summary or the notices) and the full report as structured content."""
    cap = options.max_output_chars
    tail = "\n".join(["", "", summary, *(f"Note: {notice}" for notice in notices)])
    kept = lines
    if len("\n".join(lines)) + len(tail) > cap:
        cut = (
            f"Note: output cut at this server's limit of {cap} characters: showing the first {{kept}} of "
            f"{len(lines)} {unit}. Narrow the request ({narrow}) to see the rest."
        )
        room = cap - len(tail) - len(cut.format(kept=len(lines))) - 1
        size = 0
        kept = []
        for line in lines:
            size += len(line) + 1
            if size > room:
                break
            kept.append(line)
        tail = f"{tail}\n{cut.format(kept=len(kept))}"
    text = "\n".join(kept) + tail if kept else tail.lstrip("\n")
    return CallToolResult(content=[TextContent(type="text", text=text[:cap])], structured_content=report.to_dict())


def _for_this_server(message: str) -> str:
    """A walk error names a Scrapy setting; the model talks to a server, so name its option too."""
    if "SITEWALK_GUARD_ALLOW_NETWORKS" in message:
        return f"{message}. The server's operator can allow a network with {_GUARD_OPTION}."
    if "ROBOTSTXT_OBEY" in message:
        return f"{message}. The server's operator can turn that off with {_ROBOTS_OPTION}."
    return message


# -- the command line -------------------------------------------------------------------------------


# Numeric options: (ServerOptions field, type, smallest value, what it is). Each is --FIELD-NAME
# or SITEWALK_MCP_FIELD_NAME; the defaults are ServerOptions'.
_NUMBERS: tuple[tuple[str, type, float, str], ...] = (
    ("delay", float, 0, "seconds between the requests of a walk"),
    ("max_depth", int, 0, "largest max_depth a call may ask for"),
    ("max_pages", int, 1, "largest max_pages a call may ask for"),
    ("max_deadline", float, 1, "largest deadline (seconds) a call may ask for"),
    ("max_bytes", int, 1, "largest max_bytes a call may ask for"),
    ("max_matches", int, 1, "largest max_matches a web_grep call may ask for"),
    ("max_output_chars", int, 1000, "most characters of text a call returns"),
)


def _parser() -> argparse.ArgumentParser:
    env = os.environ.get
    defaults = ServerOptions()
    parser = argparse.ArgumentParser(
        prog="sitewalk-mcp",
        description="Serve sitewalk's web_crawl and web_grep tools over MCP (stdio). Every option "
        "can also be set by the environment variable named in its help.",
    )
    parser.add_argument(
        "--allow-networks",
        default=env("SITEWALK_GUARD_ALLOW_NETWORKS"),
        metavar="CIDRS",
        help="comma-separated networks the address guard lets walks reach besides public addresses, "
        "e.g. 127.0.0.1/32,::1/128 (env SITEWALK_GUARD_ALLOW_NETWORKS; default: public addresses only)",
    )
    parser.add_argument(
        "--robots",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="obey robots.txt (env ROBOTSTXT_OBEY; default: true); --no-robots fetches pages it disallows",
    )
    parser.add_argument("--user-agent", default=env("USER_AGENT"), help="User-Agent header (env USER_AGENT)")
    for field, kind, minimum, what in _NUMBERS:
        name = f"SITEWALK_MCP_{field.upper()}"
        default = getattr(defaults, field)
        parser.add_argument(
            "--" + field.replace("_", "-"),
            type=_at_least(kind, minimum),
            default=env(name, str(default)),
            help=f"{what} (env {name}; default {default})",
        )
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=_LOG_LEVELS,
        default=env("SITEWALK_MCP_LOG_LEVEL", "WARNING"),
        help="level of the log written to stderr (env SITEWALK_MCP_LOG_LEVEL; default WARNING)",
    )
    return parser


def _at_least(kind: type, minimum: float) -> Any:
    def convert(text: str) -> Any:
        value = kind(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum:g}, got {text}")
        return value

    convert.__name__ = kind.__name__  # argparse names the type in its "invalid int value" message
    return convert


def _options(argv: Sequence[str] | None) -> tuple[ServerOptions, str]:
    parser = _parser()
    args = parser.parse_args(argv)
    robots = args.robots
    if robots is None:
        text = os.environ.get("ROBOTSTXT_OBEY", "true").strip().lower()
        if text not in _TRUE | _FALSE:
            parser.error(f"ROBOTSTXT_OBEY must be true or false, got {text!r}")
        robots = text in _TRUE
    try:
        parse_networks(args.allow_networks)
    except SitewalkError as exc:
        parser.error(str(exc))
    numbers = {field: getattr(args, field) for field, _, _, _ in _NUMBERS}
    options = ServerOptions(allow_networks=args.allow_networks, robots=robots, user_agent=args.user_agent, **numbers)
    return options, args.log_level


def main(argv: Sequence[str] | None = None) -> None:
    """Run the server on stdin/stdout until the client closes the connection."""
    options, log_level = _options(argv)
    # stdout carries the protocol: every log line, Scrapy's and warnings included, goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.captureWarnings(True)
    build_server(options).run("stdio")


if __name__ == "__main__":
    main()
