"""The notices after a listing: what the model did not get, each with what would change it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sitewalk.items import Report, count
from sitewalk.mcp.options import OPTIONS

if TYPE_CHECKING:
    from sitewalk.mcp.options import ServerOptions

__all__ = ["report_notices"]

# How many failures a notice names before it refers to the report for the rest.
_NAMED_FAILURES = 3


def report_notices(report: Report, budgets: dict[str, Any], options: ServerOptions) -> list[str]:
    """What the model should know about what it did not get, each with what would change it
    (``budgets``: the call's arguments, by the tools' names)."""
    notices = []
    if report.stopped:
        notices.append(_stop_notice(report, budgets, options))
    if report.robots_skipped:
        notices.append(
            f"{count(len(report.robots_skipped), 'page')} not fetched because the site's robots.txt disallows "
            f"them ({_examples(report.robots_skipped)}). This server obeys robots.txt; its operator can "
            f"start it with {OPTIONS['robots'].given(False)} to fetch them."
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
            f"{_failure_examples(refused)}. The server's operator can allow a network with "
            f"{OPTIONS['allow_networks'].given()}."
        )
    if failed:
        notices.append(
            f"{count(len(failed), 'page')} could not be fetched: {_failure_examples(failed)}. "
            "Failures do not count toward max_pages; the report's failures list has them all."
        )
    return notices


def _stop_notice(report: Report, budgets: dict[str, Any], options: ServerOptions) -> str:
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
