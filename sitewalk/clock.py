"""The walk's one clock: what the gate, the ledger, Retry-After and the deadline read and wait on."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Protocol

__all__ = ["Clock", "LoopClock"]


class Clock(Protocol):
    """Seconds on a monotonic scale, and a wait on that scale that an event can end early."""

    def now(self) -> float: ...

    async def wait(self, event: asyncio.Event, seconds: float) -> None:
        """Wait ``seconds``, or until ``event`` is set, whichever comes first."""

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""


class LoopClock:
    """The event loop's clock (``loop.time()``, which is ``time.monotonic()`` for asyncio's loops
    and uvloop's); before a loop runs, ``time.monotonic()`` itself."""

    def now(self) -> float:
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:
            return time.monotonic()

    async def wait(self, event: asyncio.Event, seconds: float) -> None:
        if seconds <= 0 or event.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), seconds)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
