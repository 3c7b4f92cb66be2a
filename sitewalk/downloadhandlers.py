"""The HTTP download handler of the walk: Scrapy's HTTP/1.1 handler, imported cheaply."""

from __future__ import annotations

from sitewalk._startup import import_http11_handler

import_http11_handler()

from typing import TYPE_CHECKING  # noqa: E402

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler  # noqa: E402 - imported cheaply above

from sitewalk.tickets import TICKET, Ticket  # noqa: E402

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response

__all__ = ["WalkHTTPDownloadHandler"]


class WalkHTTPDownloadHandler(HTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 handler, with Twisted's re-send of a request a reused connection lost.

    Servers close kept-alive connections whenever they like (an idle timeout, an HTTP/1.0
    server), and a request sent on one the server had just closed fails before any response.
    Twisted's connection pool then sends it once more on a new connection
    (``HTTPConnectionPool.retryAutomatically``, on by default): only a GET-like request without
    a body, only on a reused connection, and only when no byte of a response arrived
    (``ResponseNeverReceived``), so a page the server answered is never requested twice. The
    class exists so that this module, which imports the handler without its start-up cost, is
    what ``DOWNLOAD_HANDLERS`` names.

    A request the walk drops (:meth:`sitewalk.gate.Gate.cut`: a stop, the deadline, an
    interruption) has its download cut: it fails with :class:`sitewalk.tickets.Dropped`, and the
    page is listed as unvisited.
    """

    async def download_request(self, request: Request) -> Response:
        ticket = request.meta.get(TICKET)
        download = super().download_request(request)
        if not isinstance(ticket, Ticket):
            return await download
        return await ticket.unless_dropped(download)
