"""``sitewalk URL``: the walk as a command of its own, run from any directory (no project to name)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, NoReturn

from scrapy.exceptions import UsageError
from scrapy.settings import Settings
from scrapy.utils.conf import arglist_to_dict, feed_process_params_from_cli

from sitewalk._compat import import_itemadapter_without_pydantic
from sitewalk.commands.crawl import flags, format_error, run_walk, unrecognized, value_name
from sitewalk.config import SETTINGS, argument, arguments
from sitewalk.configchecks import check_settings
from sitewalk.exceptions import SitewalkError
from sitewalk.hints import COMMAND, option

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main"]

_DESCRIPTION = (
    "Walk one web site breadth-first from URL: same origin only, every page once, robots.txt obeyed, "
    "inside the budgets below. Items go to the -o file(s), or as JSON lines to stdout; progress and "
    "the summary go to stderr. Exit status: 0 when the walk ran (whatever stopped it); 1 when the seed could "
    "not be fetched or answered 4xx/5xx; 2 for invalid arguments or settings (nothing is requested or written); "
    "3 with --fail-on-broken when any link is broken; 4 with --fail-on-broken when a budget (--max-pages, "
    "--max-bytes, --deadline, the link checks) stopped the check before it covered the site (incomplete; "
    "--allow-incomplete accepts it); 130 and 143 when Ctrl-C or SIGTERM stopped the walk (after everything is written)."
)


# Options that set a Scrapy setting (sitewalk.config.SETTINGS: a config file may give them too):
# name -> (metavar (None: a --NAME/--no-NAME switch), help).
_SETTING_OPTIONS: dict[str, tuple[str | None, str]] = {
    "allow_networks": ("CIDRS", "comma-separated networks the address guard lets the walk reach besides public "
                       "addresses, e.g. 10.0.0.0/8 for an intranet site; default: public addresses only"),
    "robots": (None, "obey robots.txt; default: true; --no-robots fetches pages it disallows"),
    "user_agent": ("TEXT", "the User-Agent header of every request"),
}


class _Parser(argparse.ArgumentParser):
    """argparse, except that an error is the one line that says it (the usage is ``--help``'s)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="sitewalk", description=_DESCRIPTION, allow_abbrev=False)
    parser.add_argument(
        "seed", nargs="?", metavar="URL", help=f"{argument('seed').help} (required, here or in --config)"
    )
    walk = parser.add_argument_group("walk arguments (the same as scrapy crawl sitewalk's -a NAME=VALUE)")
    for name, kind, default, spec in arguments():
        if name == "seed":
            continue
        text = f"{spec.help} (default: {default})"
        if kind is bool and name.startswith("no_"):
            # A negative flag already (--no-parent): no --no-no-parent beside it.
            walk.add_argument(option(name), dest=name, action="store_const", const=True, default=None, help=text)
        elif kind is bool:
            walk.add_argument(option(name), dest=name, action=argparse.BooleanOptionalAction, default=None, help=text)
        else:
            walk.add_argument(option(name), dest=name, metavar=value_name(name, kind), help=text)
    output = parser.add_argument_group("output and Scrapy settings")
    output.add_argument(
        "-o", "--output", metavar="FILE", action="append", default=[],
        help="write the items to FILE (replacing it), in the Scrapy feed format its extension names "
        "(.jsonl, .json, .csv, .xml, ...) or FILE:FORMAT; may be repeated; - is stdout (default: JSON lines on stdout)",
    )
    output.add_argument("-t", "--format", metavar="FORMAT", help="feed format of every output, whatever its extension (jsonlines, json, csv, xml, ...)")
    output.add_argument(
        "--jobdir", metavar="DIR",
        help="keep the walk's state in DIR: stop it (Ctrl-C once, or SIGTERM) and run the same command again to resume it",
    )
    # The options sitewalk-mcp's operator has (sitewalk.mcp.options), with the same names.
    for name, (metavar, text) in _SETTING_OPTIONS.items():
        setting = SETTINGS[name][0]
        text = f"{text}; also {name} in --config's file"
        if metavar is None:
            output.add_argument(option(name), dest=name, action=argparse.BooleanOptionalAction, default=None,
                                help=f"{text} (-s {setting})")
        else:
            output.add_argument(option(name), dest=name, metavar=metavar, help=f"{text} (-s {setting})")
    output.add_argument(
        "-s", "--set", metavar="NAME=VALUE", action="append", default=[],
        help="set any Scrapy setting, e.g. -s SITEWALK_GUARD_ALLOW_NETWORKS=10.0.0.0/8 or -s LOG_LEVEL=DEBUG (may be repeated)",
    )
    return parser


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    options, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.error(unrecognized(unknown[0], flags(parser), "sitewalk --help"))
    return options


def _settings(parser: argparse.ArgumentParser, options: argparse.Namespace) -> Settings:
    settings = Settings()
    settings.setmodule("sitewalk.settings", priority="project")
    try:
        given = arglist_to_dict(options.set)
    except ValueError:
        parser.error("invalid -s value: use -s NAME=VALUE")
    for name, value in given.items():
        try:
            settings.set(name, value, priority="cmdline")
        except ValueError:  # a setting of Scrapy's that is a table takes JSON (FEEDS)
            parser.error(f"-s {name}={value}: {name} takes a JSON object (e.g. -s {name}={{}})")
    try:
        check_settings(settings, COMMAND)
    except SitewalkError as exc:
        parser.error(str(exc))
    if options.jobdir:
        settings.set("JOBDIR", options.jobdir, priority="cmdline")
    for name in _SETTING_OPTIONS:
        if getattr(options, name) is not None:
            settings.set(SETTINGS[name][0], getattr(options, name), priority="cmdline")
    # Without -o, stdout, unless -s FEEDS=... names the feeds.
    outputs = options.output or ([] if settings.getdict("FEEDS") else ["-"])
    if options.format:
        outputs = [f"{output}:{options.format}" for output in outputs]
    elif outputs == ["-"]:
        outputs = ["-:jsonlines"]
    try:
        # Scrapy's own reading of -o: the format from the extension or FILE:FORMAT, - for stdout.
        feeds = feed_process_params_from_cli(settings, outputs)
    except UsageError as exc:
        told = format_error(settings, [("-o", output) for output in options.output], options.format)
        parser.error(told or str(exc))
    for uri, feed in feeds.items():
        # A file is replaced (a resumed walk appends to it: the add-on says so); stdout cannot be.
        if uri != "stdout:":
            feed.setdefault("overwrite", True)
    settings.set("FEEDS", feeds, priority="cmdline")
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    """Run one walk as ``sitewalk URL [options]``; returns the exit status."""
    # Start-up time (benchmarks/startup.py): the walk's items are sitewalk's dataclasses.
    import_itemadapter_without_pydantic()
    parser = _parser()
    options = _parse(parser, argv)
    settings = _settings(parser, options)
    spargs = {
        name: getattr(options, name)
        for name, *_ in arguments()
        if getattr(options, name) is not None
    }
    return run_walk(settings, spargs)
