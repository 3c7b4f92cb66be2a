"""`scrapy crawl` for sitewalk: one clear line, no traceback, for bad arguments and a failed seed.

The ``sitewalk`` command (:mod:`sitewalk.cli`) runs its walk through the same :class:`Command`.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import logging
import os
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from scrapy.commands import ScrapyHelpFormatter
from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.crawler import AsyncCrawlerProcess, CrawlerProcess
from scrapy.exceptions import UsageError
from scrapy.utils.ossignal import install_shutdown_handlers, signal_names
from twisted.internet.defer import Deferred

from sitewalk import jobs
from sitewalk._compat import option_strings
from sitewalk.config import WalkConfig, arguments
from sitewalk.configchecks import check_run, check_settings
from sitewalk.exceptions import SitewalkError
from sitewalk.extensions import WalkReport
from sitewalk.hints import CLI, COMMAND, SCRAPYD, Surface
from sitewalk.items import count
from sitewalk.linkreport import http_reason

if TYPE_CHECKING:
    from collections.abc import Awaitable, Sequence

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings, Settings
    from twisted.python.failure import Failure

    from sitewalk.state import Walk

logger = logging.getLogger(__name__)

# The exit statuses of a walk: 0 it ran; 1 the seed could not be fetched or answered 4xx/5xx; 2 bad
# input (nothing started); with fail_on_broken, 3 broken links found, 4 a budget stopped the check
# before it covered the site (broken links too: 3). The sitewalk command stopped by a signal: 128 + its
# number (130 Ctrl-C, 143 SIGTERM), after everything is written.
EXIT_SEED = 1
EXIT_BROKEN = 3
EXIT_INCOMPLETE = 4

# Scrapy's loggers whose INFO lines quiet_scrapy_info keeps out of a walk's log.
_QUIET_AT_INFO = (
    "scrapy.utils.log", "scrapy.addons", "scrapy.middleware", "scrapy.crawler", "scrapy.core.engine",
    "scrapy.extensions.logstats", "scrapy.extensions.feedexport", "scrapy.statscollectors",
)


class Command(ScrapyCrawlCommand):
    """Validates the walk's ``-a`` arguments before anything starts and exits non-zero when the
    seed could not be fetched (exit status 2 for bad input, 1 for a failed seed; with
    ``fail_on_broken``, :data:`EXIT_BROKEN` when the report lists broken links).

    Ctrl-C or SIGTERM (scrapyd's cancel) stops the walk after the page in flight, with the close
    reason ``interrupted``; a second one stops the process at once. ``-h`` lists the walk's arguments.
    """

    # How messages spell the input to change: scrapy crawl's -a/-s, or the sitewalk command's options.
    surface: Surface = CLI
    # Whether a walk stopped by SIGINT or SIGTERM exits 128 + the signal's number (the sitewalk
    # command, as shells and CI expect); scrapy crawl keeps Scrapy's 0.
    exit_on_signal = False
    # The option strings scrapy crawl knows (add_options).
    _flags: list[str]

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        # The walk's arguments, one a line: argparse would run the epilog's lines together.
        parser.formatter_class = _HelpFormatter
        parser.epilog = "Arguments of the sitewalk spider (-a NAME=VALUE):\n" + _walk_arguments_help()
        self._flags = flags(parser)

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        """As Scrapy's, except that a bad option is one line, without the usage block, before
        anything starts: an option it does not know (Scrapy would take it for a second spider),
        a feed format that -o or -O does not name, an -a or -s that is not NAME=VALUE."""
        assert self.settings is not None
        if len(args) > 1:
            given = next((arg for arg in args if arg.startswith("-")), args[1])
            hint = _NOT_HERE.get(given.split("=", 1)[0])
            _refuse(f"unrecognized argument {given!r} ({hint})" if hint else unrecognized(given, self._flags, "scrapy crawl sitewalk -h"))
        try:
            super().process_options(args, opts)
        except UsageError as exc:
            outputs = [("-o", output) for output in opts.output or []] + [("-O", output) for output in opts.overwrite_output or []]
            _refuse(format_error(self.settings, outputs) or str(exc))
        try:
            # Before Scrapy reads any of them (LOG_LEVEL as the crawler process starts).
            check_settings(self.settings, SCRAPYD if "_job" in opts.spargs else self.surface)
        except SitewalkError as exc:
            _refuse(str(exc))
        quiet_scrapy_info(self.settings)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args != ["sitewalk"]:
            super().run(args, opts)
            return
        assert self.settings is not None
        # A scrapyd job (scrapyd gives it _job) takes its arguments and settings as parameters.
        surface = SCRAPYD if "_job" in opts.spargs else self.surface
        # Before the crawler exists: nothing is requested and no feed file is opened (or truncated).
        try:
            config = WalkConfig.from_mapping(opts.spargs, surface)
            check_run(config, self.settings, surface)
            jobs.check_jobdir(self.settings, config)
        except SitewalkError as exc:
            print(f"sitewalk: error: {exc}", file=sys.stderr)
            self.exitcode = 2
            return
        assert self.crawler_process is not None
        crawler = self.crawler_process.create_crawler("sitewalk")
        # The spider takes the config checked here rather than parsing the arguments again (a
        # scrapyd job's id too, which names its outputs).
        job = {"_job": opts.spargs["_job"]} if "_job" in opts.spargs else {}
        refusal = _Refusal(self.crawler_process.crawl(crawler, config=config, surface=surface, **job))
        interrupt = _Interrupt(crawler)
        interrupt.install_when_running()
        self.crawler_process.start(install_signal_handlers=False)
        walk = getattr(crawler.spider, "walk", None)
        if refusal.error is not None:
            print(f"sitewalk: error: {refusal.error}", file=sys.stderr)
            self.exitcode = 2
        elif self.exit_on_signal and interrupt.signum is not None:
            self.exitcode = 128 + interrupt.signum
        elif walk is None or self.crawler_process.bootstrap_failed:
            self.exitcode = EXIT_SEED
        elif (message := _seed_failed(walk, surface)) is not None:
            if crawler.settings.get("LOG_FILE"):
                # A log file (scrapyd's job log) would not show the line printed to stderr.
                logger.error("sitewalk: error: %s", message)
            print(f"sitewalk: error: {message}", file=sys.stderr)
            self.exitcode = EXIT_SEED
        elif config.fail_on_broken:
            self.exitcode = _check_status(crawler, config, surface)


# Options of the sitewalk command that scrapy crawl spells otherwise.
_NOT_HERE = {"-t": "scrapy crawl names a feed's format after a colon: -o FILE:FORMAT"}


def _refuse(message: str) -> NoReturn:
    """Bad input before anything started: the one line that says it, exit status 2."""
    print(f"sitewalk: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def flags(parser: argparse.ArgumentParser) -> list[str]:
    """The option strings ``parser`` knows."""
    return option_strings(parser)


def unrecognized(given: str, known: Sequence[str], help_command: str) -> str:
    """Why the argument ``given`` is refused: the option it comes closest to among ``known``, else
    the command that lists them (``help_command``)."""
    name = given.split("=", 1)[0]
    close = difflib.get_close_matches(name, known, n=1) if name.startswith("-") else []
    return f"unrecognized argument {given!r} ({f'did you mean {close[0]}?' if close else f'{help_command} lists the options'})"


def format_error(settings: BaseSettings, outputs: Sequence[tuple[str, str]], given: str | None = None) -> str | None:
    """Which output names no feed format — ``outputs`` are (option, value) pairs, ``given`` a
    format for every output (the sitewalk command's -t) — and how to name one; None if all do."""
    formats = [name for name, exporter in settings.getwithbase("FEED_EXPORTERS").items() if exporter]
    known = ", ".join(formats)
    if given and given not in formats:
        return f"-t {given!r} is not a feed format (give one of {known})"
    for option, output in outputs:
        _, colon, named = output.rpartition(":")
        if colon and named and "/" not in named:
            told = f"{named!r} after the colon is not a feed format"
        elif suffix := Path(output).suffix:
            told = f"its extension {suffix} names no feed format"
        else:
            told = "it has no extension to name its feed format"
        if named not in formats and Path(output).suffix[1:] not in formats:
            return f"{option} {output!r}: {told} (end it with .jsonl, .json, .csv or .xml, or give FILE:FORMAT with one of {known})"
    return None


def _seed_failed(walk: Walk, surface: Surface) -> str | None:
    """The line that says the seed failed: it could not be fetched, or it answered 4xx or 5xx (its
    page is an item and in the report all the same); None when it did not."""
    if walk.results.seed_error is not None:
        url, failed = walk.results.seed_error
        return failed.seed_message(url, surface)
    pages = walk.results.links.pages
    if pages and pages[0].depth == 0 and pages[0].status >= 400:
        seed = pages[0]
        return f"{surface.name('seed')} {seed.url} answered {http_reason(seed.status)}"
    return None


def _check_status(crawler: Crawler, config: WalkConfig, surface: Surface) -> int:
    """The exit status of a walk with fail_on_broken, said in the log: broken links (3) before a
    check that a budget stopped early (4, unless allow_incomplete)."""
    reporter = crawler.get_extension(WalkReport)
    if reporter is None or reporter.report is None:
        return 0
    broken = len(reporter.report.broken_links)
    gap = None if config.allow_incomplete else reporter.incomplete
    if broken:
        also = f"; the check is {gap.short}" if gap is not None else ""
        logger.error("sitewalk: %s%s: exit status %d (fail_on_broken)", count(broken, "broken link"), also, EXIT_BROKEN)
        return EXIT_BROKEN
    if gap is not None:
        logger.error("sitewalk: the check is %s: exit status %d (fail_on_broken); %s, or give %s to accept it",
                     gap.short, EXIT_INCOMPLETE, gap.fix, surface.argument("allow_incomplete", True))
        return EXIT_INCOMPLETE
    return 0


def run_walk(settings: Settings, spargs: dict[str, Any]) -> int:
    """Run the walk ``spargs`` describes as ``scrapy crawl sitewalk`` does, with ``settings``
    (the project's and the command line's); returns the exit status."""
    command = Command()
    command.surface = COMMAND
    command.exit_on_signal = True
    command.settings = settings
    quiet_scrapy_info(settings)
    # As scrapy.cmdline picks the crawler process for the configured reactor.
    asyncio_reactor = settings.get("TWISTED_REACTOR") == "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
    if (asyncio_reactor and not settings.getbool("FORCE_CRAWLER_PROCESS")) or not settings.getbool("TWISTED_REACTOR_ENABLED"):
        command.crawler_process = AsyncCrawlerProcess(settings)
    else:
        command.crawler_process = CrawlerProcess(settings)
    command.run(["sitewalk"], argparse.Namespace(spargs=spargs))
    return command.exitcode


def quiet_scrapy_info(settings: BaseSettings) -> None:
    """At LOG_LEVEL INFO (the default), keep Scrapy's INFO lines out of the log: they tell a
    person nothing about the walk (start-up, versions, components, settings, its own progress,
    the stored feed, the stats); its warnings and errors stay. At DEBUG the log has them all.

    A filter on each logger, not its level: Scrapy's logging set-up resets the levels of existing
    loggers, and it runs after this (when the crawler process is made).
    """
    level = settings.get("LOG_LEVEL")
    if (logging.getLevelName(level.upper()) if isinstance(level, str) else level) == logging.INFO:
        for name in _QUIET_AT_INFO:
            logging.getLogger(name).addFilter(_warnings_only)


def _warnings_only(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING


def value_name(name: str, kind: type) -> str:
    """What a walk argument's value is called in help: URL, N, SECONDS, true|false or its name."""
    if name == "seed":
        return "URL"
    return {int: "N", float: "SECONDS", bool: "true|false"}.get(kind, name.upper())


def _walk_arguments_help(width: int = 100, column: int = 30) -> str:
    lines = []
    for name, kind, default, spec in arguments():
        head = f"  -a {name}={value_name(name, kind)}"
        text = textwrap.wrap(f"{spec.help} ({'required' if default == 'required' else 'default: ' + default})", width - column)
        if len(head) >= column:
            lines.append(head)
            head = ""
        lines.append(f"{head:<{column}}{text[0]}")
        lines.extend(" " * column + more for more in text[1:])
    return "\n".join(lines) + "\n"


class _HelpFormatter(ScrapyHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Scrapy's help layout, with the description and epilog kept line by line."""


class _Refusal:
    """The SitewalkError of a component that refused to be built (a setting it checks in
    ``from_crawler``): the crawl ends before any request, and the error is taken from it here, so
    that neither Twisted nor asyncio logs it as an unhandled error with its traceback."""

    def __init__(self, crawl: Awaitable[None]) -> None:
        self.error: SitewalkError | None = None
        if isinstance(crawl, Deferred):  # CrawlerProcess
            crawl.addErrback(self._failed)
        elif isinstance(crawl, asyncio.Future):  # AsyncCrawlerProcess
            crawl.add_done_callback(self._done)

    def _failed(self, failure: Failure) -> Failure | None:
        if isinstance(failure.value, SitewalkError):
            self.error = failure.value
            return None
        return failure  # logged as before

    def _done(self, crawl: asyncio.Future[None]) -> None:
        error = None if crawl.cancelled() else crawl.exception()
        if isinstance(error, SitewalkError):
            self.error = error
        elif error is not None:
            # Asking for it kept asyncio from logging it: logged here instead.
            logger.error("The walk failed", exc_info=error)


class _Interrupt:
    """The process's SIGINT and SIGTERM handlers: the first stops the walk, the second the process."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        # The first signal received, if any.
        self.signum: int | None = None

    def install_when_running(self) -> None:
        _reactor().addSystemEventTrigger("after", "startup", install_shutdown_handlers, self.first)

    def first(self, signum: int, _: Any) -> None:
        self.signum = signum
        install_shutdown_handlers(self.second)
        _reactor().callFromThread(self._stop_walk, signum)

    def second(self, signum: int, _: Any) -> None:
        # At once, whatever the reactor is doing (a component may be holding it), as Scrapy's
        # second signal does: the feeds are written unbuffered and the JOBDIR journal is whole up
        # to its last line, so nothing written is lost. Only os.write is safe in a handler.
        os.write(2, f"sitewalk: received {signal_names[signum]} twice: stopping now\n".encode())
        os._exit(128 + signum)

    # Logging cannot happen in a signal handler (the stream may be mid-write): these run on the reactor.
    def _stop_walk(self, signum: int) -> None:
        logger.info("Received %s: stopping the walk after the page in flight (send again to stop now)", signal_names[signum])
        walk = getattr(self.crawler.spider, "walk", None)
        if walk is not None:
            walk.stop("interrupted", left_unfetched=True)


def _reactor() -> Any:
    """The installed reactor (imported late: the crawler process installs it)."""
    from twisted.internet import reactor

    return reactor
