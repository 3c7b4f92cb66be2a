"""A page's own indexing signals: the URL it names as its original, and the robots directives
(``noindex``, ``nofollow``) of its ``<meta name=robots>`` and ``X-Robots-Tag`` header."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

import ada_url

if TYPE_CHECKING:
    from collections.abc import Mapping

    from selectolax.lexbor import LexborHTMLParser

__all__ = ["IndexingSignals", "indexing_signals"]


class IndexingSignals(NamedTuple):
    """What a page says of its own indexing: the URL it names as its original (``canonical``,
    resolved), whether an index should leave it out (``noindex``) and whether its links are not to
    be followed (``nofollow``)."""

    canonical: str | None = None
    noindex: bool = False
    nofollow: bool = False


def indexing_signals(tree: LexborHTMLParser | None, url: str, headers: Mapping[str, str]) -> IndexingSignals:
    """The page's :class:`IndexingSignals`, from its HTML (``tree``; None for a page that is not
    HTML) and its response ``headers``.

    ``canonical``: the first ``<link rel=canonical href>`` (resolved against the page's ``<base
    href>``, else ``url``), else the ``Link`` header's ``rel="canonical"`` (resolved against
    ``url``); fragment dropped, on any origin; None when neither names a valid http(s) URL.
    ``noindex`` and ``nofollow``: ``<meta name=robots>`` and the ``X-Robots-Tag`` header
    directives addressed to every crawler (a directive for one crawler, ``googlebot: noindex``,
    is that crawler's); ``none`` is both.
    """
    directives: set[str] = set()
    canonical = None
    if tree is not None:
        for meta in tree.css('meta[name="robots" i][content]'):
            directives.update(d.strip().lower() for d in (meta.attributes.get("content") or "").split(","))
        link = tree.css_first('link[rel~="canonical" i][href]')
        if link is not None:
            base = tree.css_first("base[href]")
            canonical = _resolved(link.attributes.get("href") or "", url,
                                  base.attributes.get("href") if base is not None else None)
    for name, value in headers.items():
        lowered = name.lower()
        if lowered == "x-robots-tag":
            directives.update(_header_directives(value))
        elif lowered == "link" and canonical is None:
            canonical = _link_header_canonical(value, url)
    if "none" in directives:
        directives |= {"noindex", "nofollow"}
    return IndexingSignals(canonical, "noindex" in directives, "nofollow" in directives)


def _header_directives(value: str) -> set[str]:
    """The directives of an ``X-Robots-Tag`` value addressed to every crawler: several headers are
    joined by commas, and a ``name:`` before a directive addresses it (and those after it) to one."""
    directives: set[str] = set()
    everyone = True
    for part in value.split(","):
        word = part.strip().lower()
        head, colon, rest = word.partition(":")
        if colon and head.strip() not in _TIMED_DIRECTIVES:
            # "googlebot: noindex": the directives from here on are googlebot's.
            everyone, word = False, rest.strip()
        if everyone and word:
            directives.add(word.partition(":")[0].strip())
    return directives


# Directives whose value follows a colon (unavailable_after: date...), not a crawler's name.
_TIMED_DIRECTIVES = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})
_LINK_VALUE = re.compile(r'<([^>]*)>((?:\s*;\s*[^;,<]*(?:"[^"]*")?)*)')
_CANONICAL_REL = re.compile(r'(?:^|;)\s*rel\s*=\s*"?[^";]*\bcanonical\b', re.IGNORECASE)


def _link_header_canonical(value: str, url: str) -> str | None:
    """The target of the first ``rel="canonical"`` in a ``Link`` header value (RFC 8288)."""
    for found in _LINK_VALUE.finditer(value):
        if _CANONICAL_REL.search(found.group(2)):
            return _resolved(found.group(1), url, None)
    return None


def _resolved(href: str, url: str, base_href: str | None) -> str | None:
    try:
        base = ada_url.join_url(url, base_href) if base_href is not None else url
        absolute = ada_url.join_url(base, href.strip())
    except ValueError:
        return None
    return absolute.partition("#")[0] if absolute.startswith(("http://", "https://")) else None
