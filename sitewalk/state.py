"""One walk's shared state: built once by the spider, handed to every component in from_crawler."""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import call_later

from sitewalk.failures import timed_out, too_large
from sitewalk.frontier import Frontier, Scope
from sitewalk.gate import Gate
from sitewalk.items import human_bytes
from sitewalk.linkreport import LinkBook
from sitewalk.text import Absence

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import CallLaterResult
    from twisted.python.failure import Failure

    from sitewalk.config import WalkConfig
    from sitewalk.failures import Failed
    from sitewalk.gate import Ticket
    from sitewalk.items import Page
    from sitewalk.jobs import JobState

__all__ = ["CUTS", "HALTS", "HALT_GRACE", "Budget", "Results", "Walk", "WalkComponent"]

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


class Budget:
    """The walk's limits, shared by every page: ``max_pages`` (fetched pages, any status, the seed
    included), ``deadline`` (seconds for the whole walk) and ``max_bytes`` (body bytes after
    decompression). A resumed walk (JOBDIR) goes on from what it had spent."""

    def __init__(self, config: WalkConfig, queued: Callable[[], int] = lambda: 0) -> None:
        # How many known pages wait to be fetched (the frontier's length), for the progress lines.
        self._queued = queued
        self.max_pages = config.max_pages
        self.deadline = config.deadline
        self.max_bytes = config.max_bytes
        self.max_depth = config.max_depth
        self.pages = 0
        self.bytes = 0
        # Page requests sent whose page is not counted yet (nor their end without one).
        self.reserved = 0
        self._spent = 0.0
        self._started = time.monotonic()
        self._depth = -1

    def start_clock(self) -> None:
        self._started = time.monotonic()

    def resume(self, pages: int, byte_count: int, elapsed: float) -> None:
        self.pages, self.bytes, self._spent = pages, byte_count, elapsed

    def elapsed(self) -> float:
        return self._spent + time.monotonic() - self._started

    def seconds_left(self) -> float:
        return self.deadline - self.elapsed()

    def bytes_left(self) -> int:
        return self.max_bytes - self.bytes

    def reserve(self) -> None:
        """A page request is sent: it holds one of max_pages until it ends."""
        self.reserved += 1

    def release(self) -> None:
        """A page request ended without a page that counts (it failed, or was dropped)."""
        self.reserved -= 1

    def count(self, byte_count: int, depth: int) -> str | None:
        """A page's turn came (pages count in request order): it counts, and the first page of
        each depth gets a progress line. If it does not fit in the bytes left, it does not
        count; the reason it was cut off is returned."""
        self.reserved -= 1
        if byte_count > self.bytes_left():
            return f"cut off at max_bytes (max_bytes={self.max_bytes}, {max(self.bytes_left(), 0)} left for this page)"
        self.pages += 1
        self.bytes += byte_count
        if depth != self._depth:
            self._depth = depth
            self.log_progress()
        return None

    def give_back(self, byte_count: int) -> None:
        """A page counted that the walk then dropped (it never reached the consumers): not fetched."""
        self.pages -= 1
        self.bytes -= byte_count

    def spend(self, byte_count: int) -> None:
        """Bytes fetched that are not a page (a sitemap file): they count in max_bytes only."""
        self.bytes += byte_count

    def cut_off(self, failure: Failure, request: Request) -> tuple[str, str] | None:
        """If the budget cut this download short: the stop reason and the page's failure."""
        if timed_out(failure) and self.seconds_left() <= 0.05:
            return "deadline", f"cut off at the deadline (deadline={self.deadline:g}s)"
        if request.meta.get("sitewalk_budget_maxsize") and too_large(failure):
            left = self.bytes_left()
            return "max-bytes", f"cut off at max_bytes (max_bytes={self.max_bytes}, {left} left for this page)"
        return None

    def exhausted(self) -> str | None:
        """The limit the walk has reached, as a stop reason; None while there is budget left."""
        if self.pages + self.reserved >= self.max_pages:
            return "max-pages"
        if self.seconds_left() <= 0:
            return "deadline"
        if self.bytes_left() <= 0:
            return "max-bytes"
        return None

    def log_progress(self) -> None:
        """One line for a person: what is spent of each limit, the pace, the pages waiting, and
        when a limit will end the walk, about when and which."""
        elapsed, queued = self.elapsed(), self._queued()
        rate = self.pages / elapsed if elapsed > 0 else 0.0
        ending = self.time_left(rate, queued)
        logger.info(
            "progress: pages %d/%d, depth %d/%d, %s/%s, elapsed %.1fs/%gs, %.1f pages/s, %d queued%s",
            self.pages, self.max_pages, max(self._depth, 0), self.max_depth,
            human_bytes(self.bytes), human_bytes(self.max_bytes), elapsed, self.deadline, rate, queued,
            f", about {_seconds(ending[0])} left ({ending[1]})" if ending else "",
        )

    def time_left(self, rate: float, queued: int) -> tuple[float, str] | None:
        """The seconds until the first limit the walk will reach at ``rate`` pages/s, and its stop
        reason, if the ``queued`` pages already reach one; None while the walk could run out of pages first."""
        if rate <= 0:
            return None
        ends = []
        pages_left = self.max_pages - self.pages
        if queued >= pages_left:
            ends.append((pages_left / rate, "max-pages"))
        if self.pages and queued * self.bytes / self.pages >= self.bytes_left():
            ends.append((self.bytes_left() * self.pages / self.bytes / rate, "max-bytes"))
        if queued / rate > self.seconds_left():
            ends.append((self.seconds_left(), "deadline"))
        return min(ends, default=None)


