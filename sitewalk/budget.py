"""The walk's budget: max_pages, the deadline and max_bytes, shared by every request."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from sitewalk.failures import timed_out, too_large
from sitewalk.items import human_bytes

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from twisted.python.failure import Failure

    from sitewalk.config import WalkConfig

__all__ = ["Budget"]

logger = logging.getLogger(__name__)


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
        """Log :meth:`progress`."""
        logger.info("%s", self.progress())

    def progress(self) -> str:
        """One line for a person: what is spent of each limit, the pace, the pages waiting, and
        when a limit will end the walk, about when and which."""
        # Pages requested and not yet counted are still to come, as the queued ones are.
        elapsed, queued = self.elapsed(), self._queued() + self.reserved
        rate = self.pages / elapsed if elapsed > 0 else 0.0
        ending = self.time_left(rate, queued)
        return (
            f"progress: pages {self.pages}/{self.max_pages}, depth {max(self._depth, 0)}/{self.max_depth}, "
            f"{human_bytes(self.bytes)}/{human_bytes(self.max_bytes)}, elapsed {elapsed:.1f}s/{self.deadline:g}s, "
            f"{rate:.1f} pages/s, {queued} queued{_ending(ending)}"
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


def _ending(ending: tuple[float, str] | None) -> str:
    if ending is None:
        return ""
    seconds, reason = ending
    # A limit reached already (the last page, the deadline passed): no time is left to tell.
    return f", about {_seconds(seconds)} left ({reason})" if seconds > 0 else f", {reason} reached"


def _seconds(value: float) -> str:
    return f"{value:.1f}s" if value < 10 else f"{value:.0f}s"
