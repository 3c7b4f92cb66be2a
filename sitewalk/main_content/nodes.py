"""What the main-content rules measure of a node: its words, its links' words, its text as a name."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from selectolax.lexbor import LexborNode

__all__ = ["HEADINGS", "as_name", "elements", "flat_text", "holds", "is_root_or_above", "link_word_count", "outermost",
           "word_count"]

HEADINGS = "h1, h2, h3, h4, h5, h6"
_NOT_NAME = re.compile(r"[\W_]+")


def word_count(node: LexborNode) -> int:
    return len(node.text(deep=True, separator=" ").split())


def link_word_count(node: LexborNode) -> int:
    return sum(len(link.text(deep=True, separator=" ").split()) for link in node.css("a"))


def flat_text(node: LexborNode) -> str:
    return " ".join(node.text(deep=True, separator=" ").split())


def as_name(text: str) -> str:
    """``text`` compared as a name: letters and digits only, lower case ("Qt Style" is "QTstyle")."""
    return _NOT_NAME.sub("", text.lower())


def elements(node: LexborNode) -> list[LexborNode]:
    """The elements among ``node``'s children (no text, no comments)."""
    return [child for child in node.iter(include_text=False) if not (child.tag or "-").startswith("-")]


def is_root_or_above(node: LexborNode, root: LexborNode) -> bool:
    return node is root or node.tag in ("body", "html") or node.parent is None


def holds(node: LexborNode, inner: LexborNode) -> bool:
    ancestor: LexborNode | None = inner
    while ancestor is not None:
        if ancestor.mem_id == node.mem_id:
            return True
        ancestor = ancestor.parent
    return False


def outermost(nodes: list[LexborNode]) -> list[LexborNode]:
    """``nodes`` less those inside another of them."""
    ids = {node.mem_id for node in nodes}
    outer = []
    for node in nodes:
        ancestor = node.parent
        while ancestor is not None and ancestor.mem_id not in ids:
            ancestor = ancestor.parent
        if ancestor is None:
            outer.append(node)
    return outer
