"""The text the model reads: the listing, then notices that name what would change the result."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcp.types import CallToolResult, TextContent

from sitewalk.failures import Failed
from sitewalk.hints import Surface
from sitewalk.items import Match, Report

if TYPE_CHECKING:
    from sitewalk.exceptions import SeedError
    from sitewalk.mcp.options import ServerOptions

__all__ = ["MCP", "count", "grep_lines", "index_line", "report_notices", "result", "seed_error"]

# How many failures a notice names before it refers to the report for the rest.
_NAMED_FAILURES = 3
_GUARD_OPTION = "--allow-networks (env SITEWALK_GUARD_ALLOW_NETWORKS)"
_ROBOTS_OPTION = "--no-robots (env ROBOTSTXT_OBEY=false)"


def index_line(page: tuple[str, int, int, str | None]) -> str:
    final_url, status, byte_count, title = page
    line = f"{final_url} {status} {byte_count} bytes"
    return f"{line} — {' '.join(title.split())}" if title and title.strip() else line


def grep_lines(matches: list[Match]) -> list[str]:
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


def report_notices(report: Report, budgets: dict[str, float], options: ServerOptions) -> list[str]:
    """What the model should know about what it did not get, each with what would change it."""
    notices = []
    if report.stopped:
        notices.append(_stop_notice(report, budgets, options))
    if report.robots_skipped:
        notices.append(
            f"{count(len(report.robots_skipped), 'page')} not fetched because the site's robots.txt disallows "
            f"them ({_examples(report.robots_skipped)}). This server obeys robots.txt; its operator can "
            f"start it with {_ROBOTS_OPTION} to fetch them."
        )
    # .get: a walk resumed from an older JOBDIR may hold failures recorded without a kind.
    refused = [f for f in report.failures if f.get("kind") == "guard"]
    failed = [f for f in report.failures if f not in refused]
    if refused:
        notices.append(
            f"{count(len(refused), 'page')} refused by the address guard, which blocks non-public addresses: "
            f"{_failure_examples(refused)}. The server's operator can allow a network with {_GUARD_OPTION}."
        )
    if failed:
        notices.append(
            f"{count(len(failed), 'page')} could not be fetched: {_failure_examples(failed)}. "
            "Failures do not count toward max_pages; the report's failures list has them all."
        )
    return notices


def _stop_notice(report: Report, budgets: dict[str, float], options: ServerOptions) -> str:
    left = f"{count(len(report.unvisited), 'known page')} left unfetched (the report's unvisited list)"
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


def count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _examples(urls: Sequence[str]) -> str:
    shown = ", ".join(urls[:_NAMED_FAILURES])
    return shown if len(urls) <= _NAMED_FAILURES else f"{shown} and {len(urls) - _NAMED_FAILURES} more"


def _failure_examples(failures: Sequence[dict[str, str | None]]) -> str:
    shown = "; ".join(f"{f['url']} ({f['reason']})" for f in failures[:_NAMED_FAILURES])
    more = len(failures) - _NAMED_FAILURES
    return shown if more <= 0 else f"{shown}; and {more} more"


def result(
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


class _Server(Surface):
    """The MCP server's spelling: the tools' parameters, and the operator's options for settings."""

    # Walk arguments that the tools name otherwise.
    _PARAMETERS = {"seed": "url", "grep": "pattern"}

    def name(self, argument: str) -> str:
        return self._PARAMETERS.get(argument, argument)

    def argument(self, name: str, value: Any) -> str:
        return f"{self.name(name)}={json.dumps(value)}"

    def setting(self, name: str, value: Any) -> str:
        if name == "SITEWALK_GUARD_ALLOW_NETWORKS":
            return f"--allow-networks {value}"
        if name == "ROBOTSTXT_OBEY":
            return "--robots" if value else "--no-robots"
        return f"{name}={value}"

    def fix(self, name: str, value: Any) -> str:
        return f"this server's operator can fetch it by starting the server with {self.setting(name, value)}"


MCP: Surface = _Server()


def seed_error(exc: SeedError) -> str:
    """The tool error for a seed that could not be fetched, naming this server's option."""
    return Failed(exc.kind, exc.reason, exc.fix).seed_message(exc.url, MCP)
