"""Rules 4 to 6 of the main part: what the navigation leaves behind (empty frames, trailing
furniture, the site's name)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sitewalk.main_content.nodes import (
    HEADINGS,
    as_name,
    elements,
    flat_text,
    holds,
    is_root_or_above,
    link_word_count,
    word_count,
)

if TYPE_CHECKING:
    from selectolax.lexbor import LexborHTMLParser, LexborNode

__all__ = ["remove_empty_frames", "remove_site_name", "remove_trailing_furniture", "title_parts"]

_FURNITURE_TAGS = frozenset({"div", "address", "hr", "small"})
# What no page furniture holds: headings, paragraphs, code, tables, quotes, figures.
_NOT_FURNITURE = f"{HEADINGS}, p, pre, code, table, blockquote, figure"
_FEW_WORDS = 10
# The elements a site's name stands in, or is wrapped in, at the top of a page.
_BANNER_TAGS = frozenset({"div", "table", "tbody", "tr", "td", "section", "header", "center"})
# What separates the page's name from the site's in a <title>: "Page | Site", "Site: Page".
_TITLE_SEPARATORS = re.compile(r"\s+[|—–·»-]\s+|:\s+")


def remove_empty_frames(parents: list[LexborNode], root: LexborNode, names: set[str]) -> None:
    """Rule 4: the blocks that held removed navigation and keep fewer than ten words."""
    title = _title_heading(root)
    # The page's own name in its <title> is, of the names there, the longest.
    page_name = as_name(max(names, key=len)) if names else ""
    for parent in parents:
        node: LexborNode | None = parent
        frame = None
        while node is not None and not is_root_or_above(node, root):
            words = word_count(node)
            if (words >= _FEW_WORDS or (title is not None and holds(node, title))
                    or (page_name and page_name in as_name(flat_text(node)) and link_word_count(node) < words)):
                break
            frame = node
            node = node.parent
        if frame is not None and frame.parent is not None:
            frame.remove()


def _title_heading(root: LexborNode) -> LexborNode | None:
    """The first heading of the highest level in ``root`` that is not just a link (a site name
    linking home is one)."""
    for level in HEADINGS.split(", "):
        for heading in root.css(level):
            link_words = link_word_count(heading)
            if not link_words or link_words < word_count(heading):
                return heading
    return None


def remove_trailing_furniture(root: LexborNode) -> None:
    """Rule 5, in ``root`` and in the single blocks that wrap all its content."""
    node = root
    while True:
        for child in reversed(elements(node)):
            if child.tag in ("script", "style", "template"):
                continue
            if child.tag not in _FURNITURE_TAGS or child.css_first(_NOT_FURNITURE) is not None:
                break
            if child.tag != "hr" and word_count(child) >= _FEW_WORDS:
                break
            child.remove()
        blocks = [child for child in node.iter(include_text=False)
                  if not (child.tag or "-").startswith("-") and child.tag not in ("script", "style", "template")]
        if len(blocks) != 1:
            return
        node = blocks[0]


def title_parts(tree: LexborHTMLParser) -> set[str]:
    """The names in the page's ``<title>`` ("Site: Page" -> Site, Page), when it has two or more."""
    title = tree.css_first("title")
    parts = {" ".join(part.split()) for part in _TITLE_SEPARATORS.split(title.text() if title is not None else "")}
    parts.discard("")
    return parts if len(parts) >= 2 else set()


def remove_site_name(root: LexborNode, parts: set[str]) -> None:
    """Rule 6: the first block (a ``div``, ``table``... or in one), when all it says is one of
    the names in the page's ``<title>`` (with no heading but one that is all link) and a block
    after it holds another (or its first word)."""
    names = {as_name(part) for part in parts} - {""}
    if len(names) < 2:
        return
    # A block with more text than the longest name (signs aside, twice over) is none. Its text is
    # measured with its spaces collapsed: the source's indentation is no text (Doxygen indents its
    # project name's table by some 40 newlines and spaces, more than a short name allows).
    longest = 2 * max(len(part) for part in parts) + 20
    node = root
    while True:
        first, text = next(((block, text) for block in elements(node) if (text := flat_text(block))), (None, ""))
        if first is None or first.tag not in _BANNER_TAGS:
            return
        if len(text) > longest:
            node = first  # more than a name: the name may be in it
            continue
        name = as_name(text)
        if name in names:
            others = {as_name(part) for part in parts if as_name(part) != name}
            others |= {as_name(part.split()[0]) for part in parts if as_name(part) != name}
            others.discard("")
            later = first.next
            while later is not None and _title_heading(first) is None:
                text = as_name(flat_text(later))
                if any(other in text for other in others):
                    first.remove()
                    return
                later = later.next
            return
        node = first
