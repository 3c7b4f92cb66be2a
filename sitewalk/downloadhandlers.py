"""The HTTP download handler of the walk: Scrapy's HTTP/1.1 handler, each request sent once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitewalk._startup import import_http11_handler

import_http11_handler()

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler  # noqa: E402 - imported cheaply above

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["WalkHTTPDownloadHandler"]


class WalkHTTPDownloadHandler(HTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 handler without Twisted's silent retry.

    Twisted's connection pool re-sends a GET that failed on a reused keep-alive connection
    (``HTTPConnectionPool.retryAutomatically``); the walk requests each page once, so a failure
    there is a failure of that page, not a second request the caller did not ask for.
    """

    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        # Scrapy's handler has no setting for it: its private pool is the only place to say so.
        self._pool.retryAutomatically = False
