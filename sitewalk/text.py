"""The text of a page as a person reads it, line by line: what the grep consumer searches."""

from __future__ import annotations

import html
import re
from html.entities import html5 as html5_entities
from typing import TYPE_CHECKING, Any, Protocol
from weakref import WeakKeyDictionary

from sitewalk.links import UTF8_CHARSETS, parse_html

if TYPE_CHECKING:
    from collections.abc import Iterable

    from selectolax.lexbor import LexborHTMLParser

__all__ = ["Absence", "PageLike", "is_plain_text", "page_lines", "plain_lines", "visible_lines"]


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
# What makes a grep pattern a regular expression rather than plain text.
_REGEX_SYNTAX = frozenset("\\.^$*+?{}[]|()")
# The most characters of a word Absence looks for.
_LONGEST_WORD = 32
# Numeric character references (with or without their semicolon), in a page's bytes.
_NUMERIC_REFERENCE = re.compile(rb"&#(?:[xX][0-9a-fA-F]+|[0-9]+);?")
# The characters other than ASCII that match an ASCII letter when case is ignored (İ ı ſ K), as
# they stand in UTF-8, and the named references that spell them.
_FOLDS_TO_ASCII = re.compile("|".join(map(re.escape, "\u0130\u0131\u017f\u212a")).encode())
_NAMED_FOLDS_TO_ASCII = re.compile(
    b"&(?:" + b"|".join(sorted(
        re.escape(name.rstrip(";")).encode() for name, value in html5_entities.items()
        if set(value) & set("\u0130\u0131\u017f\u212a")
    )) + b")"
)

# A character no page text contains (Unicode private use) marks where a line ends.
_BREAK = "\ue000"
# Starts each line of a <pre>: its whitespace is the author's, kept but at the line's end.
_PRE_LINE = "\ue001"


def page_lines(page: PageLike) -> list[str] | None:
    """The lines grep searches in ``page``, or None when the page is not text.

    HTML pages give :func:`visible_lines` (of the tree the walk already parsed, when there is
    one); ``text/*`` pages and JSON, XML or JavaScript give :func:`plain_lines` of the body;
    anything else (images, PDF, ``application/octet-stream``, or no Content-Type at all) is
    binary: None. The body is decoded with the charset the Content-Type declares, else a byte
    order mark or ``<meta charset>``, else UTF-8.
    """
    if page.is_html:
        if page.lines is not None:
            return page.lines
        return visible_lines(page.tree if page.tree is not None else parse_html(page.text))
    if is_plain_text(page.content_type):
        return plain_lines(page.text)
    return None


def is_plain_text(media_type: str | None) -> bool:
    """Whether a page of this media type is text to read as it is (text/*, JSON, XML, JavaScript)."""
    return media_type is not None and (
        media_type.startswith("text/")
        or media_type in _TEXT_APPLICATION_TYPES
        or media_type.endswith(("+json", "+xml"))
    )


