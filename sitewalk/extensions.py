"""Extensions of the walk: its clock and pace (WalkBudget) and its report (WalkReport)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.utils.asyncio import create_looping_call
from twisted.internet.task import LoopingCall

from sitewalk import jobs
from sitewalk.items import Report
from sitewalk.state import WalkComponent

if TYPE_CHECKING:

    from scrapy.crawler import Crawler
    from scrapy.robotstxt import RobotParser

logger = logging.getLogger(__name__)

__all__ = ["WalkBudget", "WalkReport"]


class WalkBudget(WalkComponent):
    """The budget's clock and the walk's pace.

    The deadline counts from ``spider_opened``. A robots.txt ``Crawl-delay`` for
    ``ROBOTSTXT_USER_AGENT`` (``robots_parsed``) lengthens the delay between requests, never
    shortens it. A progress line goes to the log at each new depth and every
    ``SITEWALK_PROGRESS_INTERVAL`` seconds (default 10; 0 = only at each new depth).

    Stats: ``sitewalk/budget/pages``, ``sitewalk/budget/bytes`` (counted by the spider).

    While the walk runs, a Twisted timer fires every second and does nothing else. Each page
    leaves two cancelled Twisted timers behind (Scrapy's download timeout and the connection
    pool's keep-alive), and the asyncio reactor drops cancelled timers only when one of its timers
    fires (``runUntilCurrent``); Scrapy's own looping calls run on asyncio's timers instead. Without
    the tick, a 20,000-page walk kept 40,000 of them to its end: 20 MB.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._budget = self.walk.budget
        self._user_agent: str = crawler.settings.get("ROBOTSTXT_USER_AGENT") or "sitewalk"
        self._interval = crawler.settings.getfloat("SITEWALK_PROGRESS_INTERVAL")
        self._progress = create_looping_call(self._budget.log_progress)
        self._tick = LoopingCall(_nothing)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(self.robots_parsed, signal=signals.robots_parsed)

    def spider_opened(self) -> None:
        self._budget.start_clock()
        self._tick.start(1.0, now=False)
        if self._interval > 0:
            self._progress.start(self._interval, now=False)

    def spider_closed(self) -> None:
        for looping in (self._progress, self._tick):
            if looping.running:
                looping.stop()

    def robots_parsed(self, robotparser: RobotParser) -> None:
        delay = robotparser.crawl_delay(self._user_agent)
        if delay and self.walk.gate.slow_down(delay):
            logger.info("robots.txt Crawl-delay %gs is longer than the walk's delay: using it", delay)


def _nothing() -> None:
    """What :class:`WalkBudget`'s tick does: the reactor clears its cancelled timers when it fires."""


class WalkReport(WalkComponent):
    """Writes how the walk went when it ends: the report (``report`` argument, or beside a
    scrapyd job's items), its one-line summary in the log, and with JOBDIR the state a resumed
    walk goes on from.

    ``stopped`` is Scrapy's close reason (``finish_reason``): null for ``finished``,
    ``interrupted`` for Scrapy's own ``shutdown``. Stats: ``sitewalk/budget/stopped/<reason>``.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._path = jobs.report_path(crawler.settings, self.walk.config.report, self.walk.job)
        self.report: Report | None = None
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    def spider_closed(self, reason: str) -> None:
        walk = self.walk
        stopped = {"finished": None, "shutdown": "interrupted"}.get(reason, reason)
        if stopped:
            self.crawler.stats.inc_value(f"sitewalk/budget/stopped/{stopped}")
        elapsed = walk.budget.elapsed()
        self.report = report = Report(
            seed=walk.config.seed,
            origin=walk.frontier.origin,
            fetched=walk.budget.pages,
            stopped=stopped,
            failures=list(walk.results.failures),
            robots_skipped=list(walk.results.robots_skipped),
            unvisited=walk.frontier.unvisited() if stopped else [],
            bytes=walk.budget.bytes,
            elapsed_s=round(elapsed, 3),
        )
        if jobs.keeps_state(self.crawler.settings):
            jobs.save_state(self.crawler.settings, walk.snapshot(elapsed), finished=stopped != "interrupted")
        if self._path is not None:
            Path(self._path).write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
        logger.info("sitewalk: %s", report.summary())
        if report.robots_skipped:
            logger.info(
                "sitewalk: %d pages skipped because robots.txt disallows them "
                "(set -s ROBOTSTXT_OBEY=false to fetch them)",
                len(report.robots_skipped),
            )
