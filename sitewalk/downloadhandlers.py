"""The HTTP download handler of the walk: Scrapy's HTTP/1.1 handler, imported cheaply."""

from __future__ import annotations

from sitewalk._startup import import_http11_handler

import_http11_handler()

from typing import TYPE_CHECKING  # noqa: E402

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler  # noqa: E402 - imported cheaply above
from scrapy.exceptions import DownloadFailedError, NotConfigured  # noqa: E402
from twisted.internet.error import ConnectionClosed  # noqa: E402

from sitewalk._compat import UNANSWERED, track_connection_reuse, watch_connection  # noqa: E402
from sitewalk.state import Walk  # noqa: E402
from sitewalk.tickets import TICKET, Ticket  # noqa: E402

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from sitewalk.gate import Gate

__all__ = ["REUSED", "WalkHTTPDownloadHandler"]

# Meta key: whether the request went out on a kept-alive connection used before (not a fresh one).
REUSED = "sitewalk_reused_connection"


class WalkHTTPDownloadHandler(HTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 handler; a request a reused connection lost is sent once more, after the pace.

    Servers close kept-alive connections whenever they like (an idle timeout, an HTTP/1.0
    server), and a request sent on one the server had just closed fails before any response.
    Twisted's connection pool would send it again at once (``retryAutomatically``); the walk
    sends it again itself, once, after its pace (:meth:`sitewalk.gate.Gate.start`), as every
    request to the site starts — and only as RFC 9110 9.2.2 allows: a GET or HEAD request
    without a body, sent on a **reused** kept-alive connection (meta ``sitewalk_reused_connection``)
    that closed before any byte of a response arrived. A request that fails on a fresh
    connection is a failure, never sent again, and a page the server answered is never
    requested twice. Stats: ``sitewalk/download/resent``. The class also makes this module,
    which imports the handler without its start-up cost, what ``DOWNLOAD_HANDLERS`` names.

    A request the walk drops (:meth:`sitewalk.gate.Gate.cut`: a stop, the deadline, an
    interruption) has its download cut: it fails with :class:`sitewalk.tickets.Dropped`, and the
    page is listed as unvisited.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        # Twisted's own re-send off; each download can tell which connection it went out on.
        track_connection_reuse(self)

    async def download_request(self, request: Request) -> Response:
        try:
            return await self._download(request)
        except DownloadFailedError as exc:
            if not _may_send_again(request, exc):
                raise
        try:
            gate: Gate | None = Walk.of(self.crawler).gate
        except NotConfigured:
            gate = None  # another spider's crawl: sent again at once, as Twisted would
        if gate is not None:
            await gate.start(request.meta)
        request.meta["sitewalk_resent"] = True
        self.crawler.stats.inc_value("sitewalk/download/resent")
        return await self._download(request)

    async def _download(self, request: Request) -> Response:
        ticket = request.meta.get(TICKET)
        with watch_connection() as connection:
            try:
                download = super().download_request(request)
                if not isinstance(ticket, Ticket):
                    return await download
                return await ticket.unless_dropped(download)
            finally:
                request.meta[REUSED] = connection.reused


def _may_send_again(request: Request, exc: DownloadFailedError) -> bool:
    """Whether ``request`` got no answer because the reused connection it went out on closed,
    and may go once more.
    (Scrapy re-raises Twisted's client errors as DownloadFailedError, the original as the cause.)"""
    cause = exc.__cause__
    if not isinstance(cause, UNANSWERED) or request.meta.get("sitewalk_resent") or not request.meta.get(REUSED):
        return False
    if request.method not in ("GET", "HEAD") or request.body:
        return False
    return all(reason.check(ConnectionClosed) for reason in getattr(cause, "reasons", []))
