"""The one exception family a sitewalk user sees."""

from __future__ import annotations

__all__ = ["SeedError", "SitewalkError"]


class SitewalkError(Exception):
    """A walk could not be set up or run; the message is one line naming the input and the fix."""


class SeedError(SitewalkError):
    """The page the caller named could not be fetched, so there is no walk to report.

    ``url`` is the seed, ``kind`` what went wrong (one of :data:`sitewalk.failures.KINDS`:
    ``refused``, ``dns``, ``guard``, ``timeout``, ``robots``, ...), ``reason`` the same in words;
    ``fix`` the Scrapy setting and value that would let it through, where one would.
    """

    def __init__(
        self, message: str, *, url: str, kind: str, reason: str, fix: tuple[str, object] | None = None
    ) -> None:
        super().__init__(message)
        self.url = url
        self.kind = kind
        self.reason = reason
        self.fix = fix
