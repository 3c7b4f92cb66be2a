"""The walk's ledger: the one account of its pages, bytes, time and requests in flight."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import StopDownload

from sitewalk.failures import timed_out, too_large
from sitewalk.items import human_bytes
from sitewalk.kinds import BUDGET_MAXSIZE, WIRE_BYTES, Kind, kind_of
from sitewalk.tickets import TICKET, Ticket

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from twisted.python.failure import Failure

    from sitewalk.clock import Clock
    from sitewalk.config import WalkConfig

    # Told of each request that ends, with what it ended as: "settle" or "release".
    Listener = Callable[[str, Ticket], None]

__all__ = ["BytesSpent", "Ledger"]

logger = logging.getLogger(__name__)


class BytesSpent(StopDownload):
    """A download cut because its bytes would pass max_bytes (raised from a ``headers_received``
    or ``bytes_received`` handler: Scrapy closes the connection and fails the request with it)."""

    def __init__(self, reason: str) -> None:
        super().__init__(fail=True)
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


class Ledger:
    """The walk's one account: nothing else keeps a count of pages, bytes or time.

    **What counts as a page.** A request of a kind that holds a page
    (:data:`sitewalk.kinds.RULES`: a page of the walk, not robots.txt, a sitemap, a link check
    or a browser's request) holds one of ``max_pages`` from the moment it starts (:meth:`hold`)
    until its page has gone through the consumers (:meth:`settle`: it is fetched, any status,
    the seed included) or it ends without one (:meth:`release`: it failed, was cut off or
    dropped). A page downloaded ahead of its turn keeps holding its place until its turn.

    **What counts as a byte.** Every byte the site sends to any request of the walk, every kind,
    as it arrives on the download side (:meth:`charge`): the status line, the headers and the
    body as sent, before any decompression — Scrapy's ``downloader/response_bytes`` count. A
    page's ``byte_count`` is its response's charge (:data:`WIRE_BYTES`). A charge that would pass
    ``max_bytes`` is refused: the download is cut (:class:`BytesSpent`), the bytes counted stop at
    ``max_bytes``, and no request starts after it (:meth:`exhausted`).

    **Time.** ``deadline`` seconds from :meth:`start_clock`, on the walk's one clock.

    **Invariants**, checked by :meth:`check` (tests call it after every event):
    ``pages + held <= max_pages``; ``bytes <= max_bytes``; ``bytes`` is the sum of every charge
    accepted; every ticket held is settled or released once. A resumed walk (JOBDIR) goes on
    from what its journal says was spent (:meth:`resume`). The journal and the statistics listen
    to the ledger's events (:meth:`listen`) rather than count for themselves.
    """

    def __init__(
        self, config: WalkConfig, clock: Clock, queued: Callable[[], int] = lambda: 0,
        refused: Callable[[], None] = lambda: None,
    ) -> None:
        self._clock = clock
        # Called once, when a charge is first refused: the walk stops there (nothing more starts).
        self._on_refused = refused
        # How many known pages wait to be fetched (the frontier's length), for the progress lines.
        self._queued = queued
        self.max_pages = config.max_pages
        self.deadline = config.deadline
        self.max_bytes = config.max_bytes
        self.max_depth = config.max_depth
        # Pages settled (fetched and through the consumers).
        self.pages = 0
        # Bytes charged, every kind of request.
        self.bytes = 0
        # The tickets holding a page's place, and the bytes charged to each so far.
        self._held: dict[int, int] = {}
        # Whether a charge was refused: max_bytes has cut a download, nothing more starts.
        self.refused = False
        self._spent = 0.0
        self._resumed_pages = self._resumed_bytes = 0
        self._started = clock.now()
        self._depth = -1
        self._listeners: list[Listener] = []
        # What other components add to the progress line (link checks): each a part of it, or "".
        self._progress_parts: list[Callable[[], str]] = []

    # -- the vocabulary
    def hold(self, ticket: Ticket) -> None:
        """A page request starts: it holds one of max_pages (the caller asked :meth:`exhausted` first)."""
        assert ticket.number not in self._held, f"{ticket} held twice"
        self._held[ticket.number] = 0
        self.check()

    def charge(self, meta: dict[str, Any], byte_count: int, *, coming: int = 0, refusable: bool = True) -> None:
        """``byte_count`` bytes arrived for the request with ``meta`` (``coming``: as many more are
        announced, a Content-Length). Past max_bytes, a refusable charge takes what is left and
        raises :class:`BytesSpent`: the download is cut there. One that is not refusable (the few
        bytes of a status line's reason, counted once the response is whole) stops at max_bytes."""
        left = self.bytes_left()
        if byte_count + coming > left and refusable:
            self._take(meta, min(byte_count, max(left, 0)))
            if not self.refused:
                self.refused = True
                self._on_refused()
            what = "file" if kind_of(meta) is Kind.SITEMAP else "page"
            raise BytesSpent(f"cut off at max_bytes (max_bytes={self.max_bytes}, {max(left, 0)} left for this {what})")
        self._take(meta, min(byte_count, max(left, 0)))

    def _take(self, meta: dict[str, Any], byte_count: int) -> None:
        self.bytes += byte_count
        meta[WIRE_BYTES] = int(meta.get(WIRE_BYTES) or 0) + byte_count
        ticket = meta.get(TICKET)
        if isinstance(ticket, Ticket) and ticket.number in self._held:
            self._held[ticket.number] += byte_count

    def settle(self, ticket: Ticket, depth: int) -> None:
        """``ticket``'s page went through the consumers: it counts in ``pages``, and the first page
        of each depth gets a progress line."""
        self._held.pop(ticket.number, None)
        self.pages += 1
        if depth != self._depth:
            self._depth = depth
            self.log_progress()
        self.check()
        self._tell("settle", ticket)

    def release(self, ticket: Ticket) -> None:
        """``ticket``'s request ended without a page that counts (it failed, was cut off or was
        dropped, or was not a page's): its place in max_pages is free again; its bytes stay spent."""
        self._held.pop(ticket.number, None)
        self.check()
        self._tell("release", ticket)

    def listen(self, listener: Listener) -> None:
        """Call ``listener`` with each :meth:`settle` and :meth:`release`, in the order they happen."""
        self._listeners.append(listener)

    def _tell(self, event: str, ticket: Ticket) -> None:
        for listener in self._listeners:
            listener(event, ticket)

    def check(self) -> None:
        """Assert the ledger's invariants (a walk resumed with smaller limits may have spent more already)."""
        assert self.pages + len(self._held) <= max(self.max_pages, self._resumed_pages), f"{self.pages} pages + {len(self._held)} held > max_pages={self.max_pages}"
        assert 0 <= self.bytes <= max(self.max_bytes, self._resumed_bytes), f"{self.bytes} bytes > max_bytes={self.max_bytes}"

    # -- what the walk asks
    @property
    def held(self) -> int:
        """How many page requests hold a place (in flight, or their page in hand)."""
        return len(self._held)

    def settled_bytes(self) -> int:
        """The bytes charged, less those of pages still held: a walk resumed from here fetches
        those pages again."""
        return self.bytes - sum(self._held.values())

    def start_clock(self) -> None:
        self._started = self._clock.now()

    def resume(self, pages: int, byte_count: int, elapsed: float) -> None:
        self.pages, self.bytes, self._spent = pages, byte_count, elapsed
        self._resumed_pages, self._resumed_bytes = pages, byte_count

    def elapsed(self) -> float:
        return self._spent + self._clock.now() - self._started

    def seconds_left(self) -> float:
        return self.deadline - self.elapsed()

    def bytes_left(self) -> int:
        return self.max_bytes - self.bytes

    def exhausted(self) -> str | None:
        """The limit the walk has reached, as a stop reason; None while there is budget left."""
        if self.pages + len(self._held) >= self.max_pages:
            return "max-pages"
        if self.seconds_left() <= 0:
            return "deadline"
        if self.refused or self.bytes_left() <= 0:
            return "max-bytes"
        return None

    def cut_off(self, failure: Failure, request: Request) -> tuple[str, str] | None:
        """If the budget cut this download short: the stop reason and the page's failure."""
        if failure.check(BytesSpent):
            return "max-bytes", str(failure.value)
        if timed_out(failure) and self.seconds_left() <= 0.05:
            return "deadline", f"cut off at the deadline (deadline={self.deadline:g}s)"
        if request.meta.get(BUDGET_MAXSIZE) and too_large(failure):
            # Its body grew past max_bytes as it was decompressed.
            return "max-bytes", f"cut off at max_bytes (max_bytes={self.max_bytes}, passed as it was unpacked)"
        return None

    # -- what a person is told
    def log_progress(self) -> None:
        """Log :meth:`progress`."""
        logger.info("%s", self.progress())

    def add_progress(self, part: Callable[[], str]) -> None:
        """Have :meth:`progress` end with what ``part`` returns (it counts nothing of the ledger's)."""
        self._progress_parts.append(part)

    def progress(self) -> str:
        """One line for a person: what is spent of each limit, the pace, the pages waiting, and
        when a limit will end the walk, about when and which; then the parts others add (:meth:`add_progress`)."""
        # Pages requested and not yet settled are still to come, as the queued ones are.
        elapsed, queued = self.elapsed(), self._queued() + len(self._held)
        rate = self.pages / elapsed if elapsed > 0 else 0.0
        ending = self.time_left(rate, queued)
        return (
            f"progress: pages {self.pages}/{self.max_pages}, depth {max(self._depth, 0)}/{self.max_depth}, "
            f"{human_bytes(self.bytes)}/{human_bytes(self.max_bytes)}, elapsed {elapsed:.1f}s/{self.deadline:g}s, "
            f"{rate:.1f} pages/s, {queued} queued{_ending(ending)}"
        ) + "".join(part() for part in self._progress_parts)

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
