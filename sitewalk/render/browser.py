"""The walk's browser: Debian's Chromium driven by Playwright, started at the first render, with no
way to the network of its own."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import shutil
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sitewalk.exceptions import SitewalkError

if TYPE_CHECKING:
    from playwright.async_api import Browser as PlaywrightBrowser
    from playwright.async_api import BrowserContext, Page, Playwright
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

    from sitewalk.hints import Surface

__all__ = ["Browser", "chromium_path"]

# Headless, without the GPU (none on a server), the sandbox (it needs user namespaces that
# containers often lack; the browser's requests and pages are the walk's own), QUIC (UDP that
# request interception would not see) and anything Chromium fetches on its own behalf.
_ARGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--dns-prefetch-disable",
    # WebRTC may use UDP only through the proxy, which is none: no STUN or TURN packet leaves.
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
)


def chromium_path(settings: BaseSettings, surface: Surface) -> str:
    """The Chromium to run (``SITEWALK_RENDER_CHROMIUM``: a path or a command name on PATH), with
    Playwright importable; else :class:`SitewalkError` saying what to install."""
    name = settings.get("SITEWALK_RENDER_CHROMIUM") or "chromium"
    if importlib.util.find_spec("playwright") is None:
        raise SitewalkError(
            f"{surface.name('render')} needs Playwright: pip install 'sitewalk[render]' "
            f"(or leave {surface.name('render')} at never)"
        )
    path = shutil.which(name)
    if path is None:
        raise SitewalkError(
            f"{surface.name('render')} needs Chromium, and {name!r} is not an executable: install Debian's "
            f"(apt-get install chromium) or point {surface.setting('SITEWALK_RENDER_CHROMIUM', '/path/to/chromium')} at one"
        )
    return path


@dataclass(eq=False)
class _Instance:
    browser: PlaywrightBrowser
    context: BrowserContext
    # Pages rendered in it, and pages open in it now.
    served: int = 0
    open: int = 0


class Browser:
    """One Chromium for the walk, started when the first page is rendered (a walk that renders
    nothing starts none), its pages in one context (cookies and storage shared, as a browser
    going from page to page of a site shares them), at most ``pages_open`` at once. After ``restart_after`` pages the next page
    gets a new Chromium, and the old one is closed when its last page is: a browser's memory
    grows with the pages it has run.

    Chromium has no way to the network of its own: its proxy is a loopback port bound and never
    listened on (every connection to it is refused), the implicit loopback exception removed.
    What reaches a server is what the walk's route handler fetches for it, through the walk's
    own downloader (:mod:`sitewalk.render.fetching`); a connection Chromium opens by itself
    (a preconnect, a redirect it follows, a worker's WebSocket) goes nowhere. Service workers
    are blocked.

    Stats: ``sitewalk/render/launches``.
    """

    def __init__(self, executable: str, pages_open: int, restart_after: int, stats: StatsCollector) -> None:
        self._executable = executable
        self._slots = asyncio.Semaphore(max(pages_open, 1))
        self._restart_after = max(restart_after, 1)
        self._stats = stats
        self._playwright: Playwright | None = None
        self._current: _Instance | None = None
        self._retiring: set[_Instance] = set()
        self._launching = asyncio.Lock()
        self._pages: dict[Page, _Instance] = {}
        # Pages and browsers being closed in the background.
        self._closing: set[asyncio.Future[None]] = set()
        self._nowhere: socket.socket | None = None

    async def open(self) -> Page:
        """A new page, once fewer than ``pages_open`` are open; :meth:`release` it after."""
        await self._slots.acquire()
        try:
            instance = await self._instance()
            instance.open += 1
            try:
                page = await instance.context.new_page()
            except BaseException:
                self._closed(instance)
                raise
        except BaseException:
            self._slots.release()
            raise
        self._pages[page] = instance
        return page

    def release(self, page: Page) -> None:
        """Close ``page`` in the background (a page whose script never yields takes a while to
        close; the walk need not wait for it), then free its place."""
        closing = asyncio.ensure_future(self._close_page(page))
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)

    async def _close_page(self, page: Page) -> None:
        try:
            with contextlib.suppress(Exception):
                await page.close()
            self._closed(self._pages.pop(page))
        finally:
            self._slots.release()

    def _closed(self, instance: _Instance) -> None:
        instance.open -= 1
        if instance in self._retiring and not instance.open:
            self._retiring.discard(instance)
            self._release_browser(instance.browser)

    def _release_browser(self, browser: PlaywrightBrowser) -> None:
        closing = asyncio.ensure_future(_close(browser))
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)

    async def _instance(self) -> _Instance:
        async with self._launching:
            current = self._current
            if current is not None and current.served >= self._restart_after:
                self._current = None
                if current.open:
                    self._retiring.add(current)
                else:
                    self._release_browser(current.browser)
            if self._current is None or not self._current.browser.is_connected():
                browser = await self._launch()
                self._current = _Instance(browser, await browser.new_context(service_workers="block"))
            self._current.served += 1
            return self._current

    async def _launch(self) -> PlaywrightBrowser:
        from playwright.async_api import async_playwright

        if self._playwright is None:
            self._playwright = await async_playwright().start()
        if self._nowhere is None:
            self._nowhere = socket.socket()
            self._nowhere.bind(("127.0.0.1", 0))
        port = self._nowhere.getsockname()[1]
        args = [*_ARGS, f"--proxy-server=http://127.0.0.1:{port}", "--proxy-bypass-list=<-loopback>"]
        # The walk decides what a signal does (it stops, then closes the browser); Playwright
        # must not close the browser under it.
        options: dict[str, Any] = {"handle_sigint": False, "handle_sigterm": False, "handle_sighup": False}
        browser = await self._playwright.chromium.launch(executable_path=self._executable, args=args, **options)
        self._stats.inc_value("sitewalk/render/launches")
        return browser

    async def close(self) -> None:
        """Close every Chromium and Playwright's driver."""
        if self._closing:
            await asyncio.wait(list(self._closing), timeout=5)
        instances = [*self._retiring, *([self._current] if self._current is not None else [])]
        self._current = None
        self._retiring.clear()
        for instance in instances:
            await _close(instance.browser)
        if self._playwright is not None:
            with contextlib.suppress(Exception):
                await self._playwright.stop()
            self._playwright = None
        if self._nowhere is not None:
            self._nowhere.close()
            self._nowhere = None


async def _close(browser: PlaywrightBrowser) -> None:
    # A browser that crashed or was closed already is closed.
    with contextlib.suppress(Exception):
        await browser.close()
