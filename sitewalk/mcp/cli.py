"""``sitewalk-mcp``: the server's options from flags and the environment; stdio transport."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from sitewalk.exceptions import SitewalkError
from sitewalk.guard import parse_networks
from sitewalk.mcp.server import ServerOptions, build_server

__all__ = ["main"]

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


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

