"""A page's content for a reader or a model: Markdown (html-to-markdown), text, or HTML; whole or its main part."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitewalk.text import visible_lines

if TYPE_CHECKING:
    from html_to_markdown import ConversionOptions
    from selectolax.lexbor import LexborHTMLParser, LexborNode

__all__ = ["MODES", "html_content"]

MODES = ("markdown", "text", "html")
# Where a page keeps its main content, in the order they are tried: the HTML landmark, then
# the blocks documentation generators write it in (Sphinx's div.body, MkDocs' and others' #content).
_MAIN = ("main", "[role=main]", "article", "div.body", "#content", "#main")
# What a page without such a block has around its content.
_AROUND = ("nav", "header", "footer", "[role=navigation]", "[role=search]", "[role=banner]", "[role=contentinfo]",
           "[role=complementary]", "div.related", "div.sphinxsidebar", "div.footer")
# Permalink signs beside headings (Sphinx, MkDocs, Docusaurus): not content.
_PERMALINKS = ("a.headerlink", "a.anchor", "a.hash-link")


def html_content(tree: LexborHTMLParser, markup: str, mode: str, *, main: bool) -> str:
    """The content of an HTML page (``mode`` ``markdown`` or ``text``), with ``main`` its main
    part only. Changes ``tree`` (call it after the page's links and title are read).

    Markdown comes from html-to-markdown: headings, paragraphs, lists, links, emphasis, tables,
    and fenced code blocks that keep their indentation. Text is :func:`sitewalk.text.visible_lines`,
    one line per block, ``<pre>`` lines with their indentation: the lines grep searches.
    """
    root = _main_part(tree) if main else None
    if mode == "markdown":
        return _markdown(root.html or "" if root is not None else markup, main=main and root is None)
    if root is None:
        if main:
            for node in tree.css(", ".join(_AROUND)):
                node.decompose()
        return "\n".join(visible_lines(tree))
    from selectolax.lexbor import LexborHTMLParser

    return "\n".join(visible_lines(LexborHTMLParser(root.html or "")))


def _main_part(tree: LexborHTMLParser) -> LexborNode | None:
    for selector in _MAIN:
        node = tree.css_first(selector)
        if node is not None:
            # A heading that links back to the table of contents is a heading, not a link.
            for link in node.css("a.toc-backref"):
                link.unwrap()
            return node
    return None


def _markdown(html: str, *, main: bool) -> str:
    from html_to_markdown import convert

    return convert(html, _options(main)).content or ""


_OPTIONS: dict[bool, ConversionOptions] = {}


def _options(around_removed: bool) -> ConversionOptions:
    """html-to-markdown's options: no metadata header, permalinks left out, inline ``data:``
    images dropped; its own clean-up (which removes ``<nav>`` and ``<header>`` even of a whole
    page) off, what surrounds the content removed by name instead when asked for."""
    options = _OPTIONS.get(around_removed)
    if options is None:
        from html_to_markdown import ConversionOptions, PreprocessingOptions

        excluded = [*_PERMALINKS, *(_AROUND if around_removed else ())]
        options = _OPTIONS[around_removed] = ConversionOptions(
            extract_metadata=False, exclude_selectors=excluded, inline_data_media="drop_element",
            preprocessing=PreprocessingOptions(enabled=False),
        )
    return options
