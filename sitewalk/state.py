"""One walk's shared state: built once by the spider, handed to every component in from_crawler."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import call_later

from sitewalk import patterns
from sitewalk.clock import LoopClock
from sitewalk.failures import PageFailure
from sitewalk.frontier import Frontier, Scope
from sitewalk.gate import Gate
from sitewalk.hints import CLI
from sitewalk.ledger import Ledger
from sitewalk.linkreport import LinkBook

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector
    from scrapy.utils.asyncio import CallLaterResult

    from sitewalk.clock import Clock
    from sitewalk.config import WalkConfig
    from sitewalk.failures import Failed
    from sitewalk.hints import Surface
    from sitewalk.jobs import JobState
    from sitewalk.tickets import Ticket

__all__ = ["CUTS", "HALTS", "HALT_GRACE", "Results", "Walk", "WalkComponent"]

logger = logging.getLogger(__name__)

# Stops that drop the requests after the page they came on (:meth:`sitewalk.gate.Gate.cut`): a
# consumer's stop and its error. Their pages are not handed to the consumers.
CUTS = frozenset({"callback", "error"})
# Stops that halt the walk (:meth:`sitewalk.gate.Gate.halt`) after HALT_GRACE seconds: then no
# page waits for its turn, none is handed to the consumers (the one going through them included),
# and downloads in flight are cut. The grace lets what is nearly done (a page being read) go
# through; a component that holds its page longer cannot hold the walk. A limit reached
# (max-pages) drops nothing: the requests it let go are the budget's and go through in order.
HALTS = frozenset({"deadline", "interrupted"})
HALT_GRACE = 0.5


@dataclass
class Results:
    """What the walk found besides pages: failures, robots.txt refusals, the seed's own error,
    the sitemap files read and those fetched and not read (url, kind, reason), and the links of
    the pages fetched (not kept across a resumed walk)."""

    failures: list[PageFailure] = field(default_factory=list)
    robots_skipped: list[str] = field(default_factory=list)
    # The seed's URL and why it could not be fetched, when it could not.
    seed_error: tuple[str, Failed] | None = None
    sitemaps: list[str] = field(default_factory=list)
    sitemaps_not_read: list[dict[str, str]] = field(default_factory=list)
    # Every fetched page and its links, for the inlinks of broken links (sitewalk.linkreport).
    links: LinkBook = field(default_factory=LinkBook)


class Walk:
    """Everything one walk's components share: its config, frontier, ledger, gate and results.

    The spider builds it; components take it with :meth:`of` in ``from_crawler``. A stop is asked
    for with :meth:`stop` and decided by the spider at its next turn (:meth:`stopped`): a limit or
    a consumer's stop is a stop only when it leaves a known page unfetched.
    """

    def __init__(
        self,
        config: WalkConfig,
        *,
        job: str | None = None,
        surface: Surface = CLI,
        clock: Clock | None = None,
    ) -> None:
        self.config = config
        # How the walk's messages spell what to change: as its front end takes it (sitewalk.hints).
        self.surface = surface
        # The scrapyd job id (scrapyd's ``_job`` argument), if the walk is one.
        self.job = job
        self.frontier = Frontier(Scope(
            include=patterns.compile(config.include, name="include") if config.include is not None else None,
            exclude=patterns.compile(config.exclude, name="exclude") if config.exclude is not None else None,
            no_parent=config.no_parent,
        ))
        # One clock for the walk: the gate's pace and pauses, the ledger's deadline, the link
        # checker's pace on other hosts.
        self.clock: Clock = clock or LoopClock()
        self.ledger = Ledger(config, self.clock, queued=self.frontier.__len__, refused=self._bytes_spent)
        self.gate = Gate(config.delay, config.concurrency, clock=self.clock)
        self.gate.when_done(self._request_done)
        self.results = Results()
        # The journal's state this walk goes on from (JOBDIR), else None.
        self.resumed: JobState | None = None
        self._stop: str | None = None
        self._stop_always = False
        self._halting: CallLaterResult | None = None

    @classmethod
    def of(cls, crawler: Crawler) -> Walk:
        """The walk of ``crawler``'s spider; NotConfigured for any other spider."""
        walk = getattr(crawler.spider, "walk", None)
        if not isinstance(walk, cls):
            raise NotConfigured("sitewalk's components work with the sitewalk spider only")
        return walk

    def stop(self, reason: str, *, left_unfetched: bool = False) -> None:
        """End the walk: nothing more is requested (and for :data:`HALTS`, no page in hand waits
        any longer). ``left_unfetched``: the stop itself left a page unfetched (a cut-off
        download, an interruption), so it is a stop even if nothing is queued."""
        if self._stop is None:
            self._stop, self._stop_always = reason, left_unfetched
            self.gate.stop()
        if reason in CUTS:
            self.gate.cut()
        if reason in HALTS and self._halting is None:
            self._halting = call_later(HALT_GRACE, self.gate.halt)

    def admit_links(self, links: list[str], depth: int, found_on: str) -> int:
        """Links found on ``found_on`` (a page, a sitemap), at ``depth``: into the frontier within
        max_depth, else held (JOBDIR keeps them for a resumed walk with a larger max_depth).
        Returns how many were off the origin."""
        if depth <= self.config.max_depth:
            return self.frontier.admit(links, depth, found_on)
        self.frontier.hold(links, depth, found_on)
        return 0

    def out_of_bytes(self, ticket: Ticket) -> None:
        """max_bytes stopped the walk at ``ticket``'s request: the requests after it are dropped."""
        self.stop("max-bytes", left_unfetched=True)
        self.gate.cut(after=ticket.number)

    def _bytes_spent(self) -> None:
        """max_bytes refused a download: no request starts from now (which requests after it are
        dropped is decided when its failure takes its turn, :meth:`out_of_bytes`)."""
        self.stop("max-bytes", left_unfetched=True)

    @property
    def halting(self) -> bool:
        """Whether a halt (:data:`HALTS`: the deadline, an interruption) was asked for."""
        return self._halting is not None

    def reason_to_stop(self) -> str | None:
        return self._stop or self.ledger.exhausted()

    def stopped(self, reason: str | None) -> str | None:
        """What the report calls the end of the walk: ``reason`` if it left known pages unfetched."""
        if reason is not None and len(self.frontier):
            return reason
        return self._stop if self._stop_always else None

    def _request_done(self, ticket: Ticket) -> None:
        """A request is done, in request order: a page that went through the consumers is
        settled in the ledger; any other end (a failure, a cut, a drop, a sitemap file) releases it."""
        if ticket.page_request and ticket.page is not None and not ticket.dropped.done():
            self.ledger.settle(ticket, ticket.page.depth)
        else:
            self.ledger.release(ticket)

    def page_failed(self, url: str, found_on: str | None, failed: Failed, stats: StatsCollector) -> None:
        """Record that the page ``url`` (found on ``found_on``) failed, and count it in ``stats``."""
        self.results.failures.append(PageFailure.of(url, found_on, failed))
        stats.inc_value("sitewalk/failures")
        stats.inc_value(f"sitewalk/failures/{failed.kind}")

    def restore(self, state: JobState) -> None:
        """Go on from the walk JOBDIR's journal records. Links its pages at ``max_depth`` held
        join the queue when this walk's ``max_depth`` reaches them, after the queue it left."""
        self.frontier.restore(state.queue, state.seen, state.origin, state.out_of_scope)
        for links, depth, found_on in state.held:
            if depth <= self.config.max_depth:
                self.frontier.admit(links, depth, found_on)
        self.results.failures.extend(PageFailure.from_record(record) for record in state.failures)
        self.results.robots_skipped.extend(state.robots_skipped)
        self.ledger.resume(state.pages, state.bytes, state.elapsed)
        self.resumed = state


class WalkComponent:
    """Base of the walk's Scrapy components: built with ``from_crawler``, they keep the crawler
    and the walk they share (NotConfigured for any spider but sitewalk's)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.walk = Walk.of(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)
