"""One Twisted reactor per process, on an asyncio loop: where the Python API's walks run, whether
the caller blocks or awaits."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from scrapy.utils.reactor import is_asyncio_reactor_installed, is_reactor_installed

from sitewalk._compat import reactor_event_loop
from sitewalk.exceptions import SitewalkError

C = TypeVar("C")
T = TypeVar("T")

_REACTOR_LOCK = threading.Lock()


def _reactor_loop() -> asyncio.AbstractEventLoop | None:
    if not is_reactor_installed():
        return None
    if not is_asyncio_reactor_installed():
        raise SitewalkError(
            "sitewalk needs Twisted's asyncio reactor, but another reactor is installed in this process"
        )
    return reactor_event_loop()


def _background_loop() -> asyncio.AbstractEventLoop:
    """The reactor's loop, started in a daemon thread on first use when no reactor exists."""
    with _REACTOR_LOCK:
        loop = _reactor_loop()
        if loop is not None:
            return loop
        from twisted.internet import asyncioreactor

        loop = asyncio.new_event_loop()
        asyncioreactor.install(eventloop=loop)
        from twisted.internet import reactor

        ready = threading.Event()
        reactor.callWhenRunning(ready.set)
        thread = threading.Thread(
            target=reactor.run,  # type: ignore[misc]  # Twisted types run() as an interface method
            kwargs={"installSignalHandlers": False},
            name="sitewalk-reactor",
            daemon=True,
        )
        thread.start()
        ready.wait()
        return loop


def run_blocking(crawl: Callable[[C], Coroutine[Any, Any, T]], call: C) -> T:
    """``crawl(call)`` on the reactor's loop, from a thread that waits for it."""
    loop = _reactor_loop() or _background_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        raise SitewalkError("walk() would block the event loop it needs; use 'await walk_async(...)' here")
    if not loop.is_running():
        raise SitewalkError(
            "the event loop sitewalk's reactor was installed on has stopped; run walks from one loop, "
            "or use walk() only"
        )
    future = asyncio.run_coroutine_threadsafe(crawl(call), loop)
    return future.result()


async def run_async(crawl: Callable[[C], Coroutine[Any, Any, T]], call: C) -> T:
    """``crawl(call)`` on the reactor's loop, which is the caller's own loop if no reactor was installed."""
    running = asyncio.get_running_loop()
    with _REACTOR_LOCK:
        loop = _reactor_loop()
        if loop is None:
            # Share the caller's loop: install the reactor on it and mark it running, so
            # startup triggers (e.g. the DNS thread pool) fire without reactor.run().
            from twisted.internet import asyncioreactor

            asyncioreactor.install(eventloop=running)
            from twisted.internet import reactor

            reactor.startRunning(installSignalHandlers=False)
            # Nothing fires the shutdown of a reactor on a loop it does not run: its thread pool
            # (host name lookups) must not keep the process alive once the caller's loop ends.
            reactor.getThreadPool().threadFactory = functools.partial(
                threading.Thread, daemon=True
            )
            loop = running
    if loop is running:
        return await crawl(call)
    if not loop.is_running():
        raise SitewalkError("the event loop sitewalk's reactor was installed on has stopped")
    return await asyncio.wrap_future(
        asyncio.run_coroutine_threadsafe(crawl(call), loop)
    )
