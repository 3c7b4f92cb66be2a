"""Redirects: Scrapy's middleware, keeping the Referer of the request a hop replaces."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.redirect import RedirectMiddleware

if TYPE_CHECKING:
    from scrapy.http import Request, Response

__all__ = ["WalkRedirectMiddleware"]


class WalkRedirectMiddleware(RedirectMiddleware):
    """Scrapy's redirect middleware, except that a redirect hop keeps the ``Referer`` of the
    request it replaces (the page that linked to it, as a browser keeps it); Scrapy's would name
    the redirecting URL."""

    def handle_referer(self, request: Request, response: Response) -> None:
        pass
