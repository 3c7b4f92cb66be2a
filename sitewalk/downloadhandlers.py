"""The HTTP download handler of the walk: Scrapy's HTTP/1.1 handler, imported cheaply."""

from __future__ import annotations

from sitewalk._startup import import_http11_handler

import_http11_handler()

from contextvars import ContextVar  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler  # noqa: E402 - imported cheaply above
from scrapy.exceptions import DownloadFailedError, NotConfigured  # noqa: E402
from twisted.internet.error import ConnectionClosed  # noqa: E402
from twisted.web._newclient import (  # noqa: E402 - Twisted's own names for "no answer came"; no public module has them
    RequestNotSent,
    RequestTransmissionFailed,
    ResponseNeverReceived,
)

from sitewalk.state import Walk  # noqa: E402
from sitewalk.tickets import TICKET, Ticket  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Hashable

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.internet.defer import Deferred
    from twisted.internet.interfaces import IStreamClientEndpoint
    from twisted.web._newclient import HTTP11ClientProtocol

    from sitewalk.gate import Gate

__all__ = ["REUSED", "WalkHTTPDownloadHandler"]

_UNANSWERED = (RequestNotSent, RequestTransmissionFailed, ResponseNeverReceived)
# Meta key: whether the request went out on a kept-alive connection used before (not a fresh one).
REUSED = "sitewalk_reused_connection"
# The meta of the request being handed to the connection pool now.
_SENDING: ContextVar[dict[str, Any] | None] = ContextVar("sitewalk_sending", default=None)


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
        # Scrapy's pool is a private attribute, and no setting reaches the pool's own re-send, nor
        # says which connection a request went out on.
        self._pool.retryAutomatically = False
        self._pool.getConnection = _marking(self._pool.getConnection)  # type: ignore[method-assign]

    async def download_request(self, request: Request) -> Response:
        try:
            return await self._download(request)
        except DownloadFailedError as exc:
            if not _may_send_again(request, exc):
                raise
        try:
            gate: Gate | None = Walk.of(self._crawler).gate
        except NotConfigured:
            gate = None  # another spider's crawl: sent again at once, as Twisted would
        if gate is not None:
            await gate.start(request.meta)
        request.meta["sitewalk_resent"] = True
        self._crawler.stats.inc_value("sitewalk/download/resent")
        return await self._download(request)

    async def _download(self, request: Request) -> Response:
        ticket = request.meta.get(TICKET)
        # The pool is asked for a connection as the download starts, in this context (a task
        # started here copies it).
        sending = _SENDING.set(request.meta)
        try:
            download = super().download_request(request)
            if not isinstance(ticket, Ticket):
                return await download
            return await ticket.unless_dropped(download)
        finally:
            _SENDING.reset(sending)


def _marking(get_connection: Any) -> Any:
    """``HTTPConnectionPool.getConnection``, which also marks the request being sent with
    whether its connection is a reused one: the pool hands a cached connection in a Deferred that
    has fired with it, a new one in a Deferred still waiting for the connection (it may have
    fired already, its address known at once, and be paused on the connect)."""

    def getConnection(key: Hashable, endpoint: IStreamClientEndpoint) -> Deferred[HTTP11ClientProtocol]:  # noqa: N802 - Twisted's name
        connection: Deferred[HTTP11ClientProtocol] = get_connection(key, endpoint)
        meta = _SENDING.get()
        if meta is not None:
            meta[REUSED] = connection.called and not connection.paused
        return connection

    return getConnection


def _may_send_again(request: Request, exc: DownloadFailedError) -> bool:
    """Whether ``request`` got no answer because the reused connection it went out on closed,
    and may go once more.
    (Scrapy re-raises Twisted's client errors as DownloadFailedError, the original as the cause.)"""
    cause = exc.__cause__
    if not isinstance(cause, _UNANSWERED) or request.meta.get("sitewalk_resent") or not request.meta.get(REUSED):
        return False
    if request.method not in ("GET", "HEAD") or request.body:
        return False
    return all(reason.check(ConnectionClosed) for reason in getattr(cause, "reasons", []))
