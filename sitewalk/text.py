"""The text of a page as a person reads it, line by line: what the grep consumer searches."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Protocol

from sitewalk.links import parse_html

if TYPE_CHECKING:
    from collections.abc import Iterable

    from selectolax.lexbor import LexborHTMLParser

__all__ = ["PageLike", "is_plain_text", "page_lines", "plain_lines", "visible_lines"]


class PageLike(Protocol):
    """What the text rules read of a page (:class:`sitewalk.items.Page` is one)."""

    content_type: str | None
    encoding: str | None
    body: bytes
    lines: list[str] | None

    @property
    def is_html(self) -> bool: ...

    @property
    def text(self) -> str: ...

    @property
    def tree(self) -> LexborHTMLParser | None: ...

# Rendered as blocks (HTML's default style sheet): their start and end break the line.
_BLOCKS = frozenset({
    "address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "details",
    "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form",
    "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "html", "legend", "li", "listing",
    "main", "menu", "nav", "ol", "optgroup", "option", "p", "plaintext", "pre", "search", "section",
    "summary", "table", "tbody", "tfoot", "thead", "tr", "ul", "xmp",
})
# Whitespace inside these is kept as the author wrote it, so their newlines break lines.
_PREFORMATTED = frozenset({"pre", "listing", "plaintext", "xmp", "textarea"})
_TEXT_APPLICATION_TYPES = frozenset({"application/json", "application/xml", "application/javascript"})
# A character no page text contains (Unicode private use) marks where a line ends.
_BREAK = "\ue000"
# Starts each line of a <pre>: its whitespace is the author's, kept but at the line's end.
_PRE_LINE = "\ue001"


def page_lines(page: PageLike) -> list[str] | None:
    """The lines grep searches in ``page``, or None when the page is not text.

    HTML pages give :func:`visible_lines` (of the tree the walk already parsed, when there is
    one); ``text/*`` pages and JSON, XML or JavaScript give :func:`plain_lines` of the body;
    anything else (images, ``application/octet-stream``, or no Content-Type at all) is
    binary: None, except a document (PDF) the walk read, whose lines are its text
    (:mod:`sitewalk.documents`). The body is decoded with the charset the Content-Type declares, else a byte
    order mark or ``<meta charset>``, else UTF-8.
    """
    if page.is_html:
        if page.lines is not None:
            return page.lines
        return visible_lines(page.tree if page.tree is not None else parse_html(page.text))
    if is_plain_text(page.content_type):
        return plain_lines(page.text)
    # A document's (a PDF's) text, when the walk read it (sitewalk.documents); else binary.
    return page.lines


def is_plain_text(media_type: str | None) -> bool:
    """Whether a page of this media type is text to read as it is (text/*, JSON, XML, JavaScript)."""
    return media_type is not None and (
        media_type.startswith("text/")
        or media_type in _TEXT_APPLICATION_TYPES
        or media_type.endswith(("+json", "+xml"))
    )


def plain_lines(text: str) -> list[str]:
    """The lines of a text file, numbered as an editor numbers them (empty lines kept).

    Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` only (a form feed or a Unicode line separator
    does not start a new line, unlike :meth:`str.splitlines`).
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def visible_lines(tree: LexborHTMLParser) -> list[str]:
    """The visible text of an HTML document, one string per non-empty line (changes ``tree``).

    Text inside ``<head>``, ``<script>``, ``<style>``, ``<noscript>``, ``<template>``, elements
    with the ``hidden`` attribute, and comments is left out. Block elements (``<p>``, ``<div>``,
    ``<li>``, headings, table rows...) and ``<br>`` start a new line; table cells are separated
    by a space. Entities are decoded by the parser. In each line, runs of whitespace (non-breaking
    spaces included) become one space and the ends are trimmed, as a browser renders them;
    inside ``<pre>`` the author's newlines also start new lines, and its lines keep their
    indentation and spacing (trailing whitespace trimmed). A heading's permalink (a link to its
    own ``#anchor`` whose text is only ``¶``, ``§``, ``#`` or ``🔗``, as Sphinx and others write
    them) is not text. Lines left empty are dropped, so line numbers count the lines a reader sees.

    The work stays out of Python loops: the parser serialises the body (tags in canonical form,
    ``>`` escaped in attribute values, script and style text raw), then regular expressions drop
    what is not shown, turn line-breaking tags into line ends and remove the other tags.
    """
    root = tree.body if tree.body is not None else tree.root
    if root is None:
        return []
    markup = root.html or ""
    if " hidden" in markup and _HIDDEN_ATTRIBUTE.search(markup):
        for node in root.css("[hidden]"):
            node.decompose()
        markup = root.html or ""
    if "#" in markup:
        markup = _PERMALINK.sub("", markup)
    markup = _SPECIAL_ELEMENT.sub(_hide_or_keep_newlines, markup)
    markup = _LINE_BREAK_TAG.sub(_BREAK, markup)
    markup = _CELL_TAG.sub(" ", markup)
    text = _unescape(_TAG.sub("", markup))
    if _PRE_LINE not in text:
        return [" ".join(words) for piece in text.split(_BREAK) if (words := piece.split())]
    lines = []
    for piece in text.split(_BREAK):
        if piece.startswith(_PRE_LINE):
            line = piece[1:].rstrip().replace("\xa0", " ")
            if line.strip():
                lines.append(line)
        elif words := piece.split():
            lines.append(" ".join(words))
    return lines


def _unescape(text: str) -> str:
    """Undo lexbor's escaping of text: it writes only these four entities (raw text elements,
    whose text it writes as is, are gone by now)."""
    if "&" not in text:
        return text
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&nbsp;", "\xa0").replace("&amp;", "&")


def _hide_or_keep_newlines(match: re.Match[str]) -> str:
    tag = match.group(1)
    if tag is None or tag in _NOT_SHOWN:
        return ""  # a comment, or an element never rendered
    # Preformatted: the author's newlines break lines, each line marked so that its spacing stays;
    # what it holds that is not shown goes.
    element = match.group(0)
    start = element.index(">") + 1
    inner = _HIDDEN_ELEMENT.sub("", element[start:])
    return element[:start] + _BREAK + _PRE_LINE + inner.replace("\n", _BREAK + _PRE_LINE)


def _alternatives(words: Iterable[str]) -> str:
    """A regular expression matching any of ``words``, as a prefix tree: one pass, no backtracking
    over dozens of alternatives at every tag."""
    tree: dict[str, Any] = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def pattern(node: dict[str, Any]) -> str:
        branches = [re.escape(char) + pattern(child) if char else "" for char, child in sorted(node.items())]
        return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"

    return pattern(tree)


# Patterns over lexbor's serialisation of <body>.
_HIDDEN_ATTRIBUTE = re.compile(r"<[a-z][^>]*\shidden[\s=/>]")
# Elements never rendered (raw text inside, so the first closing tag ends them), preformatted
# elements and comments, in one pass; <head> and <title> are outside the body.
_NOT_SHOWN = frozenset({"script", "style", "noscript", "template"})
_SPECIAL_ELEMENT = re.compile(
    r"<(%s)(?=[\s/>])[^>]*>.*?</\1>|<!--.*?-->" % _alternatives(_NOT_SHOWN | _PREFORMATTED), re.DOTALL
)
_HIDDEN_ELEMENT = re.compile(r"<(%s)(?=[\s/>])[^>]*>.*?</\1>|<!--.*?-->" % _alternatives(_NOT_SHOWN), re.DOTALL)
_LINE_BREAK_TAG = re.compile(r"</?%s(?=[\s/>])[^>]*>" % _alternatives(_BLOCKS | {"br"}))
# Table cells sit side by side: their texts are words apart, not glued together.
_CELL_TAG = re.compile(r"<t[dh](?=[\s/>])[^>]*>")
_TAG = re.compile(r"<[^>]*>")
_PERMALINK = re.compile(r'<a(?=\s)[^>]*\shref="#[^"]*"[^>]*>\s*(?:¶|§|#|🔗)\s*</a>')
