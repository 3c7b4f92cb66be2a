"""The text of a page as a person reads it, line by line: what the grep consumer searches."""

from __future__ import annotations

from typing import TYPE_CHECKING

from parsel import Selector

if TYPE_CHECKING:
    from lxml import etree

    from sitewalk.items import Page

__all__ = ["page_lines", "plain_lines", "visible_lines"]

# Never rendered: their text is not part of what a reader sees.
_HIDDEN = frozenset({"head", "title", "script", "style", "noscript", "template"})
# Rendered as blocks (HTML's default style sheet): their start and end break the line.
_BLOCKS = frozenset({
    "address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "details",
    "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form",
    "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "html", "legend", "li", "listing",
    "main", "menu", "nav", "ol", "optgroup", "option", "p", "plaintext", "pre", "search", "section",
    "summary", "table", "tbody", "tfoot", "thead", "tr", "ul", "xmp",
})
# Table cells sit side by side: their texts are words apart, not glued together.
_CELLS = frozenset({"td", "th"})
# Whitespace inside these is kept as the author wrote it, so their newlines break lines.
_PREFORMATTED = frozenset({"pre", "listing", "plaintext", "xmp", "textarea"})
_TEXT_APPLICATION_TYPES = frozenset({"application/json", "application/xml", "application/javascript"})


def page_lines(page: Page) -> list[str] | None:
    """The lines grep searches in ``page``, or None when the page is not text.

    HTML pages give :func:`visible_lines`; ``text/*`` pages and JSON, XML or JavaScript give
    :func:`plain_lines` of the body; anything else (images, PDF, ``application/octet-stream``,
    or no Content-Type at all) is binary: None. The body is decoded with the charset the
    Content-Type declares, else a byte order mark or ``<meta charset>``, else UTF-8.
    """
    media_type = page.content_type
    if media_type is None:
        return None
    if page.is_html:
        return visible_lines(Selector(text=page.text, type="html").root)
    if (
        media_type.startswith("text/")
        or media_type in _TEXT_APPLICATION_TYPES
        or media_type.endswith(("+json", "+xml"))
    ):
        return plain_lines(page.text)
    return None


def plain_lines(text: str) -> list[str]:
    """The lines of a text file, numbered as an editor numbers them (empty lines kept).

    Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` only (a form feed or a Unicode line separator
    does not start a new line, unlike :meth:`str.splitlines`).
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def visible_lines(root: etree._Element) -> list[str]:
    """The visible text of an HTML document, one string per non-empty line.

    Text inside ``<head>``, ``<script>``, ``<style>``, ``<noscript>``, ``<template>``, elements
    with the ``hidden`` attribute, and comments is left out. Block elements (``<p>``, ``<div>``,
    ``<li>``, headings, table rows...) and ``<br>`` start a new line; table cells are separated
    by a space. Entities are decoded by the parser. In each line, runs of whitespace (non-breaking
    spaces included) become one space and the ends are trimmed, as a browser renders them;
    inside ``<pre>`` the author's newlines also start new lines. Lines left empty are dropped,
    so line numbers count the lines a reader sees.
    """
    text = _Lines()
    stack: list[tuple[etree._Element, bool]] = [(root, False)]
    # Iterative rather than recursive: a page nests elements as deep as it likes.
    while stack:
        node, closing = stack.pop()
        if closing:
            text.close(node.tag)
            text.add(node.tail)
            continue
        tag = node.tag
        if not isinstance(tag, str) or tag in _HIDDEN or node.get("hidden") is not None:
            # Comments and processing instructions (tag is not a string) and hidden
            # elements: nothing inside shows, what follows them does.
            text.add(node.tail)
            continue
        text.open(tag)
        text.add(node.text)
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(node))
    text.end_line()
    return text.lines


class _Lines:
    """Collects text pieces into normalised lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._pieces: list[str] = []
        self._preformatted = 0

    def open(self, tag: str) -> None:
        if tag in _BLOCKS or tag == "br":
            self.end_line()
        elif tag in _CELLS:
            self._pieces.append(" ")
        if tag in _PREFORMATTED:
            self._preformatted += 1

    def close(self, tag: str) -> None:
        if tag in _BLOCKS:
            self.end_line()
        if tag in _PREFORMATTED:
            self._preformatted -= 1

    def add(self, text: str | None) -> None:
        if not text:
            return
        if not self._preformatted:
            self._pieces.append(text)
            return
        first, *rest = text.split("\n")
        self._pieces.append(first)
        for piece in rest:
            self.end_line()
            self._pieces.append(piece)

    def end_line(self) -> None:
        line = " ".join("".join(self._pieces).split())
        if line:
            self.lines.append(line)
        self._pieces.clear()
