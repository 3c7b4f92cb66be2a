"""``sitewalk-mcp``: the server's options from flags and the environment; stdio transport."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from sitewalk.config import argument, parse_bool
from sitewalk.exceptions import SitewalkError
from sitewalk.guard import parse_networks
from sitewalk.mcp.options import ServerOptions
from sitewalk.mcp.server import build_server

__all__ = ["main"]

_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


# Numeric options: (ServerOptions field, type, the walk argument it sets or caps, what it is).
# Each is --FIELD-NAME or SITEWALK_MCP_FIELD_NAME; the defaults are ServerOptions', the bounds
# the walk argument's.
_NUMBERS: tuple[tuple[str, type, str | None, str], ...] = (
    ("delay", float, "delay", "seconds between the requests of a walk"),
    ("max_depth", int, "max_depth", "largest max_depth a call may ask for"),
    ("max_pages", int, "max_pages", "largest max_pages a call may ask for"),
    ("max_deadline", float, "deadline", "largest deadline (seconds) a call may ask for"),
    ("max_bytes", int, "max_bytes", "largest max_bytes a call may ask for"),
    ("max_matches", int, "max_matches", "largest max_matches a web_grep call may ask for"),
    ("max_concurrency", int, "concurrency", "largest concurrency (requests in flight) a call may ask for"),
    ("max_output_chars", int, None, "most characters a call returns, text and structured content"),
    ("cursor_memory", int, None, "most characters of cut outputs the server keeps for their cursors"),
)
# The smallest values of the options that bound no walk argument: an output cap with room for the
# summary and the notices; a cursor memory of 0 keeps nothing (a cut output then has no cursor).
_MINIMA = {"max_output_chars": 1000, "cursor_memory": 0}


def _parser() -> argparse.ArgumentParser:
    env = os.environ.get
    defaults = ServerOptions()
    parser = argparse.ArgumentParser(
        prog="sitewalk-mcp",
        description="Serve sitewalk's web_fetch, web_crawl and web_grep tools over MCP (stdio). Every option "
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
    parser.add_argument(
        "--render",
        action=argparse.BooleanOptionalAction,
        default=parse_bool(env("SITEWALK_MCP_RENDER", "true")) is not False,
        help="let the tools' render parameter run pages in Chromium (env SITEWALK_MCP_RENDER; default: true); "
        "--no-render keeps every walk to the HTML as served",
    )
    for field, kind, walk_argument, what in _NUMBERS:
        name = f"SITEWALK_MCP_{field.upper()}"
        default = getattr(defaults, field)
        parser.add_argument(
            "--" + field.replace("_", "-"),
            type=_bounded(kind, walk_argument, _MINIMA.get(field)),
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


def _bounded(kind: type, walk_argument: str | None, minimum: int | None) -> Any:
    def convert(text: str) -> Any:
        value = kind(text)
        if walk_argument is None:
            if minimum is not None and value < minimum:
                raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {text}")
            return value
        try:
            argument(walk_argument).check(walk_argument, value)
        except SitewalkError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return value

    convert.__name__ = kind.__name__  # argparse names the type in its "invalid int value" message
    return convert


def _options(argv: Sequence[str] | None) -> tuple[ServerOptions, str]:
    parser = _parser()
    args = parser.parse_args(argv)
    robots = args.robots
    if robots is None:
        text = os.environ.get("ROBOTSTXT_OBEY", "true")
        robots = parse_bool(text)
        if robots is None:
            parser.error(f"ROBOTSTXT_OBEY must be true or false, got {text.strip().lower()!r}")
    try:
        parse_networks(args.allow_networks, given_as="--allow-networks (env SITEWALK_GUARD_ALLOW_NETWORKS)")
    except SitewalkError as exc:
        parser.error(str(exc))
    numbers = {field: getattr(args, field) for field, _, _, _ in _NUMBERS}
    options = ServerOptions(allow_networks=args.allow_networks, robots=robots, user_agent=args.user_agent, render=args.render,
                            **numbers)
    return options, args.log_level


def main(argv: Sequence[str] | None = None) -> None:
    """Run the server on stdin/stdout until the client closes the connection."""
    options, log_level = _options(argv)
    # stdout carries the protocol: every log line, Scrapy's and warnings included, goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.captureWarnings(True)
    build_server(options).run("stdio")

