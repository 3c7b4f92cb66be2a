"""The text the model reads: the listing, then notices that name what would change the result."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcp.types import CallToolResult, TextContent

from sitewalk.failures import Failed
from sitewalk.hints import Surface
from sitewalk.items import Match, Report, count, human_bytes

if TYPE_CHECKING:
    from pydantic import ValidationError

    from sitewalk.exceptions import SeedError
    from sitewalk.mcp.cursors import Cursors, Output
    from sitewalk.mcp.options import ServerOptions

__all__ = [
    "LISTED", "MCP", "argument_errors", "bounded_report", "count", "grep_lines", "index_lines", "page_text",
    "report_notices", "result", "seed_error", "size",
]

# How many failures a notice names before it refers to the report for the rest.
_NAMED_FAILURES = 3
# The most entries each list of the structured report holds (fewer when the output cap needs
# the room); its ``<list>_total`` counts them all.
LISTED = 20
_LISTS = ("failures", "robots_skipped", "unvisited", "sitemaps", "broken_links")
# What separates a page's own title from the site's name after it.
_TITLE_SEPARATORS = (" — ", " – ", " | ", " - ", " · ", " :: ")
_GUARD_OPTION = "--allow-networks (env SITEWALK_GUARD_ALLOW_NETWORKS)"
_ROBOTS_OPTION = "--no-robots (env ROBOTSTXT_OBEY=false)"


def index_lines(pages: Sequence[tuple[str, int, int, str | None]]) -> tuple[list[str], str | None]:
    """One line per page, ``URL STATUS SIZE — TITLE`` (SIZE as ``13 kB``), and the title suffix
    most pages repeat (the site's name: `` — Python 3.11 documentation``), left out of the lines
    it ends."""
    titles = [" ".join(title.split()) if title else "" for _, _, _, title in pages]
    suffix = _common_suffix(titles)
    lines = []
    for (final_url, status, byte_count, _), title in zip(pages, titles, strict=True):
        if suffix and title.endswith(suffix) and len(title) > len(suffix):
            title = title[: -len(suffix)]
        line = f"{final_url} {status} {human_bytes(byte_count)}"
        lines.append(f"{line} — {title}" if title else line)
    return lines, suffix


def _common_suffix(titles: list[str]) -> str | None:
    """The last separated part of the titles that at least half of them (two or more) end with."""
    endings: Counter[str] = Counter()
    for title in titles:
        cuts = [title.rfind(separator) for separator in _TITLE_SEPARATORS]
        at = max(cuts)
        if at > 0:
            endings[title[at:]] += 1
    if not endings:
        return None
    suffix, times = endings.most_common(1)[0]
    return suffix if times >= 2 and times * 2 >= len([title for title in titles if title]) else None


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
    if report.out_of_scope:
        notices.append(
            f"{count(report.out_of_scope, 'link')} on the site not followed: include, exclude or no_parent left "
            "them out."
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


def _examples(urls: Sequence[str]) -> str:
    shown = ", ".join(urls[:_NAMED_FAILURES])
    return shown if len(urls) <= _NAMED_FAILURES else f"{shown} and {len(urls) - _NAMED_FAILURES} more"


def _failure_examples(failures: Sequence[dict[str, str | None]]) -> str:
    shown = "; ".join(f"{f['url']} ({f['reason']})" for f in failures[:_NAMED_FAILURES])
    more = len(failures) - _NAMED_FAILURES
    return shown if more <= 0 else f"{shown}; and {more} more"


def size(structured: dict[str, Any]) -> int:
    """The characters of a structured result as the output cap counts them (its JSON)."""
    return len(json.dumps(structured, ensure_ascii=False))


def bounded_report(report: Report, cap: int) -> dict[str, Any]:
    """The report as structured content: each list cut to :data:`LISTED` entries (fewer if it would
    take more than half of ``cap``), with ``<list>_total`` counting them all."""
    whole = report.to_dict()
    totals = {f"{name}_total": len(whole[name]) for name in _LISTS}
    shown = LISTED
    while True:
        bounded = {**whole, **totals, **{name: whole[name][:shown] for name in _LISTS}}
        if shown == 0 or size(bounded) <= cap // 2:
            return bounded
        shown //= 2


def result(output: Output, options: ServerOptions, cursors: Cursors, *, start: int = 0, key: str | None = None
           ) -> CallToolResult:
    """The part of ``output`` from line ``start`` that fits the output cap, with its structured
    content: the listing, then the summary and (in the first part) the notices; a listing cut at the
    cap ends with a notice naming the cursor of the next part (``key``: the output's, once kept)."""
    budget = options.max_output_chars - size(output.structured)
    lines = output.lines
    notices = output.notices if start == 0 else []
    tail = "\n".join(["", "", output.summary, *(f"Note: {notice}" for notice in notices)])
    shown = lines[start:]
    header = []
    if start and shown[0].startswith(" "):
        # A page's matches continue here: name the page again.
        header = [next(line for line in reversed(lines[:start]) if not line.startswith(" ")) + " (continued)"]
    end = len(lines)
    if len("\n".join(header + shown)) + len(tail) > budget:
        if key is None:
            key = cursors.keep(output)
        cut = _cut_notice(output, options, key, start)
        room = budget - len(tail) - len(cut(len(lines), len(lines))) - 1 - sum(len(line) + 1 for line in header)
        used = 0
        kept = []
        for line in shown:
            used += len(line) + 1
            if used > room:
                break
            kept.append(line)
        # At least one line of the listing per part, so that a cursor always moves on: a line
        # longer than the room is cut, not the notice after it.
        shown = kept or [_shortened(shown[0], room)]
        end = start + len(shown)
        tail = f"{tail}\n{cut(end, len(lines))}"
    text = "\n".join(header + shown) + tail if header or shown else tail.lstrip("\n")
    return CallToolResult(content=[TextContent(type="text", text=text[:budget])], structured_content=output.structured)


def _shortened(line: str, room: int) -> str:
    marker = " […line cut]"
    return line if len(line) <= room else line[: max(room - len(marker), 0)] + marker


def _cut_notice(output: Output, options: ServerOptions, key: str | None, start: int) -> Any:
    cap = options.max_output_chars
    narrow = f"narrow the request ({output.narrow})"

    def notice(end: int, total: int) -> str:
        shown = f"showing {output.unit} {start + 1}-{end} of {total}"
        head = f"Note: output cut at this server's limit of {cap} characters: {shown}."
        if key is None:
            return f"{head} The rest is too large to keep for a cursor: {narrow} to see it."
        return (f"{head} For the next part, call {output.tool} with cursor=\"{key}-{end}\" (no other arguments "
                f"needed); or {narrow}.")

    return notice


def page_text(content: str, start: int, length: int, budget: int, notes: list[str], url: str) -> tuple[str, int]:
    """Up to ``length`` characters of ``content`` from ``start`` and the notices ``notes``, in
    ``budget`` characters; and where the part ends. A part that ends before the content does
    ends with a notice naming the ``start_index`` that continues."""

    def cut(end: int) -> str:
        return (f"Note: the content is cut at character {end} of {len(content)}. For the next part, call "
                f"web_fetch with url={json.dumps(url)} and start_index={end}.")

    tail = "".join(f"\n{note}" for note in notes)
    if len(content) - start <= length and len(content) - start + len(tail) + 1 <= budget:
        end = len(content)
    else:
        end = start + max(1, min(length, budget - len(tail) - len(cut(len(content))) - 2))
        tail = f"{tail}\n{cut(end)}"
    part = content[start:end]
    text = f"{part}\n{tail}" if part and tail else part or tail.lstrip("\n")
    return text[:budget], end


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


# What would change a seed failure that no server option lets through, by its kind.
_ADVICE = {
    "dns": "check the URL's host name",
    "refused": "nothing listens at that host and port: check the URL",
    "timeout": "the site did not answer in time: try again later",
    "network": "the connection broke: try again later",
    "robots": "try again later (this server obeys robots.txt and could not read it)",
}


def seed_error(exc: SeedError) -> str:
    """The tool error for a seed that could not be fetched, naming this server's option that
    would let it through, else what the model can do."""
    message = Failed(exc.kind, exc.reason, exc.fix).seed_message(exc.url, MCP)
    advice = _ADVICE.get(exc.kind)
    return message if exc.fix is not None or advice is None else f"{message}; {advice}"


# pydantic's error types, as what the value must be.
_TYPES = {
    "int": "a whole number", "float": "a number", "bool": "true or false", "string": "a string",
}


def argument_errors(error: ValidationError, options: ServerOptions) -> str:
    """The one line a call whose arguments do not fit the tool's schema gets, naming each parameter
    as the model gave it and, for a value above a maximum, the server option that sets it."""
    problems = []
    for detail in error.errors():
        name = ".".join(str(part) for part in detail["loc"])
        value = detail.get("input")
        given = f"{name}={json.dumps(value)}"
        kind = detail["type"]
        bounds = detail.get("ctx") or {}
        if kind == "missing":
            problems.append(f"missing {name}")
        elif kind == "less_than_equal":
            limit = options.limit(name)
            if limit is not None:
                problems.append(f"{given} is above this server's limit of {limit[0]:g} (sitewalk-mcp {limit[1]})")
            else:
                problems.append(f"{given} is above the limit of {bounds['le']}")
        elif kind in ("greater_than_equal", "greater_than"):
            sign = ">=" if kind == "greater_than_equal" else ">"
            problems.append(f"{given} must be {sign} {bounds.get('ge', bounds.get('gt'))}")
        elif kind == "string_too_short":
            problems.append(f"{name} is empty")
        elif kind == "string_pattern_mismatch" and name == "render":
            if options.render:
                problems.append(f"{given} must be never, always or auto")
            else:
                problems.append(f'{given}: this server runs no browser (sitewalk-mcp --no-render); give render="never"')
        elif kind.split("_")[0] in _TYPES:
            problems.append(f"{given} must be {_TYPES[kind.split('_')[0]]}")
        else:
            problems.append(f"{given}: {detail['msg']}")
    return "; ".join(problems)
