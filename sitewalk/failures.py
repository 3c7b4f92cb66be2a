"""Why a page could not be fetched: a short reason a person can read, and a kind a program can use.

Every failure record (``Report.failures``, the report's ``error``) has a ``url``, a ``kind`` and
a ``reason``. The kinds, a fixed vocabulary (:data:`KINDS`), each set where the failure is
detected (the walk's own exceptions carry theirs; Scrapy's download errors are told apart by type):

- ``network``: the connection broke (closed or reset before the response ended)
- ``timeout``: no whole response within the request's download timeout
- ``dns``: the host name has no address
- ``refused``: the connection was refused (nothing listens on the port)
- ``protocol``: the server's answer is not valid HTTP (a garbage status line, a bad header)
- ``guard``: the address guard refused the address (not a public one, not allowed)
- ``redirect-loop``: a redirect led back to a URL of its own chain
- ``too-many-redirects``: a chain longer than ``REDIRECT_MAX_TIMES``
- ``off-origin``: a redirect left the walk's origin
- ``robots``: the seed's robots.txt disallows it or could not be read (answered 5xx)
- ``budget``: the walk's deadline or max_bytes cut the download off
- ``too-large``: the body grew past ``DOWNLOAD_MAXSIZE``
- ``read``: the page was fetched but could not be read (its links are not followed)
- ``render``: the page was fetched but not rendered: the browser did not start, or gave no DOM
  within ``SITEWALK_RENDER_TIMEOUT`` (``render``)
- ``consumer``: a consumer (a pipeline, a spider middleware) raised on the page
- ``other``: anything else; the reason names the exception

An HTTP error status is not a failure: the page was fetched, with that status.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from OpenSSL.SSL import Error as TLSError
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
)
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import error as twisted_errors
from twisted.internet.defer import CancelledError
from twisted.web.client import ResponseFailed, ResponseNeverReceived

from sitewalk._compat import BadResponseVersion, DataLoss, DecompressionMaxSizeExceeded, ParseError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy import Request
    from twisted.python.failure import Failure

    from sitewalk.hints import Surface

__all__ = [
    "KINDS", "HOST_KINDS", "Failed", "OffOrigin", "PageFailure", "Refused", "RenderFailed", "RobotsDisallowed",
    "RobotsUnreachable", "WalkFailure",
    "describe", "timed_out", "too_large",
]

KINDS = frozenset({
    "network", "timeout", "dns", "refused", "protocol", "guard", "redirect-loop", "too-many-redirects",
    "off-origin", "robots", "budget", "too-large", "read", "render", "consumer", "other",
})
# Kinds that say the host cannot be reached at all, whichever of its URLs is asked for.
HOST_KINDS = frozenset({"dns", "refused", "guard"})


class Failed(NamedTuple):
    """Why a request failed: its ``kind`` (one of :data:`KINDS`), the ``reason`` in words, and the
    Scrapy setting and value that would let it through, if one would (``fix``)."""

    kind: str
    reason: str
    fix: tuple[str, object] | None = None

    def seed_message(self, url: str, surface: Surface) -> str:
        """The one line a seed that failed so is reported with, naming the fix in ``surface``'s words."""
        message = f"{surface.name('seed')} {url} could not be fetched: {self.reason}"
        return message if self.fix is None else f"{message}; {surface.fix(*self.fix)}"


@dataclass(frozen=True)
class PageFailure:
    """A page of the walk that failed: its ``url``, the page it was ``found_on``, and why (the
    ``kind`` and ``reason`` of its :class:`Failed`)."""

    url: str
    kind: str
    reason: str
    found_on: str | None

    @classmethod
    def of(cls, url: str, found_on: str | None, failed: Failed) -> PageFailure:
        return cls(url, failed.kind, failed.reason, found_on)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> PageFailure:
        """The failure a record (:meth:`record`, from a JOBDIR journal) holds."""
        return cls(record["url"], record["kind"], record["reason"], record.get("found_on"))

    def record(self) -> dict[str, str | None]:
        """The failure record, as reports and the journal hold it."""
        return {"url": self.url, "kind": self.kind, "reason": self.reason, "found_on": self.found_on}


class WalkFailure(IgnoreRequest):
    """A failure the walk's own components detect; ``kind`` says which (see :data:`KINDS`)."""

    kind = "other"
    fix: tuple[str, object] | None = None


class RobotsDisallowed(WalkFailure):
    """robots.txt does not allow the page."""

    kind = "robots"
    fix = ("ROBOTSTXT_OBEY", False)


