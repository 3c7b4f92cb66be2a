"""The downloader middleware that hands the walk a page as its browser rendered it."""

from __future__ import annotations

import asyncio
import html
import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import DownloadTimeoutError, NotConfigured
from scrapy.http import Headers, HtmlResponse

from sitewalk.failures import RenderFailed
from sitewalk.hints import CLI
from sitewalk.items import HTML_TYPES, media_type
from sitewalk.kinds import DEPTH, FETCHED_BYTES, WIRE_BYTES
from sitewalk.ledger import BytesSpent
from sitewalk.links import UTF8_CHARSETS
from sitewalk.render.browser import Browser, chromium_path
from sitewalk.render.fetching import PageRun
from sitewalk.render.shell import has_script, looks_like_shell
from sitewalk.state import WalkComponent
from sitewalk.tickets import TICKET, Ticket

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["RenderMiddleware"]

logger = logging.getLogger(__name__)

# Seconds a page that is past its time limit has to give the DOM it has.
_SNAPSHOT_GRACE = 1.0


class RenderMiddleware(WalkComponent):
    """Runs the walk's pages in a browser (``render``: ``always``, or ``auto`` for the pages whose
    HTML is an app shell, :func:`sitewalk.render.shell.looks_like_shell`), so that what the walk
    reads of a page (links, title, grep's lines, content) is its DOM once its scripts ran.

    Off (NotConfigured) with ``render=never``. A 2xx HTML page's response, after its redirects, is
    replaced by an :class:`~scrapy.http.HtmlResponse` of the same URL and status whose body is the
    DOM serialised as UTF-8, flagged ``rendered``; the page's byte count (meta
    ``sitewalk_fetched_bytes``) is its document's bytes plus every answer its browser was handed,
    so max_bytes counts them all, and a page that does not fit is cut off at max_bytes as a
    download is. A page is one page in max_pages, however many requests its browser made. The
    URLs of the page's own navigations (a script's ``location``, a ``<meta refresh>``) are added to
    it as links (``<a data-sitewalk-navigation>``), so the walk follows them by its rules.

    The browser (:class:`sitewalk.render.browser.Browser`) is one per walk; each request it makes
    goes through the walk's downloader (:class:`sitewalk.render.fetching.PageRun`). A render has
    ``SITEWALK_RENDER_TIMEOUT`` seconds (default 15), never past the deadline: then the page is the
    DOM it has, or, if it cannot give one (a script that never yields), a failure of kind
    ``render``; at the deadline the page is cut off as a download is.

    Settings: ``SITEWALK_RENDER_TIMEOUT``, ``SITEWALK_RENDER_SKIP`` (resource types not fetched,
    default ``image,media,font``), ``SITEWALK_RENDER_PAGES_OPEN`` (default 2),
    ``SITEWALK_RENDER_RESTART_AFTER`` (pages per browser, default 100), ``SITEWALK_RENDER_CHROMIUM``
    (:func:`~sitewalk.render.browser.chromium_path`: without it, or Playwright, the walk fails as
    this middleware is built, before any request).
    Stats: ``sitewalk/render/pages``, ``sitewalk/render/plain`` (pages ``auto`` left as they came),
    ``sitewalk/render/timeouts``, and those of the browser and of each page's requests.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._mode = self.walk.config.render
        if self._mode == "never":
            raise NotConfigured
        settings = crawler.settings
        self._timeout = settings.getfloat("SITEWALK_RENDER_TIMEOUT")
        self._skip = frozenset(kind.strip().lower() for kind in settings.getlist("SITEWALK_RENDER_SKIP"))
        self._browser = Browser(
            chromium_path(settings, self.walk.surface or CLI), settings.getint("SITEWALK_RENDER_PAGES_OPEN"),
            settings.getint("SITEWALK_RENDER_RESTART_AFTER"), crawler.stats,
        )
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    async def process_response(self, request: Request, response: Response) -> Response:
        ticket = request.meta.get(TICKET)
        if request.meta.get(DEPTH) is None or not isinstance(ticket, Ticket):
            return response  # robots.txt, a sitemap, a request of the browser: not a page
        if not 200 <= response.status < 300 or media_type(response) not in HTML_TYPES or not response.body:
            return response
        if self._mode == "auto" and not (has_script(response.body, getattr(response, "encoding", None)) and await asyncio.to_thread(_is_shell, response)):
            self.crawler.stats.inc_value("sitewalk/render/plain")
            return response
        return await ticket.unless_dropped(self._render(request, response))

    async def _render(self, request: Request, response: Response) -> Response:
        ledger = self.walk.ledger
        try:
            # Waiting for a place in the browser, and starting it, are inside the deadline too.
            async with asyncio.timeout(max(ledger.seconds_left(), 0.001)):
                page = await self._browser.open()
        except TimeoutError:
            raise DownloadTimeoutError(f"rendering {response.url} reached the deadline") from None
        except Exception as exc:
            logger.debug("the browser for %s did not start", response.url, exc_info=True)
            raise RenderFailed(f"the browser did not start ({_first_line(exc)})") from None
        run = PageRun(self.crawler, response, self._skip, request.meta.get(WIRE_BYTES, len(response.body)))
        limit = min(self._timeout, ledger.seconds_left())
        # Waited for with asyncio.wait, not wait_for: a page whose script never yields takes a while
        # to let go of, and the walk does not wait for that.
        running = asyncio.ensure_future(run.run(page))
        try:
            await asyncio.wait((running,), timeout=limit)
            if running.done():
                try:
                    dom = running.result()
                except Exception as exc:
                    logger.debug("rendering %s failed", response.url, exc_info=True)
                    raise RenderFailed(f"the browser failed ({_first_line(exc)})") from None
            else:
                running.cancel()
                dom = await self._timed_out(run, response, limit)
        finally:
            running.cancel()
            run.cancel()
            self._browser.release(page)
        if run.over_budget:
            # An answer its browser needed did not fit in max_bytes: the page does not either.
            raise BytesSpent(f"cut off at max_bytes (max_bytes={ledger.max_bytes}, rendering {response.url})")
        self.crawler.stats.inc_value("sitewalk/render/pages")
        request.meta[FETCHED_BYTES] = run.byte_count
        links = "".join(f'<a href="{html.escape(url)}" data-sitewalk-navigation></a>' for url in run.navigations)
        headers = Headers(response.headers)
        for name in ("Content-Length", "Content-Encoding"):
            headers.pop(name, None)
        headers["Content-Type"] = "text/html; charset=utf-8"
        return response.replace(cls=HtmlResponse, body=(dom + links).encode("utf-8"), headers=headers,
                                encoding="utf-8", flags=[*response.flags, "rendered"])

    async def _timed_out(self, run: PageRun, response: Response, limit: float) -> str:
        """The page's DOM when its time is up: cut off at the deadline, else the DOM it has."""
        self.crawler.stats.inc_value("sitewalk/render/timeouts")
        left = self.walk.ledger.seconds_left()
        if left <= 0.05:
            raise DownloadTimeoutError(f"rendering {response.url} reached the deadline")
        dom = await run.snapshot(min(_SNAPSHOT_GRACE, left))
        if dom is None:
            raise RenderFailed(f"no DOM within {limit:g}s (SITEWALK_RENDER_TIMEOUT={self._timeout:g})")
        logger.info("%s was still busy after %gs (SITEWALK_RENDER_TIMEOUT): its DOM then is the page", response.url, limit)
        return dom

    async def spider_closed(self) -> None:
        await self._browser.close()


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def _is_shell(response: Response) -> bool:
    encoding = getattr(response, "encoding", None)
    utf8 = (encoding or "utf-8").lower() in UTF8_CHARSETS
    return looks_like_shell(response.body if utf8 else response.text)
