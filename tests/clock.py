"""A fake clock for unit tests: time moves only when something waits on it, by what it waits."""

from __future__ import annotations

import asyncio


class FakeClock:
    """Implements :class:`sitewalk.clock.Clock`. :meth:`wait` returns at once, the clock moved on
    by the seconds waited (unless the event was set: then it does not move), after letting the
    other tasks run; :meth:`sleep` likewise; :meth:`advance` moves it by hand. Nothing sleeps for real."""

    def __init__(self, start: float = 1000.0) -> None:
        self.time = start
        # Every wait, as (when it began, seconds asked).
        self.waits: list[tuple[float, float]] = []

    def now(self) -> float:
        return self.time

    def advance(self, seconds: float) -> None:
        self.time += seconds

    async def wait(self, event: asyncio.Event, seconds: float) -> None:
        if seconds <= 0 or event.is_set():
            return
        self.waits.append((self.time, seconds))
        # Others run first: a stop set meanwhile ends the wait without time passing.
        await asyncio.sleep(0)
        if not event.is_set():
            self.time += seconds

    async def sleep(self, seconds: float) -> None:
        await self.wait(asyncio.Event(), seconds)
