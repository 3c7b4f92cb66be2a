"""One page in the browser: every request it makes is fetched by the walk's own downloader."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.http.request import NO_CALLBACK
from twisted.python.failure import Failure

from sitewalk.failures import describe, too_large
from sitewalk.kinds import BUDGET_MAXSIZE, KIND, WIRE_BYTES, Kind
from sitewalk.ledger import BytesSpent

if TYPE_CHECKING:
    from playwright.async_api import Page, Route, WebSocketRoute
    from scrapy.crawler import Crawler
    from scrapy.http import Headers, Response

__all__ = ["QUIET", "PageRun"]

logger = logging.getLogger(__name__)

# Seconds with no request in flight after the load event: then the page is taken as rendered
# (scripts that fetch data do so on load or at once; a request started meanwhile restarts it).
QUIET = 0.1
# Headers of a response the browser is handed without them: the body is whole and decoded.
_NOT_HANDED = frozenset({"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"})


class PageRun:
    """Runs ``response`` (a page the walk fetched) in a browser page and returns its DOM.

    The document is the response itself (not fetched again). Every other request the page makes
    (scripts, stylesheets, fetch/XHR, iframes, beacons, from any origin) is routed here and fetched
    with ``crawler.engine.download_async``: through the walk's downloader middlewares (the address
    guard, the host's robots.txt, the pace, the byte budget, redirects) and its download handler,
    whose resolver refuses what the guard refuses at connect time. What it answers is handed to the
    browser; a request that fails is aborted. Requests of the ``skip`` resource types (Playwright's
    names: image, media, font) are aborted without a fetch; WebSockets are refused. A navigation of
    the page itself (a script setting ``location``, a ``<meta refresh>``, a form submitted) is not
    followed: its URL is kept in :attr:`navigations`, for the walk to treat as a link.

    :attr:`byte_count` is the document's bytes and every answer's, as the walk's ledger charged
    them (on the wire); once the ledger refuses an answer (max_bytes is spent) nothing more is
    fetched and :attr:`over_budget` is set.

    Stats: ``sitewalk/render/requests``, ``sitewalk/render/request_failures``,
    ``sitewalk/render/skipped``, ``sitewalk/render/navigations``, ``sitewalk/render/websockets``.
    """

    def __init__(self, crawler: Crawler, response: Response, skip: frozenset[str], document_bytes: int) -> None:
        self._crawler = crawler
        self._response = response
        self._skip = skip
        self.byte_count = document_bytes
        self.over_budget = False
        self.navigations: list[str] = []
        self._page: Page | None = None
        self._document_sent = False
        self._in_flight = 0
        self._started = 0
        self._changed = asyncio.Event()
        self._downloads: set[asyncio.Future[Response]] = set()

    async def run(self, page: Page) -> str:
        """Load the page in ``page``, wait until it is rendered (:data:`QUIET`), return its DOM as HTML."""
        self._page = page
        await page.route("**/*", self._route)
        await page.route_web_socket("**/*", self._refuse_web_socket)
        await page.goto(self._response.url, wait_until="load")
        while not self.over_budget:
            while self._in_flight and not self.over_budget:
                self._changed.clear()
                await self._changed.wait()
            started = self._started
            await asyncio.sleep(QUIET)
            if not self._in_flight and self._started == started:
                break
        return await page.content()

    async def snapshot(self, seconds: float) -> str | None:
        """The DOM as it is now, if the page gives it within ``seconds`` (a script that never
        yields keeps it from answering)."""
        if self._page is None:
            return None
        content = asyncio.ensure_future(self._page.content())
        await asyncio.wait((content,), timeout=seconds)
        if not content.done():
            content.cancel()
            return None
        return None if content.exception() is not None else content.result()

    def cancel(self) -> None:
        """Cancel the downloads still running: the page is over."""
        for download in self._downloads:
            download.cancel()

    async def _route(self, route: Route) -> None:
        request = route.request
        try:
            frame = request.frame
            if request.is_navigation_request() and frame.parent_frame is None:
                if frame.page is self._page and not self._document_sent:
                    self._document_sent = True
                    await route.fulfill(status=self._response.status, headers=_handed(self._response.headers),
                                        body=self._response.body)
                    return
                if frame.page is self._page:
                    self.navigations.append(request.url)
                self._crawler.stats.inc_value("sitewalk/render/navigations")
                await route.abort("aborted")
                return
            if request.resource_type in self._skip:
                self._crawler.stats.inc_value("sitewalk/render/skipped")
                await route.abort("blockedbyclient")
                return
            await self._fetch(route)
        except Exception:  # noqa: BLE001 - the page closed meanwhile (a time limit, a stop): nothing to answer
            logger.debug("a request of the browser was not answered: %s", request.url, exc_info=True)

    async def _fetch(self, route: Route) -> None:
        request = route.request
        self._in_flight += 1
        self._started += 1
        try:
            if self.over_budget:
                await route.abort("blockedbyclient")
                return
            headers = {name: value for name, value in request.headers.items() if name.lower() != "user-agent"}
            fetch = Request(request.url, method=request.method, headers=headers, body=request.post_data_buffer,
                            meta={KIND: Kind.BROWSER}, callback=NO_CALLBACK, dont_filter=True)
            self._crawler.stats.inc_value("sitewalk/render/requests")
            download = asyncio.ensure_future(self._crawler.engine.download_async(fetch))
            self._downloads.add(download)
            try:
                response = await download
            except Exception as exc:  # noqa: BLE001 - every failure of a browser's request is the same to it
                self._failed(fetch, exc)
                await route.abort("blockedbyclient")
                return
            finally:
                self._downloads.discard(download)
            self.byte_count += _charged(response, fetch)
            await route.fulfill(status=response.status, headers=_handed(response.headers), body=response.body)
        finally:
            self._in_flight -= 1
            self._changed.set()

    def _failed(self, request: Request, exc: Exception) -> None:
        stats = self._crawler.stats
        stats.inc_value("sitewalk/render/request_failures")
        failure = Failure(exc)
        if failure.check(BytesSpent) or (request.meta.get(BUDGET_MAXSIZE) and too_large(failure)):
            # Cut off at the bytes the walk had left: the page does not fit in max_bytes.
            self.over_budget = True
            self._changed.set()
        reason = describe(failure, request).reason
        logger.debug("%s: a request of its browser failed: %s (%s)", self._response.url, request.url, reason)

    async def _refuse_web_socket(self, socket: WebSocketRoute) -> None:
        self._crawler.stats.inc_value("sitewalk/render/websockets")
        with contextlib.suppress(Exception):
            await socket.close(code=1008, reason="sitewalk does not open WebSockets")


def _charged(response: Response, request: Request) -> int:
    """The bytes the ledger charged for ``response`` to ``request`` (or to the redirect hop it came from)."""
    try:
        meta = response.meta
    except AttributeError:  # not tied to a request: the one it answered
        meta = request.meta
    return int(meta.get(WIRE_BYTES, len(response.body)))


def _handed(headers: Headers) -> dict[str, Any]:
    """Scrapy's headers as Playwright hands them to the browser (several values on lines of their own)."""
    handed = {}
    for name, values in headers.items():
        text = name.decode("latin-1")
        if text.lower() not in _NOT_HANDED:
            handed[text] = "\n".join(value.decode("latin-1") for value in values)
    return handed
