"""A page's content for a reader or a model: Markdown (html-to-markdown), text, or HTML; whole or its main part."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import ada_url

from sitewalk.text import visible_lines

if TYPE_CHECKING:
    from html_to_markdown import ConversionOptions
    from selectolax.lexbor import LexborHTMLParser, LexborNode

__all__ = ["MODES", "html_content"]

MODES = ("markdown", "text", "html")
# Permalink signs beside headings (Sphinx, MkDocs, Docusaurus): not content.
_PERMALINK_SELECTOR = "a.headerlink, a.anchor, a.hash-link"
# The elements whose targets Markdown shows, and the attribute that holds each.
_TARGETS = {"a": "href", "area": "href", "img": "src", "video": "src", "audio": "src", "iframe": "src"}
_TARGET_SELECTOR = ", ".join(f"{tag}[{attribute}]" for tag, attribute in _TARGETS.items())
# A code block's language, as highlighters name it in a class of the block or of what wraps it:
# language-xxx and lang-xxx (Prism, highlight.js, Markdown renderers), highlight-xxx (Sphinx's
# wrapper div), "sourceCode xxx" (pandoc).
_LANGUAGE_CLASS = re.compile(r"(?:^|\s)(?:language|lang|highlight)-([\w+#.-]+)")
# Names that say "no language": plain text, or the site's default that the page does not name.
_NO_LANGUAGE = frozenset({"default", "none", "text", "plain", "plaintext", "nohighlight"})


def html_content(tree: LexborHTMLParser, markup: str, mode: str, *, main: bool, url: str | None = None) -> str:
    """The content of an HTML page (``mode`` ``markdown`` or ``text``), with ``main`` its main
    part only. Changes ``tree`` (call it after the page's links and title are read).

    Markdown comes from html-to-markdown: headings, paragraphs, lists, links, emphasis, tables,
    and fenced code blocks that keep their indentation and name their language when the page
    does (a link in a code block leaves its text, as the fence shows what it holds as written). With the page's (final) ``url``, every link and image target is absolute, resolved
    against the page's ``<base href>`` as a browser resolves it, except a link to a place on
    the page itself, which stays ``#id``. Text is :func:`sitewalk.text.visible_lines`, one line
    per block, ``<pre>`` lines with their indentation: the lines grep searches.

    The main part of an article (news, a blog post: :mod:`sitewalk.main_content.articles`) is
    its body as trafilatura finds it; of any other page, :func:`sitewalk.main_content.main_part`.
    """
    scope = None
    page = tree  # its <base href> resolves the targets
    if main:
        # Imported only for main_content: every walk imports this module (MODES), few ask for it.
        from selectolax.lexbor import LexborHTMLParser

        from sitewalk.main_content import main_part
        from sitewalk.main_content.articles import article_html, is_article

        if is_article(tree):
            article = article_html(markup, url)
            if article is not None:
                tree = LexborHTMLParser(article)
                scope = tree.body
        if scope is None:
            scope = main_part(tree)
    else:
        scope = tree.root
    if scope is None:
        return ""
    if mode == "markdown":
        # A code block's links (Sphinx's grammar, gtk-doc's types) would be Markdown link syntax
        # inside the fence, which shows it as written: the block keeps their text only.
        for link in scope.css("pre a"):
            link.unwrap()
        # Permalink signs are left out here, in the tree at hand: html-to-markdown's own
        # exclude_selectors costs about a fifth of a conversion (1.7 of 7.4 ms a Python docs page).
        for permalink in scope.css(_PERMALINK_SELECTOR):
            permalink.decompose()
        if url is not None:
            _absolute_targets(page, scope, url)
        _name_code_languages(scope)
        return _markdown(scope.html or "")
    if not main:
        return "\n".join(visible_lines(tree))
    return "\n".join(visible_lines(LexborHTMLParser(scope.html or "")))


def _absolute_targets(tree: LexborHTMLParser, scope: LexborNode, url: str) -> None:
    """Make the targets of links, images and media under ``scope`` absolute (see :func:`html_content`)."""
    base_element = tree.css_first("base[href]")
    try:
        page = ada_url.normalize_url(url).partition("#")[0]
        base = ada_url.join_url(page, base_element.attrs.get("href") or "") if base_element is not None else page
    except ValueError:
        return
    resolved: dict[str, str] = {}
    for element in scope.css(_TARGET_SELECTOR):
        attribute = _TARGETS[element.tag or ""]
        # lexbor's [href] also matches SVG's xlink:href, which Markdown does not show.
        target = element.attrs.get(attribute)
        if target is None:
            continue
        absolute = resolved.get(target)
        if absolute is None:
            try:
                absolute = ada_url.join_url(base, target)
            except ValueError:
                absolute = target  # not a URL a browser could follow: left as the page wrote it
            document, hash_sign, fragment = absolute.partition("#")
            if hash_sign and fragment and document == page:
                absolute = "#" + fragment
            resolved[target] = absolute
        if absolute != target:
            element.attrs[attribute] = absolute


def _name_code_languages(scope: LexborNode) -> None:
    """Give each ``<pre>`` whose language the page names (on it, its ``<code>`` or the two
    elements around it) the class ``language-xxx``, which html-to-markdown writes after the fence."""
    for pre in scope.css("pre"):
        code = pre.css_first("code")
        for element in (pre, code, pre.parent, pre.parent.parent if pre.parent is not None else None):
            language = _language(element.attrs.get("class") or "") if element is not None else None
            if language is not None:
                if language.lower() not in _NO_LANGUAGE:
                    pre.attrs["class"] = "language-" + language
                break


def _language(classes: str) -> str | None:
    """The language a ``class`` attribute names, if it names one."""
    found = _LANGUAGE_CLASS.search(classes)
    if found is not None:
        return found.group(1)
    names = classes.split()
    if "sourceCode" in names:
        others = [name for name in names if name != "sourceCode"]
        return others[0] if others else None
    return None


def _markdown(html: str) -> str:
    from html_to_markdown import convert

    return convert(html, _options()).content or ""


_OPTIONS: list[ConversionOptions] = []


def _options() -> ConversionOptions:
    """html-to-markdown's options: no metadata header, inline ``data:`` images dropped; its own
    clean-up (which removes ``<nav>`` and ``<header>`` even of a whole page) off:
    :mod:`sitewalk.main_content` finds the main part."""
    if not _OPTIONS:
        from html_to_markdown import ConversionOptions, PreprocessingOptions

        _OPTIONS.append(ConversionOptions(
            extract_metadata=False, inline_data_media="drop_element",
            preprocessing=PreprocessingOptions(enabled=False),
        ))
    return _OPTIONS[0]
