"""The one exception family a sitewalk user sees."""

from __future__ import annotations

__all__ = ["SeedError", "SitewalkError"]


class SitewalkError(Exception):
    """A walk could not be set up or run; the message is one line naming the input and the fix."""


class SeedError(SitewalkError):
    """The page the caller named could not be fetched, so there is no walk to report."""
