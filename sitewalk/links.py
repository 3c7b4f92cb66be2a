"""Links and title of an HTML page, parsed and resolved by the rules a browser uses.

The page is parsed with lexbor (selectolax), an HTML5 parser in C, and each link is resolved with
ada, a WHATWG URL parser in C: on a link-heavy site these two steps are most of the walk's own
work, and both are several times faster than lxml and ``urljoin`` + ``safe_url_string`` while
following the HTML and URL standards exactly (whitespace stripped, tabs and newlines dropped,
percent-encoding, dot segments, default ports and host case normalised).
"""

from __future__ import annotations

import ada_url
from ada_url._ada_wrapper import ffi, lib
from selectolax.lexbor import LexborHTMLParser

__all__ = ["UTF8_CHARSETS", "normalize", "page_links", "page_title", "parse_html"]

# Charsets whose bytes lexbor parses as they are (it reads UTF-8); pages in others are decoded first.
UTF8_CHARSETS = frozenset({"utf-8", "utf8", "ascii", "us-ascii"})

_join = ada_url.join_url
# ada's C API, called directly in the per-link loop: ada_url.join_url wraps each call in a
# garbage-collected handle and error handling that cost twice the parsing itself.
_parse_with_base = lib.ada_parse_with_base
_is_valid = lib.ada_is_valid
_get_href = lib.ada_get_href
_free = lib.ada_free
_unpack = ffi.unpack
# Links a crawler may follow (the rel test in the selector saves a Python call per link), and the
# elements that change how they are followed: one pass over the document finds them all, in order.
_FOLLOWED = 'a[href]:not([rel~="nofollow" i]), area[href]:not([rel~="nofollow" i])'
_LINK_ELEMENTS = f"meta[name], base[href], {_FOLLOWED}"
_NOFOLLOW = frozenset({"nofollow", "none"})


def parse_html(body: bytes | str) -> LexborHTMLParser:
    return LexborHTMLParser(body)


def normalize(url: str) -> str:
    """``url`` in the form the walk compares URLs in (WHATWG serialisation, no fragment)."""
    return ada_url.normalize_url(url).partition("#")[0]


def page_title(tree: LexborHTMLParser) -> str | None:
    """The text of the document's first ``<title>``, whitespace collapsed; None when absent or empty."""
    title = tree.css_first("title")
    if title is None:
        return None
    return " ".join(title.text(deep=True).split()) or None


def page_links(tree: LexborHTMLParser, url: str) -> list[str]:
    """Absolute http(s) URLs of the page's ``<a href>`` and ``<area href>``, in document order.

    Resolved against the first ``<base href>`` (or ``url``), normalised, fragments dropped;
    ``rel=nofollow`` links and pages with ``<meta name=robots content=nofollow>`` yield nothing.
    Each ``href`` is resolved once per page, without its fragment (a ``#`` always starts the
    fragment, so ``a.html#x`` and ``a.html#y`` are one URL, resolved once), and links back to the
    page itself (``#section``, an empty href) are skipped, so the list may repeat a URL only when
    two spellings resolve to it: the frontier decides what is new. No filtering by file extension.
    """
    # Each href once, without its fragment, in document order; the first <base href> applies to
    # every link, including those before it.
    hrefs: dict[str, None] = {}
    base_href: str | None = None
    for element in tree.css(_LINK_ELEMENTS):
        tag = element.tag
        if tag == "meta":
            if (element.attributes.get("name") or "").lower() == "robots":
                directives = {d.strip().lower() for d in (element.attributes.get("content") or "").split(",")}
                if directives & _NOFOLLOW:
                    return []
            continue
        href = element.attrs["href"] or ""
        if tag == "base":
            if base_href is None:
                base_href = href
            continue
        cut = href.find("#")
        hrefs[href if cut < 0 else href[:cut]] = None
    base = url
    if base_href is not None:
        try:
            base = _join(url, base_href)
        except ValueError:
            base = url
    same_document = base is url
    base_bytes = base.encode()
    base_length = len(base_bytes)
    links: list[str] = []
    append = links.append
    for href in hrefs:
        if same_document and not href.strip():
            continue  # this page itself: already known
        try:
            href_bytes = href.encode()
        except UnicodeEncodeError:  # lone surrogates: not a URL a browser could request
            continue
        parsed = _parse_with_base(href_bytes, len(href_bytes), base_bytes, base_length)
        try:
            if not _is_valid(parsed):  # not a valid URL: a browser would not follow it either
                continue
            serialized = _get_href(parsed)
            absolute = _unpack(serialized.data, serialized.length).decode()
        finally:
            _free(parsed)
        if absolute.startswith(("http://", "https://")):
            append(absolute)
    return links