class Absence:
    """Tells, from a page's source alone, that no line of it can match a plain-text pattern.

    A visible line of an HTML page is the page's text in document order with the markup taken
    out (tags, comments and elements not shown: each starts with ``<`` and ends with ``>``),
    character references decoded, NUL characters dropped and whitespace collapsed. So a word (no
    whitespace, ``<`` or ``&``) that a visible line holds stands in the page's decoded source
    either whole or in pieces with markup between them: a first piece followed by ``<``, middle
    pieces between ``>`` and ``<``, a last piece after ``>``. Where the source holds no such
    pieces, no line holds the word, and none matches a pattern that contains it. The lines of a
    text page are its text. Each page is told once.

    A word of ASCII letters and digits is looked for in the page's bytes: only a numeric
    character reference can spell one of its characters (HTML names none of them), and with
    ``ignore_case`` only four other characters match them (İ ı ſ K); a page holding either is
    decoded first.
    """

    def __init__(self, word: str, flags: int) -> None:
        self._word = word
        self._flags = flags
        self._ascii = word.isascii()
        self._in_bytes = word.isascii() and word.isalnum()
        self._spelled = re.compile(f"[{re.escape(word)}]", flags)
        # In bytes, case is ignored by looking for the lower case word in lower case bytes.
        self._pieces = _Pieces(word, flags, in_bytes=False)
        self._pieces_bytes = _Pieces(word.lower() if flags else word, 0, in_bytes=True)
        self._known: WeakKeyDictionary[PageLike, bool] = WeakKeyDictionary()

    @classmethod
    def of(cls, pattern: str, *, fixed_strings: bool, ignore_case: bool) -> Absence | None:
        """For a pattern that is plain text (``fixed_strings``, or no regular expression syntax),
        with its longest word; None for any other pattern."""
        if not fixed_strings and any(char in _REGEX_SYNTAX for char in pattern):
            return None
        words = [word for word in pattern.split() if "<" not in word and "&" not in word]
        if not words:
            return None
        # A line holding the word holds its start: the search for pieces of the word runs in time
        # that grows with the square of the word's length, so a long word is cut.
        return cls(max(words, key=len)[:_LONGEST_WORD], re.IGNORECASE if ignore_case else 0)

    def proven(self, page: PageLike) -> bool:
        """True when no line of ``page`` (any page grep searches) can hold the word."""
        known = self._known.get(page)
        if known is None:
            known = self._known[page] = self._proven(page)
        return known

    def _proven(self, page: PageLike) -> bool:
        if not page.is_html:
            if is_plain_text(page.content_type):
                return re.search(re.escape(self._word), page.text, self._flags) is None
            return True  # not text: not searched at all
        utf8 = (page.encoding or "").lower() in UTF8_CHARSETS
        if not utf8 and not self._ascii:
            return False  # only ASCII reads the same in any decoding the walk could pick
        if self._in_bytes:
            # ASCII keeps its bytes in UTF-8 whatever else a page holds.
            raw = (page.body if utf8 else page.text.encode("utf-8", "replace")).replace(b"\0", b"")
            if not self._spelled_otherwise(raw):
                return self._absent(raw.lower() if self._flags else raw)
        source = page.body.decode("utf-8", "replace") if utf8 else page.text
        source = source.replace("\0", "")
        return self._absent(html.unescape(source) if "&" in source else source)

    def _spelled_otherwise(self, raw: bytes) -> bool:
        """Whether a character reference, or a character matching one of the word's when case is
        ignored, could spell a character of the word in ``raw``."""
        if self._flags and (_FOLDS_TO_ASCII.search(raw) or _NAMED_FOLDS_TO_ASCII.search(raw)):
            return True
        references = b"".join(_NUMERIC_REFERENCE.findall(raw)).decode("ascii")
        return bool(references) and self._spelled.search(html.unescape(references)) is not None

    def _absent(self, source: str | bytes) -> bool:
        pieces = self._pieces_bytes if isinstance(source, bytes) else self._pieces
        return not pieces.found_in(source)


class _Pieces:
    """Finds a word in a page's source, whole or in pieces with markup between them."""

    def __init__(self, word: str, flags: int, *, in_bytes: bool) -> None:
        def pattern(text: str) -> re.Pattern[Any]:
            return re.compile(text.encode() if in_bytes else text, flags)

        self._word = word
        self._whole = pattern(re.escape(word))
        # word[0] (<|word[1] (<|word[2] (... <))): a first piece, then markup; one pass finds them all.
        self._first = pattern(_first_pieces(word))
        # After a cut at start: a middle piece word[start:i] between markup, found in one pass.
        self._middle = [
            pattern(">(" + "|".join(re.escape(word[start:i]) for i in range(len(word) - 1, start, -1)) + ")<")
            if start < len(word) - 1 else None
            for start in range(len(word))
        ]
        self._last = [pattern(">" + re.escape(word[start:])) for start in range(len(word))]

    def found_in(self, source: Any) -> bool:
        if self._whole.search(source):
            return True
        word = self._word
        # cut[i]: the word's first i characters can stand just before markup.
        cut = [False] * len(word)
        for found in self._first.finditer(source):
            cut[len(found.group()) - 1] = True
        for start in range(1, len(word)):
            if not cut[start]:
                continue
            if self._last[start].search(source):
                return True
            middle = self._middle[start]
            if middle is not None:
                for found in middle.finditer(source):
                    cut[start + len(found.group(1))] = True
        return False


def _first_pieces(word: str) -> str:
    """A regular expression for a proper prefix of ``word`` followed by ``<``, as a prefix tree."""
    pieces = "<"
    for char in reversed(word[1:-1]):
        pieces = f"(?:<|{re.escape(char)}{pieces})"
    return re.escape(word[0]) + pieces


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
