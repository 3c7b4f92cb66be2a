"""Extensions of the walk: its clock and pace (WalkBudget), its memory across walks (WalkMemory), its
report (WalkReport), and the storage of its local feeds (FileFeedStorage); its JOBDIR journal
(WalkJournal) is in :mod:`sitewalk.journal`."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.extensions.feedexport import FeedExporter
from scrapy.extensions.feedexport import FileFeedStorage as ScrapyFileFeedStorage
from scrapy.utils.asyncio import call_later, create_looping_call
from twisted.internet.task import LoopingCall

from sitewalk import jobs
from sitewalk.failures import Failed
from sitewalk.items import Report, count
from sitewalk.linkreport import Incomplete, incomplete, write_junit
from sitewalk.memory import Memory
from sitewalk.progress import budgets_spent, progress_interval, terminal_handler
from sitewalk.spidermiddlewares import GrepMiddleware
from sitewalk.state import WalkComponent

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.robotstxt import RobotParser
    from scrapy.utils.asyncio import CallLaterResult

    from sitewalk.tickets import Ticket


logger = logging.getLogger(__name__)

__all__ = ["FileFeedStorage", "WalkBudget", "WalkFeedExporter", "WalkMemory", "WalkReport", "stopped_reason"]


class WalkBudget(WalkComponent):
    """The ledger's clock and statistics, and the walk's pace.

    The deadline counts from ``spider_opened``. A robots.txt ``Crawl-delay`` for
    ``ROBOTSTXT_USER_AGENT`` (``robots_parsed``) lengthens the delay between the walk's requests
    from the seed on (not robots.txt itself: :meth:`sitewalk.gate.Gate.slow_down`), never
    shortens it. A progress line goes to the log at each new depth and every
    ``SITEWALK_PROGRESS_INTERVAL`` seconds (default 10; 0 = only at each new depth; on a terminal
    one line in place instead, :class:`sitewalk.progress.TerminalProgress`).

    Stats, from the ledger's events: ``sitewalk/budget/pages`` (pages settled),
    ``sitewalk/budget/bytes`` (bytes charged, every kind of request).

    While the walk runs, a Twisted timer fires every second and does nothing else. Each page
    leaves two cancelled Twisted timers behind (Scrapy's download timeout and the connection
    pool's keep-alive), and the asyncio reactor drops cancelled timers only when one of its timers
    fires (``runUntilCurrent``); Scrapy's own looping calls run on asyncio's timers instead. Without
    the tick, a 20,000-page walk kept 40,000 of them to its end: 20 MB.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._ledger = self.walk.ledger
        self._ledger.listen(self._ledger_event)
        self._user_agent: str = crawler.settings.get("ROBOTSTXT_USER_AGENT") or "sitewalk"
        self._interval = progress_interval(crawler.settings, self.walk.surface)
        self._progress = create_looping_call(self._ledger.log_progress)
        self._tick = LoopingCall(_nothing)
        self._deadline: CallLaterResult | None = None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(self.robots_parsed, signal=signals.robots_parsed)

    def spider_opened(self) -> None:
        self._ledger.start_clock()
        # The deadline stops the walk when it comes, whatever the walk is waiting for.
        self._deadline = call_later(max(self._ledger.seconds_left(), 0), self._deadline_reached)
        self._tick.start(1.0, now=False)
        if self._interval > 0 and terminal_handler(self.crawler.settings) is None:
            self._progress.start(self._interval, now=False)

    def _ledger_event(self, event: str, _: object) -> None:
        if event == "settle":
            self.crawler.stats.inc_value("sitewalk/budget/pages")

    def spider_closed(self) -> None:
        self.crawler.stats.set_value("sitewalk/budget/bytes", self._ledger.bytes)
        if self._deadline is not None:
            self._deadline.cancel()
        for looping in (self._progress, self._tick):
            if looping.running:
                looping.stop()

    def _deadline_reached(self) -> None:
        self.walk.stop("deadline", left_unfetched=self.walk.gate.busy())

    def robots_parsed(self, robotparser: RobotParser) -> None:
        delay = robotparser.crawl_delay(self._user_agent)
        if delay and self.walk.gate.slow_down(delay):
            logger.info("robots.txt Crawl-delay %gs is longer than the walk's delay: using it between its requests", delay)


def _error(seed_error: tuple[str, Failed] | None) -> dict[str, str] | None:
    if seed_error is None:
        return None
    url, failed = seed_error
    return {"url": url, "kind": failed.kind, "reason": failed.reason}


def _nothing() -> None:
    """What :class:`WalkBudget`'s tick does: the reactor clears its cancelled timers when it fires."""


class WalkMemory(WalkComponent):
    """With ``state``, the walk's memory of its site (``memory``, :class:`sitewalk.memory.Memory`):
    read and locked as the walk is set up (a state damaged, of another origin or in use is refused
    then), written from ``spider_opened`` on (a walk refused before leaves it as it was), a page's
    row at each page the ledger settles (:meth:`sitewalk.ledger.Ledger.listen`), and what changed
    when it ends. NotConfigured without a state.

    Stats: ``sitewalk/state/<change>`` (pages new, changed and unchanged), ``sitewalk/state/removed``.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        config = self.walk.config
        if config.state is None:
            # Without a message: Scrapy logs NotConfigured's as a warning, on every walk without a state.
            raise NotConfigured
        self.memory = Memory(config, self.walk.surface)
        self.walk.ledger.listen(self._ledger_event)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    def spider_opened(self) -> None:
        self.memory.begin(resumed=self.walk.resumed is not None)

    def _ledger_event(self, event: str, ticket: Ticket) -> None:
        if event == "settle" and ticket.page is not None:
            self.memory.settled(ticket.number, ticket.page)
            self.crawler.stats.inc_value(f"sitewalk/state/{ticket.page.change}")
        else:
            self.memory.released(ticket.number)

    def spider_closed(self, reason: str) -> None:
        stopped = stopped_reason(reason)
        removed = len(self.memory.changes(stopped).removed)
        if removed:
            self.crawler.stats.set_value("sitewalk/state/removed", removed)
        self.memory.close(stopped)


def stopped_reason(reason: str) -> str | None:
    """The report's ``stopped`` for Scrapy's close reason."""
    return {"finished": None, "shutdown": "interrupted"}.get(reason, reason)


class WalkReport(WalkComponent):
    """Writes how the walk went when it ends: the report (``report`` argument, or beside a
    scrapyd job's items), the ``junit`` and ``html_report`` files if asked for, and the report's
    one-line summary in the log.

    ``stopped`` is Scrapy's close reason (``finish_reason``): null for ``finished``,
    ``interrupted`` for Scrapy's own ``shutdown``. ``refetched`` counts the requests that reach
    the downloader for the pages a resumed walk's damaged journal lost (:attr:`sitewalk.jobs.JobState.lost`),
    each once. Stats: ``sitewalk/budget/stopped/<reason>``, ``sitewalk/links/broken`` (the broken
    URLs of ``broken_links``), ``sitewalk/jobdir/refetched``.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._path = jobs.report_path(crawler.settings, self.walk.config.report, self.walk.job)
        self.report: Report | None = None
        # Why the walk did not cover its site, when a budget stopped it (sitewalk.linkreport.incomplete).
        self.incomplete: Incomplete | None = None
        # The pages the journal lost, until each is requested again.
        self._lost = set(self.walk.resumed.lost) if self.walk.resumed else set()
        self._refetched = 0
        if self._lost:
            crawler.signals.connect(self.request_reached_downloader, signal=signals.request_reached_downloader)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    def request_reached_downloader(self, request: Request) -> None:
        if request.url in self._lost:
            self._lost.discard(request.url)
            self._refetched += 1

    def spider_closed(self, reason: str) -> None:
        walk = self.walk
        stopped = stopped_reason(reason)
        if stopped:
            self.crawler.stats.inc_value(f"sitewalk/budget/stopped/{stopped}")
        elapsed = walk.ledger.elapsed()
        self.report = report = Report(
            seed=walk.config.seed,
            origin=walk.frontier.origin,
            fetched=walk.ledger.pages,
            stopped=stopped,
            error=_error(walk.results.seed_error),
            failures=[failure.record() for failure in walk.results.failures],
            robots_skipped=list(walk.results.robots_skipped),
            # Pages a halt kept from the consumers first: they were next in the walk's order.
            unvisited=walk.gate.dropped() + walk.frontier.unvisited() if stopped else [],
            bytes=walk.ledger.bytes,
            elapsed_s=round(elapsed, 3),
            out_of_scope=walk.frontier.out_of_scope,
            sitemaps=list(walk.results.sitemaps),
            sitemaps_not_read=list(walk.results.sitemaps_not_read),
            unchecked_links=list(walk.results.links.unchecked),
            refetched=self._refetched,
        )
        memory = self.crawler.get_extension(WalkMemory)
        if memory is not None:
            report.changes = memory.memory.changes(stopped).to_dict()
        book = walk.results.links
        verdicts = book.verdicts(report.failures, report.error)
        report.broken_links = book.broken(verdicts)
        if report.broken_links:
            self.crawler.stats.set_value("sitewalk/links/broken", len(report.broken_links))
        if report.out_of_scope:
            self.crawler.stats.set_value("sitewalk/scope/out_of_scope", report.out_of_scope)
        if report.refetched:
            self.crawler.stats.set_value("sitewalk/jobdir/refetched", report.refetched)
        config = walk.config
        consumer = config.consumer
        grep = self.crawler.get_spider_middleware(GrepMiddleware)
        matches = (grep.matches if grep is not None else 0) if consumer == "grep" else None
        self.incomplete = gap = incomplete(report.stopped, len(report.unvisited), book, walk.surface)
        summary = report.summary(consumer, walk.surface, matches)
        if config.check_links:
            made = self.crawler.stats.get_value("sitewalk/linkcheck/checked", 0)
            summary += (f"; link checks: {made} made, {len(report.broken_links)} broken, "
                        f"{len(report.unchecked_links)} unchecked")
        if gap is not None:
            summary += f"; {gap.short}; {budgets_spent(walk.ledger)}"
        logger.info("sitewalk: %s", summary)
        if report.broken_links and config.link_report:
            listed = [f"{what} {path}" for what, path in (("the report's broken_links in", self._path),
                      ("the JUnit file", config.junit), ("the HTML report", config.html_report)) if path is not None]
            where = ", ".join(listed) or f"give {walk.surface.argument('report', 'report.json')} to list them"
            logger.info("sitewalk: %s (%s)", count(len(report.broken_links), "broken link"), where)
        if report.robots_skipped:
            logger.info(
                "sitewalk: %s skipped because robots.txt disallows them (set %s to fetch them)",
                count(len(report.robots_skipped), "page"), walk.surface.setting("ROBOTSTXT_OBEY", False),
            )
        # Checked before the walk (sitewalk.configchecks.check_run); a disk that filled up since is one
        # line each, after the summary, not a traceback instead of it.
        outputs: list[tuple[str, str, Callable[[str], object]]] = []
        if self._path is not None:
            outputs.append(("the report", self._path, lambda path: Path(path).write_text(
                json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")))
        if config.junit is not None:
            allow = walk.surface.argument("allow_incomplete", True)
            outputs.append(("the JUnit file", config.junit, lambda path: write_junit(
                path, book, verdicts, gap, allow, accepted=config.allow_incomplete)))
        if config.html_report is not None:
            # Imported only by a walk that writes the HTML report: start-up time (benchmarks/startup.py).
            from sitewalk.htmlreport import write_html

            outputs.append(("the HTML report", config.html_report,
                            lambda path: write_html(path, report, book, config, walk.surface)))
        for what, path, write in outputs:
            try:
                write(path)
            except OSError as exc:
                logger.error("sitewalk: %s could not be written to %s: %s", what, path, exc.strerror or exc)


class FileFeedStorage(ScrapyFileFeedStorage):
    """Scrapy's storage of feeds in local files, unbuffered: each item reaches the file when it is
    exported, so after a crash the feed holds every item written before it (a JSON lines or CSV
    feed is then whole up to its last line).

    Unlike Scrapy's, it makes no directory: the walk checks its outputs before it starts
    (:func:`sitewalk.configchecks.check_run`). A walk whose seed could not be fetched leaves the file
    as it was: Scrapy opens a feed at its first item, or at the end to store an empty feed, which
    would replace a file that a rerun meant to refresh with nothing. A file appended to is also
    open for reading: the exporters read its end to continue it (:mod:`sitewalk.exporters`).
    """

    def open(self, spider: Spider) -> IO[bytes]:
        walk = getattr(spider, "walk", None)
        if walk is not None and walk.results.seed_error is not None:
            return io.BytesIO()
        mode = "a+b" if self.write_mode == "ab" else self.write_mode
        return Path(self.path).open(mode, buffering=0)


class WalkFeedExporter(FeedExporter):
    """Scrapy's feed exporter, except that an exception while an item is exported (a feed that
    cannot be written, an exporter that fails on a value) is the failure of the item's page, of
    kind ``consumer``, logged in one line (the traceback at DEBUG): the walk goes on. Scrapy's
    would log a traceback per item and say nothing in the report."""

    def item_scraped(self, item: Any, spider: Spider) -> None:
        try:
            super().item_scraped(item, spider)
        except Exception as exc:  # noqa: BLE001 - any exporter's fault is the page's failure
            url = getattr(item, "url", None) or "?"
            logger.warning("the feed exporter raised %s on %s: a failure of kind consumer", type(exc).__name__, url)
            logger.debug("exporting %s failed", url, exc_info=True)
            walk = getattr(spider, "walk", None)
            if walk is not None:
                failed = Failed("consumer", f"a feed exporter raised {type(exc).__name__}: {exc}")
                walk.page_failed(url, getattr(item, "found_on", None), failed, self.crawler.stats)
