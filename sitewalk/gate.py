"""When the walk's next request may go: one at a time, paced, and never past a consumer's stop."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from scrapy.http import Response

    from sitewalk.items import Page

    # Asked with the pages in hand, in fetch order: could the consumer stop on one of them?
    StopCheck = Callable[[Sequence["InHand"]], bool]

__all__ = ["AHEAD", "Gate", "Halted", "InHand"]

T = TypeVar("T")

# Pages downloaded and not yet consumed, at most. Their HTML is read beside the walk meanwhile;
# slow consumers must not make the walk hold the site in memory.
AHEAD = 8


class Halted(Exception):  # noqa: N818 - not an error: the walk was halted while a page waited
    """Raised in a page's waits when the walk is halted (the deadline, an interruption, an error):
    the page is not handed to the consumers."""


class InHand:
    """A page downloaded and not yet consumed: it is read, its links are admitted to the frontier
    (in fetch order), it goes through the consumers (in fetch order), and then it is done."""

    def __init__(self, page: Page, previous: InHand | None, gate: Gate) -> None:
        self.page = page
        # Whether the page has been read (its title, links and lines are known).
        self.read = False
        # The walk was halted before the page reached the consumers: it is not done.
        self.cancelled = False
        # The number of its request (see Gate.request_sent).
        self.number = 0
        self._previous = previous
        self._gate = gate
        loop = asyncio.get_running_loop()
        self.admitted: asyncio.Future[None] = loop.create_future()
        self.consumed: asyncio.Future[None] = loop.create_future()
        self._items_out = 0
        self._items_done = 0
        self._output_done = False

    def item_out(self) -> None:
        self._items_out += 1

    def item_done(self) -> bool:
        """Count an item through the pipelines; True once the page is consumed."""
        self._items_done += 1
        return self._output_done and self._items_done >= self._items_out

    def output_done(self) -> bool:
        """The spider made every item it will make of this page; True once it is consumed."""
        self._output_done = True
        return self._items_done >= self._items_out

    async def turn_to_admit(self) -> None:
        """Wait until every earlier page has admitted its links; :class:`Halted` if the walk is
        halted first."""
        if self._previous is not None:
            await self._gate.until_done(self._previous.admitted)
        self._gate.check_halted()

    async def turn_to_consume(self) -> None:
        """Wait until every earlier page has gone through the consumers; :class:`Halted` if the
        walk is halted first."""
        if self._previous is not None:
            await self._gate.until_done(self._previous.consumed)
            self._previous = None
        self._gate.check_halted()


class Gate:
    """Decides when the next request may go.

    A request goes when the previous one is over (its page downloaded, or its failure known),
    when at most :data:`AHEAD` pages are in hand (downloaded, not yet consumed), when no consumer
    could stop on one of them — each consumer registered with :meth:`add_check` is asked about
    the pages in hand whenever one arrives, is read or is consumed, so its answer can be exact
    and a consumer that will not stop does not hold the walk — and at least ``delay`` seconds
    after the previous request started (robots.txt's Crawl-delay can lengthen it, never shorten
    it). A stop wakes every wait at once, the pace's too.

    A halt (:meth:`halt`: the deadline, an interruption, an error) is a stop that also ends the
    waits of the pages in hand: a page whose turn has not come raises :class:`Halted` and is not
    consumed (:meth:`cancelled`), and whatever a page awaits through :meth:`unless_halted` (its
    reading, a consumer's coroutine) is cancelled. So no component can hold the walk past it.
    """

    def __init__(self, delay: float, ahead: int = AHEAD) -> None:
        self.delay = delay
        self._ahead = ahead
        self._checks: list[StopCheck] = []
        self._in_flight = False
        self._in_hand: dict[int, InHand] = {}  # by id() of the page's response, in fetch order
        self._latest: InHand | None = None
        self._last_start: float | None = None
        self._stopping = False
        self._changed = asyncio.Event()
        self._stopped = asyncio.Event()
        self._halted = asyncio.Event()
        self._halt_waiters: set[asyncio.Future[None]] = set()
        # (the number of the request, its URL), for the pages a halt kept from the consumers.
        self._cancelled: list[tuple[int, str]] = []
        # Requests sent so far: the number of the one in flight.
        self._sent = 0
        self._done_listeners: list[Callable[[], None]] = []

    def add_check(self, check: StopCheck) -> None:
        self._checks.append(check)

    def when_done(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` each time a request ends without a page or a page is consumed."""
        self._done_listeners.append(listener)

    @property
    def in_flight(self) -> bool:
        return self._in_flight

    def in_hand(self) -> list[Page]:
        """The pages in hand (downloaded, not yet consumed), in fetch order."""
        return [entry.page for entry in self._in_hand.values()]

    def cancelled(self) -> list[str]:
        """The URLs of the pages a halt kept from the consumers (their downloads cut, or their
        turn not come), in request order: not done."""
        return [url for _, url in sorted(self._cancelled)]

    def slow_down(self, delay: float) -> bool:
        """Use ``delay`` between requests if it is longer than the current one; True if it is."""
        if delay <= self.delay:
            return False
        self.delay = delay
        return True

    # -- what happens to requests and pages
    def request_sent(self) -> None:
        self._in_flight = True
        self._sent += 1

    def request_started(self) -> None:
        """The request went to the network now: the pace counts from here."""
        self._last_start = time.monotonic()

    def request_over(self, cancelled: str | None = None) -> None:
        """The request in flight ended without a page (it failed, was dropped, or was
        ``cancelled`` by a halt: its URL)."""
        if cancelled is not None:
            self._cancelled.append((self._sent, cancelled))
        self._in_flight = False
        self._changed.set()
        for listener in self._done_listeners:
            listener()

    def page_arrived(self, response: Response, page: Page) -> InHand:
        self._in_flight = False
        self._latest = entry = InHand(page, self._latest, self)
        entry.number = self._sent
        self._in_hand[id(response)] = entry
        self._changed.set()
        return entry

    def page_read(self, entry: InHand) -> None:
        entry.read = True
        self._changed.set()

    def links_admitted(self, entry: InHand) -> None:
        if not entry.admitted.done():
            entry.admitted.set_result(None)
        self._changed.set()

    def item_out(self, response: Response) -> None:
        """An item made from the page of ``response`` left the spider for the pipelines."""
        entry = self._in_hand.get(id(response))
        if entry is not None:
            entry.item_out()

    def item_done(self, response: Response) -> None:
        """An item made from the page of ``response`` went through the pipelines."""
        entry = self._in_hand.get(id(response))
        if entry is not None and entry.item_done():
            self._consumed(response, entry)

    def item_cancelled(self, response: Response) -> Page | None:
        """An item of the page of ``response`` was dropped by a halt: the page is not done.
        Returns the page the first time."""
        entry = self._in_hand.get(id(response))
        if entry is None or entry.cancelled:
            return None
        entry.cancelled = True
        return entry.page

    def output_done(self, response: Response) -> None:
        """The spider made every item it will make from the page of ``response``."""
        entry = self._in_hand.get(id(response))
        if entry is not None and entry.output_done():
            self._consumed(response, entry)

    def _consumed(self, response: Response, entry: InHand) -> None:
        del self._in_hand[id(response)]
        # A page that failed before admitting its links admits none: the next must not wait.
        self.links_admitted(entry)
        entry.consumed.set_result(None)
        if entry.cancelled:
            self._cancelled.append((entry.number, entry.page.url))
        for listener in self._done_listeners:
            listener()

    def stop(self) -> None:
        self._stopping = True
        self._stopped.set()
        self._changed.set()

    def halt(self) -> None:
        """Stop, and end the waits of the pages in hand (see the class)."""
        self.stop()
        self._halted.set()
        for waiter in self._halt_waiters:
            if not waiter.done():
                waiter.set_result(None)

    @property
    def halted(self) -> bool:
        return self._halted.is_set()

    def busy(self) -> bool:
        """Whether a request is in flight or a page in hand."""
        return self._in_flight or bool(self._in_hand)

    def check_halted(self) -> None:
        if self._halted.is_set():
            raise Halted

    async def until_done(self, future: asyncio.Future[None]) -> None:
        """Wait until ``future`` is done (without cancelling it) or the walk is halted."""
        if future.done() or self._halted.is_set():
            return
        waiter = asyncio.get_running_loop().create_future()

        def wake(_: asyncio.Future[None]) -> None:
            if not waiter.done():
                waiter.set_result(None)

        future.add_done_callback(wake)
        self._halt_waiters.add(waiter)
        try:
            await waiter
        finally:
            future.remove_done_callback(wake)
            self._halt_waiters.discard(waiter)

    async def unless_halted(self, awaitable: Awaitable[T]) -> T:
        """The result of ``awaitable``; if the walk is halted first, it is cancelled and
        :class:`Halted` raised."""
        task = asyncio.ensure_future(awaitable)
        if not task.done():
            halted = asyncio.ensure_future(self._halted.wait())
            try:
                await asyncio.wait((task, halted), return_when=asyncio.FIRST_COMPLETED)
            finally:
                halted.cancel()
            if not task.done():
                task.cancel()
                raise Halted
        return task.result()

    # -- the waits of the walk's loop
    async def settled(self, frontier_empty: Callable[[], bool]) -> None:
        """Wait until no request is in flight and, if the frontier is empty, no page in hand can
        still add links to it (or a stop)."""
        await self._until(
            lambda: not self._in_flight
            and (not frontier_empty() or all(entry.admitted.done() for entry in self._in_hand.values()))
        )

    async def ready(self, seconds_left: float) -> None:
        """Wait until the look-ahead bound and the consumers let the next request go, then for the
        pace (never longer than ``seconds_left``)."""
        await self._until(self._may_go)
        if self._last_start is not None and not self._stopping:
            wait = min(self._last_start + self.delay - time.monotonic(), seconds_left)
            if wait > 0:
                # A stop ends the pace's wait too.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopped.wait(), wait)

    def _may_go(self) -> bool:
        if len(self._in_hand) > self._ahead:
            return False
        in_hand = list(self._in_hand.values())
        return not any(check(in_hand) for check in self._checks)

    async def _until(self, condition: Callable[[], bool]) -> None:
        while not self._stopping and not condition():
            self._changed.clear()
            await self._changed.wait()
