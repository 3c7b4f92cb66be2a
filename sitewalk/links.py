"""Links and title of an HTML page, parsed and resolved by the rules a browser uses.

The page is parsed with lexbor (selectolax), an HTML5 parser in C, and each link is resolved with
ada, a WHATWG URL parser in C: on a link-heavy site these two steps are most of the walk's own
work, and both are several times faster than lxml and ``urljoin`` + ``safe_url_string`` while
following the HTML and URL standards exactly (whitespace stripped, tabs and newlines dropped,
percent-encoding, dot segments, default ports and host case normalised). As a browser does
(the URL standard's "encoding-parse"), the query of a link on a page in another encoding than
UTF-8 is percent-encoded in the page's encoding; the path is always UTF-8.
"""

from __future__ import annotations

import codecs
import re

import ada_url
from selectolax.lexbor import LexborHTMLParser

# ada's C API, called directly in the per-link loop: ada_url.join_url wraps each call in a
# garbage-collected handle and error handling that cost twice the parsing itself.
from sitewalk._compat import ada_free as _free
from sitewalk._compat import ada_get_href as _get_href
from sitewalk._compat import ada_is_valid as _is_valid
from sitewalk._compat import ada_parse_with_base as _parse_with_base
from sitewalk._compat import ada_unpack as _unpack

__all__ = ["UTF8_CHARSETS", "normalize", "page_links", "page_title", "parse_html"]

# Charsets whose bytes lexbor parses as they are (it reads UTF-8); pages in others are decoded first.
UTF8_CHARSETS = frozenset({"utf-8", "utf8", "ascii", "us-ascii"})

_join = ada_url.join_url
# Links a crawler may follow (the rel test in the selector saves a Python call per link), and the
# elements that change how they are followed: one pass over the document finds them all, in order.
_FOLLOWED = 'a[href]:not([rel~="nofollow" i]), area[href]:not([rel~="nofollow" i])'
_LINK_ELEMENTS = f"meta[name], base[href], {_FOLLOWED}"
_NOFOLLOW = frozenset({"nofollow", "none"})
# Encodings whose pages' URLs are encoded in UTF-8 all through (the URL standard: UTF-16 too).
_UTF8_URLS = frozenset({"utf-8", "utf-16", "utf-16-le", "utf-16-be"})
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
# Bytes of an encoded query left as they are: printable ASCII outside the query percent-encode set.
_QUERY_SAFE = frozenset(range(0x21, 0x7F)) - frozenset(b"\"#<>'")


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


def page_links(tree: LexborHTMLParser, url: str, encoding: str | None = None) -> list[str]:
    """Absolute http(s) URLs of the page's ``<a href>`` and ``<area href>``, in document order
    (an ``<a>`` in SVG or MathML too; in SVG, ``xlink:href`` where ``href`` is absent).

    Resolved against the first ``<base href>`` (or ``url``), normalised, fragments dropped; the
    query of a non-ASCII href percent-encoded in the page's ``encoding`` (a Python codec name;
    None for UTF-8);
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
        # In SVG, a link is <a href> or (SVG 1.1) <a xlink:href>: lexbor's [href] matches both.
        attributes = element.attributes
        href = attributes.get("href")
        if href is None:
            href = attributes.get("xlink:href")
        href = href or ""
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
    query_encoding = _query_encoding(encoding)
    for href in hrefs:
        if same_document and not href.strip():
            continue  # this page itself: already known
        if query_encoding is not None and not href.isascii():
            href = _encode_query(href, query_encoding)
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


def _query_encoding(encoding: str | None) -> str | None:
    """The codec a page's link queries are encoded in, when it is not UTF-8 (nor unknown)."""
    if encoding is None:
        return None
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return None
    return None if name in _UTF8_URLS else name


def _encode_query(href: str, encoding: str) -> str:
    """``href`` with the non-ASCII characters of its query percent-encoded in ``encoding``; a
    character the encoding lacks becomes ``%26%23<code point>%3B`` (``&#N;``), as the URL
    standard's "percent-encode after encoding" says. ada then encodes the rest as UTF-8.

    (w3lib's ``safe_url_string(url, encoding)`` makes the same split but raises
    UnicodeEncodeError for a character the encoding lacks.)
    """
    cut = href.find("?")
    if cut < 0:
        return href
    return href[: cut + 1] + _NON_ASCII.sub(lambda run: _encode_run(run.group(), encoding), href[cut + 1 :])


def _encode_run(text: str, encoding: str) -> str:
    try:
        data = text.encode(encoding)
    except UnicodeEncodeError:
        if len(text) == 1:
            return f"%26%23{ord(text)}%3B"
        return "".join(_encode_run(character, encoding) for character in text)
    return "".join(chr(byte) if byte in _QUERY_SAFE else f"%{byte:02X}" for byte in data)
