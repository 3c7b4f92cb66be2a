"""A request of the walk, from the moment it is sent until it is done: its ticket."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from sitewalk.items import Page

__all__ = ["TICKET", "Dropped", "Ticket"]

T = TypeVar("T")

# The request meta key that carries a request's ticket.
TICKET = "sitewalk_ticket"


class Dropped(Exception):  # noqa: N818 - not an error: the walk let go of this request
    """Raised in a request's waits (its download, its turn, its reading, its way through the
    pipelines) when the walk dropped it: a stop cut it off, or the walk was halted. Its page
    is not handed to the consumers."""


class Ticket:
    """One request of the walk, from the moment it is sent until it is done.

    Its ``number`` is the order requests were sent in. A request for a page either ends without
    one (:meth:`Gate.request_over`) or brings its page (:meth:`Gate.page_arrived`), which is read,
    admits its links to the frontier and goes through the consumers; links are admitted and pages
    consumed in request order, whatever order responses arrive in, so a walk with several requests
    in flight delivers what a walk with one does. A ticket is done when its page is consumed or,
    for a request that ended without one, at its turn.
    """

    def __init__(self, number: int, url: str, page_request: bool, previous: Ticket | None) -> None:
        loop = asyncio.get_running_loop()
        self.number = number
        self.url = url
        # A request for a page (it counts in max_pages), not for a sitemap file.
        self.page_request = page_request
        self.page: Page | None = None
        # Whether the page has been read (its title, links and lines are known).
        self.read = False
        # The page's turn to be consumed came (it is going through the consumers).
        self.consuming = False
        self.admitted: asyncio.Future[None] = loop.create_future()
        self.consumed: asyncio.Future[None] = loop.create_future()
        # Done when the walk dropped this request (see Dropped).
        self.dropped: asyncio.Future[None] = loop.create_future()
        self._previous = previous
        self._items_out = 0
        self._items_done = 0
        self._output_done = False

    def __repr__(self) -> str:
        return f"<Ticket {self.number} {self.url}>"

    @property
    def in_flight(self) -> bool:
        return self.page is None and not self.consumed.done()

    async def unless_dropped(self, awaitable: Awaitable[T]) -> T:
        """The result of ``awaitable``; if the walk drops this request first, ``awaitable`` is
        cancelled and :class:`Dropped` raised."""
        task = asyncio.ensure_future(awaitable)
        if not task.done():
            await asyncio.wait((task, self.dropped), return_when=asyncio.FIRST_COMPLETED)
            if not task.done():
                task.cancel()
                raise Dropped
        return task.result()

    async def turn_to_admit(self) -> None:
        """Wait until every earlier request has admitted its links; :class:`Dropped` if the
        walk drops this one first."""
        if self._previous is not None:
            await self._until_done(self._previous.admitted)
        self._check()

    async def turn_to_consume(self) -> None:
        """Wait until every earlier request is done; :class:`Dropped` if the walk drops this one
        first."""
        if self._previous is not None:
            await self._until_done(self._previous.consumed)
            self._previous = None
        self._check()
        self.consuming = True

    def _check(self) -> None:
        if self.dropped.done():
            raise Dropped

    async def _until_done(self, future: asyncio.Future[None]) -> None:
        """Wait until ``future`` is done (without cancelling it) or this request is dropped."""
        if future.done() or self.dropped.done():
            return
        waiter = asyncio.get_running_loop().create_future()

        def wake(_: asyncio.Future[None]) -> None:
            if not waiter.done():
                waiter.set_result(None)

        future.add_done_callback(wake)
        self.dropped.add_done_callback(wake)
        try:
            await waiter
        finally:
            future.remove_done_callback(wake)
            self.dropped.remove_done_callback(wake)

    def _item_out(self) -> None:
        self._items_out += 1

    def _item_done(self) -> bool:
        self._items_done += 1
        return self._output_done and self._items_done >= self._items_out

    def _all_out(self) -> bool:
        self._output_done = True
        return self._items_done >= self._items_out
