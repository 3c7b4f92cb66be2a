"""Rule 3 of the main part: the bars of links to the page's neighbours, and menu bars."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sitewalk.main_content.nodes import HEADINGS, is_root_or_above, link_word_count, outermost, word_count

if TYPE_CHECKING:
    from selectolax.lexbor import LexborHTMLParser, LexborNode

__all__ = ["link_bars", "neighbour_bars"]

# What a link to a neighbour page is called, in <link rel> and <a rel>.
_NEIGHBOUR_RELS = frozenset({"prev", "previous", "next", "up", "home", "start", "first", "last", "index",
                             "contents", "toc", "parent"})
# Words beside the links of a bar of neighbour links (the titles of the pages it leads to).
_BAR_WORDS = 20
_BAR_MAX_WORDS = 60
# Text between the links of a bar: separators and arrows, no words; and at least one of the
# signs menus and breadcrumbs put between links (prose puts commas).
_SEPARATORS = re.compile(r"[\W_]*")
_BAR_SIGNS = re.compile(r"[|»«›‹·•→←/]")


def neighbour_bars(tree: LexborHTMLParser, root: LexborNode) -> list[LexborNode]:
    """The blocks of links to the page's neighbours, outermost first."""
    neighbours = set()
    for link in tree.css("link[rel][href]"):
        if set((link.attrs.get("rel") or "").lower().split()) & _NEIGHBOUR_RELS:
            neighbours.add((link.attrs.get("href") or "").partition("#")[0])
    neighbours.discard("")
    bars: list[LexborNode] = []
    seen: set[int] = set()
    # What the climbs from earlier links found: the links of a paragraph share its ancestors.
    known: dict[int, LexborNode | None] = {}
    stops: set[int] = set()
    # The candidates found by the selector engine (C), not by a loop over every link in Python.
    selectors = ["a[href][accesskey]", "a[href][rel]"]
    selectors += [f'a[href^="{_css_string(href)}"]' for href in neighbours]
    for link in root.css(", ".join(selectors)):
        attrs = link.attrs
        href = (attrs.get("href") or "").partition("#")[0]
        rels = set((attrs.get("rel") or "").lower().split())
        if not (href and href in neighbours) and not rels & _NEIGHBOUR_RELS and attrs.get("accesskey") is None:
            continue
        bar = _highest_bar(link.parent, root, neighbours, known, stops)
        if bar is not None and bar.mem_id not in seen:
            seen.add(bar.mem_id)
            bars.append(bar)
    return outermost(bars)


def _highest_bar(node: LexborNode | None, root: LexborNode, neighbours: set[str],
                 known: dict[int, LexborNode | None], stops: set[int]) -> LexborNode | None:
    """The highest bar (:func:`_is_bar`) among ``node`` and its ancestors, up to the first that is
    no bar's size; ``known`` holds that answer for each node climbed before, ``stops`` the nodes
    too large to be a bar."""
    path = []
    above = None
    while node is not None and not is_root_or_above(node, root) and node.mem_id not in stops:
        if node.mem_id in known:
            above = known[node.mem_id]
            break
        # A bar is short: its links' words and a few titles beside them; and never code (a
        # gtk-doc signature links its types, which the chapters before and after may define).
        words = word_count(node)
        if (words > _BAR_MAX_WORDS or node.css_first(HEADINGS) is not None
                or words - link_word_count(node) > _BAR_WORDS or node.css_first("pre") is not None):
            stops.add(node.mem_id)
            break
        path.append(node)
        node = node.parent
    for node in reversed(path):
        if above is None and _is_bar(node, neighbours):
            above = node
        known[node.mem_id] = above
    return above


def _css_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def _is_bar(node: LexborNode, neighbours: set[str]) -> bool:
    """Whether ``node`` links two of the page's neighbours (other pages: a table of contents
    links its sections, of which only the first is a neighbour), or one by a link that says it
    is one (``rel``, ``accesskey``)."""
    targets = set()
    for link in node.css("a[href]"):
        attrs = link.attrs
        href = (attrs.get("href") or "").partition("#")[0]
        if not href:
            continue
        if set((attrs.get("rel") or "").lower().split()) & _NEIGHBOUR_RELS or attrs.get("accesskey") is not None:
            return True
        if href in neighbours:
            targets.add(href)
    return len(targets) >= 2


def link_bars(root: LexborNode) -> list[LexborNode]:
    """Blocks of two or more links with only separators between them and no heading."""
    bars = []
    for node in root.css("div, p, td, span"):
        links = node.css("a")
        if len(links) < 2 or node.css_first(HEADINGS) is not None or node.css_first("ul, ol, dl, table") is not None:
            continue
        text = node.text(deep=True, separator=" ")
        for link in links:
            text = text.replace(link.text(deep=True, separator=" "), " ", 1)
        if _SEPARATORS.fullmatch(text) and _BAR_SIGNS.search(text):
            bars.append(node)
    return outermost(bars)