class RobotsUnreachable(WalkFailure):
    """The host's robots.txt could not be read, which RFC 9309 treats as disallowing everything;
    ``failed`` is why (a 5xx answer is kind ``robots``, a failed fetch the kind of its failure)."""

    def __init__(self, failed: Failed) -> None:
        super().__init__(f"robots.txt could not be fetched ({failed.reason})")
        self.failed = failed
        self.kind = failed.kind
        self.fix = failed.fix


class OffOrigin(WalkFailure):
    """A redirect left the walk's origin."""

    kind = "off-origin"


class RenderFailed(WalkFailure):
    """The browser gave no DOM of a fetched page (``render``)."""

    kind = "render"


class Refused(WalkFailure):
    """The address guard refused ``address``, the address the request would connect to."""

    kind = "guard"

    def __init__(self, reason: str, address: str) -> None:
        super().__init__(reason)
        self.address = address
        self.fix = ("SITEWALK_GUARD_ALLOW_NETWORKS", address)


def timed_out(failure: Failure) -> bool:
    """Whether the download ended at its timeout."""
    return bool(failure.check(DownloadTimeoutError, twisted_errors.TimeoutError))


def too_large(failure: Failure) -> bool:
    """Whether the download was cut at its size limit."""
    exc = failure.value
    return bool(failure.check(DownloadCancelledError, CancelledError)) or (
        isinstance(exc, IgnoreRequest) and isinstance(exc.__cause__, DecompressionMaxSizeExceeded)
    )


def describe(failure: Failure, request: Request) -> Failed:
    """The kind and the one-line reason of ``failure``, without a traceback."""
    exc = failure.value
    if isinstance(exc, WalkFailure):
        return Failed(exc.kind, str(exc), exc.fix)
    if isinstance(exc, (DownloadTimeoutError, twisted_errors.TimeoutError)):
        return Failed("timeout", f"timed out after {request.meta.get('download_timeout', 0):g}s")
    if isinstance(exc, (DownloadConnectionRefusedError, twisted_errors.ConnectionRefusedError)):
        return Failed("refused", "connection refused")
    if isinstance(exc, (CannotResolveHostError, twisted_errors.DNSLookupError)):
        return Failed("dns", f"DNS lookup failed: no address for {urlparse_cached(request).hostname}")
    if request.meta.get("download_maxsize") and too_large(failure):
        return Failed("too-large", f"larger than the download size limit (DOWNLOAD_MAXSIZE={request.meta.get('download_maxsize')})")
    if type(exc) is IgnoreRequest and request.meta.get("redirect_ttl") == 0:
        # Scrapy's RedirectMiddleware raises a bare IgnoreRequest when a chain has used up its
        # redirect_ttl (REDIRECT_MAX_TIMES): the meta key says so, whatever the message.
        hops = request.meta.get("redirect_times", 0)
        return Failed("too-many-redirects", f"more than {hops} redirects (REDIRECT_MAX_TIMES={hops})")
    if isinstance(exc, (ResponseDataLossError, twisted_errors.ConnectionLost, twisted_errors.ConnectionDone)):
        return Failed("network", "connection closed before the response ended")
    # Scrapy 2.19 re-raises Twisted's client errors as DownloadFailedError, the original as the cause.
    cause = exc.__cause__ if isinstance(exc, DownloadFailedError) else exc
    if isinstance(cause, ResponseFailed):
        return _response_failed(cause)
    text = str(exc)
    return Failed("other", f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


def _response_failed(exc: ResponseFailed) -> Failed:
    """Twisted's HTTP client failed: the first of its reasons that says why, in words."""
    for reason in exc.reasons:
        value = reason.value
        if isinstance(value, BadResponseVersion):
            return Failed("protocol", f"invalid HTTP version {_text(value.args[-1])!r} in the status line")
        if isinstance(value, ParseError):
            return Failed("protocol", f"invalid HTTP status line {_text(value.args[-1])!r}")
        if isinstance(value, TLSError):
            return Failed("protocol", f"TLS failed: {value}")
        if isinstance(value, (twisted_errors.ConnectionDone, twisted_errors.ConnectionLost, DataLoss)):
            continue  # the close that ended the response; another reason may say more
        return Failed("protocol", f"invalid HTTP response ({type(value).__name__}: {value})")
    if isinstance(exc, ResponseNeverReceived):
        return Failed("network", "connection closed before a response arrived")
    return Failed("network", "connection closed before the response ended")


def _text(value: object) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)
