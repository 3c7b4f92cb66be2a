"""Conditional requests: a page the walk's state knows is asked for only if it changed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from sitewalk.extensions import WalkMemory
from sitewalk.kinds import VALIDATED, Kind, kind_of
from sitewalk.state import WalkComponent

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

__all__ = ["ValidatorsMiddleware"]


class ValidatorsMiddleware(WalkComponent):
    """With ``state``: a page request (a redirect hop included) for a URL the state knows as a
    page's final URL sends that page's validators, ``If-None-Match`` (its ``ETag``) and
    ``If-Modified-Since`` (its ``Last-Modified``), unless the request has them already; meta
    :data:`~sitewalk.kinds.VALIDATED` names the page. A 304 answer then reaches the spider as
    that page, unchanged (``HTTPERROR_ALLOW_ALL``), with no body to decompress: a
    ``Content-Encoding`` header on it is dropped before Scrapy's decompression sees it.

    Stats: ``sitewalk/state/conditional`` (requests sent with validators),
    ``sitewalk/state/not_modified`` (answered 304).
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        memory = crawler.get_extension(WalkMemory)
        if memory is None:
            raise NotConfigured
        self._memory = memory.memory

    def process_request(self, request: Request) -> None:
        if kind_of(request.meta) is not Kind.PAGE:
            return
        if request.meta.pop(VALIDATED, None) is not None:
            # A redirect hop copies its request's headers: the validators were the previous URL's.
            for header in (b"If-None-Match", b"If-Modified-Since"):
                request.headers.pop(header, None)
        known = self._memory.known(request.url)
        validators = known.validators() if known is not None else {}
        if known is None or not validators or any(name in request.headers for name in validators):
            return
        for name, value in validators.items():
            request.headers[name] = value.encode("latin-1")
        request.meta[VALIDATED] = known.url
        self.crawler.stats.inc_value("sitewalk/state/conditional")

    def process_response(self, request: Request, response: Response) -> Response:
        if response.status == 304 and request.meta.get(VALIDATED) is not None:
            self.crawler.stats.inc_value("sitewalk/state/not_modified")
            if b"Content-Encoding" in response.headers:
                # A 304 has no body (RFC 9110): its Content-Encoding describes the page it stands for.
                del response.headers[b"Content-Encoding"]
        return response
