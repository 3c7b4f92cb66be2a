"""Why a page could not be fetched, as one short reason a person can act on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
)
from twisted.internet import error as twisted_errors
from twisted.web._newclient import ResponseNeverReceived

if TYPE_CHECKING:
    from scrapy import Request
    from twisted.python.failure import Failure

__all__ = ["OffOrigin", "Refused", "RobotsDisallowed", "describe", "is_robots_refusal"]


class RobotsDisallowed(IgnoreRequest):
    """robots.txt does not allow the page, or could not be read (``unreachable``), which RFC 9309
    treats as disallowing everything."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


class OffOrigin(IgnoreRequest):
    """A redirect left the walk's origin."""


class Refused(IgnoreRequest):
    """The address guard refused the address the request would connect to."""


def is_robots_refusal(failure: Failure) -> bool:
    return failure.check(RobotsDisallowed) is not None


def describe(failure: Failure, request: Request) -> str:
    """A one-line reason for ``failure``, without a traceback."""
    exc = failure.value
    if isinstance(exc, IgnoreRequest) and str(exc):
        return str(exc)
    if isinstance(exc, (DownloadTimeoutError, twisted_errors.TimeoutError)):
        return f"timed out after {request.meta.get('download_timeout', 0):g}s"
    if isinstance(exc, (DownloadConnectionRefusedError, twisted_errors.ConnectionRefusedError)):
        return "connection refused"
    if isinstance(exc, (CannotResolveHostError, twisted_errors.DNSLookupError)):
        return f"DNS lookup failed for {request.url.split('/')[2]}"
    if isinstance(exc, ResponseNeverReceived):
        return "connection closed before a response arrived"
    if isinstance(exc, (ResponseDataLossError, twisted_errors.ConnectionLost)):
        return "connection lost before the whole response arrived"
    if isinstance(exc, (DownloadCancelledError, DownloadFailedError)) and str(exc):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
