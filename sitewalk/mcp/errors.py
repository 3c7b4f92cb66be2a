"""The one-line tool errors of a call the server cannot make, naming what would change the outcome."""

from __future__ import annotations

import difflib
import json
from typing import TYPE_CHECKING

from sitewalk.failures import Failed
from sitewalk.mcp.options import MCP

if TYPE_CHECKING:
    from pydantic import ValidationError

    from sitewalk.exceptions import SeedError
    from sitewalk.mcp.options import ServerOptions

__all__ = ["argument_errors", "seed_error", "unknown_parameter"]

# What would change a seed failure that no server option lets through, by its kind.
_ADVICE = {
    "dns": "check the URL's host name",
    "refused": "nothing listens at that host and port: check the URL",
    "timeout": "the site did not answer in time: try again later",
    "network": "the connection broke: try again later",
    "robots": "try again later (this server obeys robots.txt and could not read it)",
}
# pydantic's error types, as what the value must be.
_TYPES = {
    "int": "a whole number", "float": "a number", "bool": "true or false", "string": "a string",
}


def seed_error(exc: SeedError) -> str:
    """The tool error for a seed that could not be fetched, naming this server's option that
    would let it through, else what the model can do."""
    message = Failed(exc.kind, exc.reason, exc.fix).seed_message(exc.url, MCP)
    advice = _ADVICE.get(exc.kind)
    return message if exc.fix is not None or advice is None else f"{message}; {advice}"


def unknown_parameter(tool: str, name: str, known: list[str]) -> str:
    """The tool error for an argument ``tool`` does not take: the parameter meant, or those it takes."""
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"did you mean {close[0]}?" if close else f"{tool} takes {', '.join(known)}"
    return f"unknown parameter {name!r} ({hint})"


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
                most = int(limit[0]) if float(limit[0]).is_integer() else limit[0]
                problems.append(f"{given} is above this server's limit of {most} (sitewalk-mcp {limit[1]})")
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
        elif kind == "value_error":
            problems.append(f"{given}: {bounds['error']}")
        elif kind.split("_")[0] in _TYPES:
            problems.append(f"{given} must be {_TYPES[kind.split('_')[0]]}")
        else:
            problems.append(f"{given}: {detail['msg']}")
    return "; ".join(problems)
