"""Links and title of an HTML page, by the rules a browser uses to resolve them."""

from __future__ import annotations

from urllib.parse import urljoin

from lxml import etree
from w3lib.url import safe_url_string

__all__ = ["page_links", "page_title"]

_STRIP = " \t\n\r\f"
_REMOVE = str.maketrans("", "", "\t\n\r")


def page_title(root: etree._Element) -> str | None:
    """The text of the document's first ``<title>``, whitespace collapsed; None when absent or empty."""
    for title in root.iter("title"):
        text = " ".join("".join(title.itertext()).split())
        return text or None
    return None


def page_links(root: etree._Element, url: str) -> list[str]:
    """Absolute http(s) URLs of the page's ``<a href>`` and ``<area href>``, in document order.

    Resolved against the first ``<base href>`` (or ``url``), fragments dropped, ``rel=nofollow``
    links and pages with ``<meta name=robots content=nofollow>`` yield nothing. Duplicates are kept:
    the frontier decides what is new. No filtering by file extension.
    """
    base = url
    for element in root.iter("base", "meta"):
        if element.tag == "base":
            href = element.get("href")
            if href is not None and base is url:
                base = urljoin(url, _clean(href))
        elif (element.get("name") or "").lower() == "robots":
            directives = {d.strip().lower() for d in (element.get("content") or "").split(",")}
            if directives & {"nofollow", "none"}:
                return []
    links = []
    for element in root.iter("a", "area"):
        href = element.get("href")
        if href is None:
            continue
        rel = element.get("rel")
        if rel and "nofollow" in rel.lower().split():
            continue
        absolute = urljoin(base, _clean(href))
        scheme, sep, _ = absolute.partition(":")
        if not sep or scheme.lower() not in ("http", "https"):
            continue
        links.append(safe_url_string(absolute.partition("#")[0]))
    return links


def _clean(href: str) -> str:
    # The URL parser strips leading/trailing C0 space and drops tabs and newlines anywhere.
    return href.strip(_STRIP).translate(_REMOVE)
