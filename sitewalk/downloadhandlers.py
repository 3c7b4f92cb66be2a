"""The HTTP download handler of the walk: Scrapy's HTTP/1.1 handler, imported cheaply."""

from __future__ import annotations

from sitewalk._startup import import_http11_handler

import_http11_handler()

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler  # noqa: E402 - imported cheaply above

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
    """
