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

# Scrapy raises IgnoreRequest from this private exception when a body grows past the download
# size limit while it is decompressed; no public exception tells that case apart.
from scrapy.utils._compression import _DecompressionMaxSizeExceeded
from twisted.internet import error as twisted_errors
from twisted.internet.defer import CancelledError

# Twisted defines this failure of its HTTP client only in a private module; no public name has it.
from twisted.web._newclient import ResponseNeverReceived

if TYPE_CHECKING:
    from scrapy import Request
    from twisted.python.failure import Failure

    from sitewalk.state import Budget

__all__ = ["OffOrigin", "Refused", "RobotsDisallowed", "RobotsUnreachable", "cut_off", "describe"]


class RobotsDisallowed(IgnoreRequest):
    """robots.txt does not allow the page."""


class RobotsUnreachable(IgnoreRequest):
    """The host's robots.txt could not be read, which RFC 9309 treats as disallowing everything."""


class OffOrigin(IgnoreRequest):
    """A redirect left the walk's origin."""


class Refused(IgnoreRequest):
    """The address guard refused the address the request would connect to."""


def cut_off(failure: Failure, request: Request, budget: Budget) -> tuple[str, str] | None:
    """If the walk's budget cut this download short: the stop reason and the page's failure."""
    if failure.check(DownloadTimeoutError, twisted_errors.TimeoutError) and budget.seconds_left() <= 0.05:
        return "deadline", f"cut off at the deadline (deadline={budget.deadline:g}s)"
    exc = failure.value
    if request.meta.get("sitewalk_budget_maxsize") and (
        failure.check(DownloadCancelledError, CancelledError)
        or (isinstance(exc, IgnoreRequest) and isinstance(exc.__cause__, _DecompressionMaxSizeExceeded))
    ):
        left = budget.bytes_left()
        return "max-bytes", f"cut off at max_bytes (max_bytes={budget.max_bytes}, {left} left for this page)"
    return None


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
