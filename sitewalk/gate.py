"""When the walk's next request may go, and the order its pages are read, admitted and consumed in."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from sitewalk.clock import LoopClock
from sitewalk.kinds import RULES, STARTED, Pace, kind_of
from sitewalk.tickets import TICKET, Dropped, Ticket

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from scrapy.http import Response

    from sitewalk.clock import Clock
    from sitewalk.items import Page

    # Asked with the pages in hand, in request order: could the consumer stop on one of them?
    StopCheck = Callable[[Sequence[Ticket]], bool]

__all__ = ["AHEAD", "Gate"]

# Pages downloaded and not yet consumed, at most. Their HTML is read beside the walk meanwhile;
# slow consumers must not make the walk hold the site in memory.
AHEAD = 8


class Gate:
    """Decides when the next request may go, and keeps the walk's requests in order.

    A request goes when fewer than ``concurrency`` are in flight (their page not arrived, or their
    failure not known), when at most :data:`AHEAD` pages are in hand (downloaded, not yet
    consumed), and after the pace and a pause (:meth:`pause`: a 429 or 503). The pace is by
    request kind (:data:`sitewalk.kinds.RULES`): every request starts at least ``delay`` seconds
    after the previous one started; a request of the walk (a page, a sitemap, a link check on
    the origin, a browser's request) also ``crawl_delay`` seconds (robots.txt's Crawl-delay,
    :meth:`slow_down`) after the previous such request — robots.txt is the walk's set-up, and
    Crawl-delay can slow the walk's requests, never speed them up. Every request to the site,
    robots.txt and a page asked again included, waits for the pace and the pause once more where
    it goes to the network (:meth:`start`). Time is the walk's one clock (``clock``,
    :class:`sitewalk.clock.LoopClock` unless a test gives another). With one request at a time, each consumer
    registered with :meth:`add_check` is also asked about the pages in hand whenever one arrives,
    is read or is consumed, and no request goes while one could stop the walk; with several in
    flight, a consumer's stop drops the requests after the page it stopped on instead
    (:meth:`cut`). A stop wakes every wait at once, the pace's too.

    Every request has a :class:`Ticket`, made when it is sent (:meth:`request_sent`) and carried
    in its meta (:data:`TICKET`); each later event names it. :meth:`cut` drops the requests after
    a ticket: their downloads are cut, their pages not handed to the consumers, and their URLs
    listed by :meth:`dropped`, in request order, for the report's ``unvisited``.
    """

    def __init__(self, delay: float, concurrency: int = 1, ahead: int = AHEAD, clock: Clock | None = None) -> None:
        self.delay = delay
        # robots.txt's Crawl-delay: the least spacing of the walk's own requests (not its set-up).
        self.crawl_delay = 0.0
        self._clock: Clock = clock or LoopClock()
        self.concurrency = concurrency
        self._ahead = ahead
        self._checks: list[StopCheck] = []
        # Sent and not done, in request order.
        self._open: dict[int, Ticket] = {}
        self._in_flight = 0
        self._sent = 0
        self._latest: Ticket | None = None
        # The number of the last ticket done (tickets are done in request order).
        self._last_done = 0
        self._dropped: list[Ticket] = []
        # When the previous request started, and the previous one that was not the walk's set-up.
        self._last_start = float("-inf")
        self._last_walk_start = float("-inf")
        # A pause for the whole walk (a 429 or 503): no request starts before _paused_until.
        self._paused_until = 0.0
        self._pause_started = float("-inf")
        self._stopping = False
        self._changed = asyncio.Event()
        self._stopped = asyncio.Event()
        self._done_listeners: list[Callable[[Ticket], None]] = []

    def add_check(self, check: StopCheck) -> None:
        self._checks.append(check)

    def when_done(self, listener: Callable[[Ticket], None]) -> None:
        """Call ``listener`` with each ticket when it is done, in request order."""
        self._done_listeners.append(listener)

    def slow_down(self, crawl_delay: float) -> bool:
        """Space the walk's requests (not its set-up) by ``crawl_delay`` (robots.txt's Crawl-delay)
        if it is longer than the delay they have; True if it is."""
        if crawl_delay <= max(self.delay, self.crawl_delay):
            return False
        self.crawl_delay = crawl_delay
        return True

    # -- what the walk knows of its requests
    @property
    def in_flight(self) -> int:
        """How many requests are in flight."""
        return self._in_flight

    def busy(self) -> bool:
        """Whether a request is in flight or a page in hand."""
        return bool(self._open)

    def in_hand(self) -> list[Ticket]:
        """The tickets whose page is in hand (downloaded, not yet consumed), in request order."""
        return [ticket for ticket in self._open.values() if ticket.page is not None]

    def pending(self) -> list[str]:
        """The URLs of the requests sent and not done, and of those dropped: a walk resumed from
        here must request them again."""
        return [ticket.url for ticket in self._open.values()] + self.dropped()

    def dropped(self) -> list[str]:
        """The URLs of the requests the walk dropped, in request order."""
        return [ticket.url for ticket in sorted(self._dropped, key=lambda ticket: ticket.number)]

    @staticmethod
    def ticket_of(response: Response) -> Ticket | None:
        ticket = response.meta.get(TICKET)
        return ticket if isinstance(ticket, Ticket) else None

    # -- what happens to requests and pages
    def request_sent(self, url: str, *, page: bool = True) -> Ticket:
        self._sent += 1
        self._latest = ticket = Ticket(self._sent, url, page, self._latest)
        self._open[ticket.number] = ticket
        self._in_flight += 1
        return ticket

    def request_started(self, pace: Pace = Pace.WALK) -> float:
        """A request of ``pace`` goes to the network now: the pace counts from here. Returns the time."""
        now = self._clock.now()
        if pace is not Pace.HOST:
            self._last_start = now
        if pace is Pace.WALK:
            self._last_walk_start = now
        return now

    def pause(self, seconds: float, request_started: float) -> bool:
        """Hold every request start for ``seconds`` (the site answered 429 or 503 to a request
        that started at ``request_started``). One clock for the walk: an answer to a request
        that started before the current pause began belongs to that pause's burst and starts
        none. Returns whether a pause started."""
        if request_started < self._pause_started:
            return False
        now = self._clock.now()
        self._pause_started = now
        self._paused_until = max(self._paused_until, now + seconds)
        self._changed.set()
        return True

    async def may_start(self, pace: Pace = Pace.WALK) -> None:
        """Wait until a request of ``pace`` may go to the network: after the pause, if one is on,
        and its pace after the previous starts (or until a stop)."""
        if pace is Pace.HOST:
            return
        while not self._stopping:
            wait = self._start_at(pace) - self._clock.now()
            if wait <= 0:
                return
            await self._clock.wait(self._stopped, wait)

    async def start(self, meta: dict[str, Any]) -> None:
        """A request with ``meta`` goes to the network: after its kind's pace (:meth:`may_start`);
        a page request a stop came upon meanwhile is dropped (:class:`Dropped`). Meta
        ``sitewalk_started`` is when it started."""
        pace = RULES[kind_of(meta)].pace
        await self.may_start(pace)
        if self._stopping and isinstance(meta.get(TICKET), Ticket):
            raise Dropped
        meta[STARTED] = self.request_started(pace)

    def request_over(self, ticket: Ticket, at_turn: Callable[[], None] | None = None) -> None:
        """``ticket``'s request ended without a page (it failed, was dropped by the dupefilter,
        or was cut off). At its turn, once every earlier ticket is done, ``at_turn`` is called
        (the walk records the failure there, so failures keep the request order) and the ticket
        is done."""
        if ticket.page is not None or ticket.consumed.done():
            return
        self._in_flight -= 1
        self._changed.set()

        def turn(_: object = None) -> None:
            if at_turn is not None and not ticket.dropped.done():
                at_turn()
            self._done(ticket)

        previous = ticket._previous
        if previous is None or previous.consumed.done():
            turn()
        else:
            previous.consumed.add_done_callback(turn)

    def page_arrived(self, ticket: Ticket, page: Page) -> None:
        ticket.page = page
        self._in_flight -= 1
        self._changed.set()

    def page_read(self, ticket: Ticket) -> None:
        ticket.read = True
        self._changed.set()

    def links_admitted(self, ticket: Ticket) -> None:
        if not ticket.admitted.done():
            ticket.admitted.set_result(None)
        self._changed.set()

    def item_out(self, ticket: Ticket) -> None:
        """An item made from ``ticket``'s page left the spider for the pipelines."""
        ticket._item_out()

    def item_done(self, ticket: Ticket) -> None:
        """An item made from ``ticket``'s page went through the pipelines (or was dropped)."""
        if ticket._item_done():
            self._done(ticket)

    def output_done(self, ticket: Ticket) -> None:
        """The spider made every item it will make from ``ticket``'s page."""
        if ticket._all_out():
            self._done(ticket)

    def _done(self, ticket: Ticket) -> None:
        if ticket.consumed.done():
            return
        del self._open[ticket.number]
        if not ticket.dropped.done():
            self._last_done = max(self._last_done, ticket.number)
        # A request that ended without admitting links admits none: the next must not wait.
        self.links_admitted(ticket)
        ticket.consumed.set_result(None)
        if ticket.dropped.done():
            self._dropped.append(ticket)
        for listener in self._done_listeners:
            listener(ticket)

    def cut(self, after: int | None = None) -> None:
        """Drop every request sent after ticket number ``after`` (None: after the page now going
        through the consumers, or the last ticket done)."""
        if after is None:
            consuming = [ticket.number for ticket in self._open.values() if ticket.consuming]
            after = max(consuming, default=self._last_done)
        for ticket in self._open.values():
            if ticket.number > after and not ticket.dropped.done():
                ticket.dropped.set_result(None)
        self._changed.set()

    def halt(self) -> None:
        """Drop every request not done, the page now going through the consumers included."""
        self.cut(after=self._last_done)

    def consuming(self) -> Ticket | None:
        """The ticket whose page is going through the consumers now, if one is."""
        return next((ticket for ticket in self._open.values() if ticket.consuming), None)

    @property
    def stopping(self) -> bool:
        return self._stopping

    def stop(self) -> None:
        self._stopping = True
        self._stopped.set()
        self._changed.set()

    # -- the waits of the walk's loop
    async def settled(self, frontier_empty: Callable[[], bool]) -> None:
        """Wait until a request may be in flight besides those that are and, if the frontier is
        empty, until nothing in flight or in hand can still add links to it (or a stop)."""
        await self._until(
            lambda: self._in_flight < self.concurrency
            and (not frontier_empty() or self._idle())
        )

    async def drained(self) -> None:
        """Wait until every request sent is done: its page consumed, or its end at its turn (or a stop)."""
        await self._until(lambda: not self._open)

    async def idle(self) -> None:
        """Wait until nothing is in flight and every page in hand has admitted its links (or a stop)."""
        await self._until(self._idle)

    def _idle(self) -> bool:
        return not self._in_flight and all(ticket.admitted.done() for ticket in self._open.values())

    async def ready(self, seconds_left: float) -> None:
        """Wait until the look-ahead bound (and, one request at a time, the consumers) let the
        next request go, then for the pace and a pause (never longer than ``seconds_left``)."""
        await self._until(self._may_go)
        if not self._stopping:
            # A stop ends the pace's wait too.
            await self._clock.wait(self._stopped, min(self._start_at(Pace.WALK) - self._clock.now(), seconds_left))

    def _start_at(self, pace: Pace) -> float:
        """When the next request of ``pace`` may start: after a pause, ``delay`` after the
        previous start and, for the walk's own requests, ``crawl_delay`` after the previous one."""
        start_at = max(self._paused_until, self._last_start + self.delay)
        if pace is Pace.WALK:
            start_at = max(start_at, self._last_walk_start + self.crawl_delay)
        return start_at

    def _may_go(self) -> bool:
        in_hand = self.in_hand()
        if len(in_hand) > self._ahead:
            return False
        if self.concurrency > 1:
            return True
        return not any(check(in_hand) for check in self._checks)

    async def _until(self, condition: Callable[[], bool]) -> None:
        while not self._stopping and not condition():
            self._changed.clear()
            await self._changed.wait()
