"""The text of a page that is a document rather than HTML: a PDF's, with its outline as Markdown headings.

pypdf reads the PDF (pure Python, BSD-3), chosen by measurement over pdfminer.six: on the PDFs
compared it was about twice as fast and found the same words (``docs/content.md``). Reading a
PDF is bounded in the page-reading helper process that does it (:mod:`sitewalk.pagereader`):
pypdf's own limits on what one stream decompresses to, :data:`MAX_PAGES`, :data:`MAX_CHARS`,
and the helper's time and memory limits per document. A document past a limit raises
:class:`DocumentError`, the page's failure.
"""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING, Any

from sitewalk.exceptions import SitewalkError

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["DOCUMENT_TYPES", "MAX_CHARS", "MAX_PAGES", "DocumentError", "document_content"]

# The media types read as documents (text pages are their own content: sitewalk.text).
DOCUMENT_TYPES = frozenset({"application/pdf"})
# More pages than this, or more text, and the document is not read: a page's failure.
MAX_PAGES = 2000
MAX_CHARS = 20_000_000
# Outline levels deeper than this are all this deep: Markdown has six.
_MAX_LEVEL = 6
_WORDS = re.compile(r"\w+")


class DocumentError(SitewalkError):
    """A document that cannot be read within the limits (too many pages, too much text, broken)."""


def document_content(body: bytes, mode: str) -> tuple[str | None, str]:
    """The title and the content (``mode`` ``markdown`` or ``text``) of a PDF.

    Text comes page by page, in reading order as pypdf extracts it; in Markdown each entry of
    the PDF's outline (its bookmarks) is a heading, its depth the heading's level, placed at
    the line of its page that reads as the entry does (else at the top of that page). The title
    is the document's ``/Title``, else its first outline entry's. Raises :class:`DocumentError`.
    """
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, PyPdfError

    try:
        reader = PdfReader(io.BytesIO(body))
        if reader.is_encrypted:
            reader.decrypt("")  # most encrypted PDFs on the web open with the empty password
        count = len(reader.pages)
        if count > MAX_PAGES:
            raise DocumentError(f"the PDF has {count} pages, more than the {MAX_PAGES} read")
        headings = _outline(reader) if mode == "markdown" else {}
        pages: list[str] = []
        size = 0
        for number, page in enumerate(reader.pages):
            text = page.extract_text() or ""
            size += len(text)
            if size > MAX_CHARS:
                raise DocumentError(f"the PDF's text is longer than {MAX_CHARS} characters")
            pages.append(_with_headings(text, headings.get(number, [])) if mode == "markdown" else text.strip())
        title = _title(reader, headings)
    except DocumentError:
        raise
    except (PyPdfError, DependencyError, ValueError, KeyError, TypeError, AttributeError, IndexError,
            RecursionError) as exc:
        # pypdf reports a broken or hostile file with any of these.
        raise DocumentError(f"the PDF cannot be read ({type(exc).__name__}: {exc})") from None
    return title, "\n\n".join(page for page in pages if page) + "\n"


def _outline(reader: Any) -> dict[int, list[tuple[int, str]]]:
    """The outline's entries by page number: (level, title), in outline order."""
    headings: dict[int, list[tuple[int, str]]] = {}
    for level, entry in _entries(reader.outline, 1, set()):
        title = " ".join(str(entry.title or "").split())
        number = reader.get_destination_page_number(entry)
        if title and number is not None and number >= 0:
            headings.setdefault(number, []).append((min(level, _MAX_LEVEL), title))
    return headings


def _entries(outline: list[Any], level: int, seen: set[int]) -> Iterator[tuple[int, Any]]:
    """The outline's entries, depth first, with their level; a list met twice (a loop) once."""
    if id(outline) in seen:
        return
    seen.add(id(outline))
    for entry in outline:
        if isinstance(entry, list):
            yield from _entries(entry, level + 1, seen)
        else:
            yield level, entry


def _with_headings(text: str, headings: list[tuple[int, str]]) -> str:
    """``text`` of a page as Markdown lines, each of its ``headings`` in place (see :func:`document_content`)."""
    # A line of the text that starts like a heading is text.
    lines = ["\\" + line if line.startswith("#") else line for line in text.strip().splitlines()]
    at = 0
    for level, title in headings:
        heading = "#" * level + " " + title
        words = _WORDS.findall(title.lower())
        found = next((index for index in range(at, len(lines))
                      if words and _WORDS.findall(lines[index].lower()) == words), None)
        if found is None:
            lines.insert(at, heading)
            at += 1
        else:
            lines[found] = heading
            at = found + 1
    return "\n".join(lines).strip()


def _title(reader: Any, headings: dict[int, list[tuple[int, str]]]) -> str | None:
    metadata = reader.metadata
    title = " ".join(str(metadata.title or "").split()) if metadata is not None else ""
    if title:
        return title
    first = min(headings) if headings else None
    return headings[first][0][1] if first is not None else None
