"""``sitewalk-mcp``: the server's options from flags and the environment; stdio transport."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from sitewalk.config import argument
from sitewalk.configvalues import parse_bool
from sitewalk.exceptions import SitewalkError
from sitewalk.guard import parse_networks
from sitewalk.mcp.options import OPTIONS, Option, ServerOptions
from sitewalk.mcp.server import build_server

__all__ = ["main"]

_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _parser() -> argparse.ArgumentParser:
    env = os.environ.get
    defaults = ServerOptions()
    parser = argparse.ArgumentParser(
        prog="sitewalk-mcp",
        description="Serve sitewalk's web_fetch, web_crawl and web_grep tools over MCP (stdio). Every option "
        "can also be set by the environment variable named in its help.",
    )
    for spec in OPTIONS.values():
        default = getattr(defaults, spec.field)
        if isinstance(default, bool):
            # Read from the environment after parsing: a bad word there is an error naming the variable.
            parser.add_argument(spec.flag, action=argparse.BooleanOptionalAction, default=None,
                                help=f"{spec.help} (env {spec.env})")
        elif default is None:
            parser.add_argument(spec.flag, default=env(spec.env), metavar=spec.metavar,
                                help=f"{spec.help} (env {spec.env})")
        else:
            parser.add_argument(spec.flag, type=_bounded(type(default), spec), default=env(spec.env, str(default)),
                                help=f"{spec.help} (env {spec.env}; default {default})")
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=_LOG_LEVELS,
        default=env("SITEWALK_MCP_LOG_LEVEL", "WARNING"),
        help="level of the log written to stderr (env SITEWALK_MCP_LOG_LEVEL; default WARNING)",
    )
    return parser


def _bounded(kind: type, spec: Option) -> Any:
    def convert(text: str) -> Any:
        value = kind(text)
        if spec.bounds is None:
            if spec.minimum is not None and value < spec.minimum:
                raise argparse.ArgumentTypeError(f"must be >= {spec.minimum}, got {text}")
            return value
        try:
            argument(spec.bounds).check(spec.bounds, value)
        except SitewalkError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return value

    convert.__name__ = kind.__name__  # argparse names the type in its "invalid int value" message
    return convert


def _options(argv: Sequence[str] | None) -> tuple[ServerOptions, str]:
    parser = _parser()
    args = parser.parse_args(argv)
    defaults = ServerOptions()
    for spec in OPTIONS.values():
        if isinstance(getattr(defaults, spec.field), bool) and getattr(args, spec.field) is None:
            text = os.environ.get(spec.env, "true")
            value = parse_bool(text)
            if value is None:
                parser.error(f"{spec.env} must be true or false, got {text.strip().lower()!r}")
            setattr(args, spec.field, value)
    try:
        parse_networks(args.allow_networks, given_as=OPTIONS["allow_networks"].given())
    except SitewalkError as exc:
        parser.error(str(exc))
    options = ServerOptions(**{field: getattr(args, field) for field in OPTIONS})
    return options, args.log_level


def main(argv: Sequence[str] | None = None) -> None:
    """Run the server on stdin/stdout until the client closes the connection."""
    options, log_level = _options(argv)
    # stdout carries the protocol: every log line, Scrapy's and warnings included, goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.captureWarnings(True)
    build_server(options).run("stdio")
