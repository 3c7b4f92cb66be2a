"""Grep's shortcut: telling from a page's source alone that a plain-text pattern cannot match it,
so the next page downloads while it is read."""

from __future__ import annotations

import html
import re
from html.entities import html5 as html5_entities
from typing import Any
from weakref import WeakKeyDictionary

from sitewalk.documents import DOCUMENT_TYPES
from sitewalk.links import UTF8_CHARSETS
from sitewalk.text import PageLike, is_plain_text

__all__ = ["Absence"]

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
            # A document's text is read from its (compressed) body; anything else is not searched.
            return page.content_type not in DOCUMENT_TYPES
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