@dataclass
class Results:
    """What the walk found besides pages: failures, robots.txt refusals, the seed's own error,
    what consumers count across a resumed walk (the grep match budget spent), the sitemap
    files read and the links of the pages fetched (not kept across a resumed walk)."""

    failures: list[dict[str, str | None]] = field(default_factory=list)
    robots_skipped: list[str] = field(default_factory=list)
    # The seed's URL and why it could not be fetched, when it could not.
    seed_error: tuple[str, Failed] | None = None
    consumers: dict[str, int] = field(default_factory=dict)
    sitemaps: list[str] = field(default_factory=list)
    # Every fetched page and its links, for the inlinks of broken links (sitewalk.linkreport).
    links: LinkBook = field(default_factory=LinkBook)


class Walk:
    """Everything one walk's components share: its config, frontier, budget, gate and results.

    The spider builds it; components take it with :meth:`of` in ``from_crawler``. A stop is asked
    for with :meth:`stop` and decided by the spider at its next turn (:meth:`stopped`): a limit or
    a consumer's stop is a stop only when it leaves a known page unfetched.
    """

    def __init__(
        self,
        config: WalkConfig,
        *,
        on_page: Callable[[Page], Any] | None = None,
        on_page_stops: bool = True,
        job: str | None = None,
    ) -> None:
        self.config = config
        # The scrapyd job id (scrapyd's ``_job`` argument), if the walk is one.
        self.job = job
        self.on_page = on_page
        self.on_page_stops = on_page_stops
        self.frontier = Frontier(Scope(
            include=re.compile(config.include) if config.include is not None else None,
            exclude=re.compile(config.exclude) if config.exclude is not None else None,
            no_parent=config.no_parent,
        ))
        self.budget = Budget(config, queued=self.frontier.__len__)
        self.gate = Gate(config.delay, config.concurrency)
        self.gate.when_done(self._request_done)
        self.results = Results()
        # For grep with a plain-text pattern: which pages cannot match, told from their source;
        # they are neither read for lines nor waited for by the gate.
        self.absence = (
            Absence.of(config.grep, fixed_strings=config.fixed_strings, ignore_case=config.ignore_case)
            if config.grep is not None
            else None
        )
        # The journal's state this walk goes on from (JOBDIR), else None.
        self.resumed: JobState | None = None
        # An exception raised by on_page: it ends the walk and is raised again to the API's caller.
        self.error: BaseException | None = None
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

    def reason_to_stop(self) -> str | None:
        return self._stop or self.budget.exhausted()

    def stopped(self, reason: str | None) -> str | None:
        """What the report calls the end of the walk: ``reason`` if it left known pages unfetched."""
        if reason is not None and len(self.frontier):
            return reason
        return self._stop if self._stop_always else None

    def _request_done(self, ticket: Ticket) -> None:
        """A request is done: its hold on max_pages ends, and a page the walk dropped after it
        counted is not fetched after all."""
        if ticket.holds_page:
            self.budget.release()
        elif ticket.counted and ticket.dropped.done() and ticket.page is not None:
            self.budget.give_back(ticket.page.byte_count)

    def fail(self, error: BaseException) -> None:
        self.error = error
        self.stop("error", left_unfetched=True)

    def restore(self, state: JobState) -> None:
        """Go on from the walk JOBDIR's journal records. Links its pages at ``max_depth`` held
        join the queue when this walk's ``max_depth`` reaches them, after the queue it left."""
        self.frontier.restore(state.queue, state.seen, state.origin, state.out_of_scope)
        for links, depth, found_on in state.held:
            if depth <= self.config.max_depth:
                self.frontier.admit(links, depth, found_on)
        self.results.failures.extend(state.failures)
        self.results.robots_skipped.extend(state.robots_skipped)
        self.results.consumers.update(state.consumers)
        self.budget.resume(state.pages, state.bytes, state.elapsed)
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


def _seconds(value: float) -> str:
    return f"{value:.1f}s" if value < 10 else f"{value:.0f}s"
