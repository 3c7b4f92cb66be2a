"""Articles (news, blog posts) told apart from documentation, their body found by trafilatura.

On documentation, sitewalk's structural rules keep every word and code block where trafilatura
drops code and tables; on news and blog pages trafilatura drops the related links, comments and
share bars around the article that the structural rules keep (``docs/content.md`` has both
benchmarks). A page with a code block (``<pre>``) is documentation, whatever else it says: its
code is kept. Otherwise it is an article when it says it is one, as publishers say it to search
engines and social sites (``og:type`` ``article``, ``article:published_time``, a schema.org
``Article``/``BlogPosting`` in JSON-LD or microdata), or when nothing says it is documentation:
neither a documentation generator in ``<meta name=generator>`` (Sphinx, MkDocs, Doxygen,
DocBook, gtk-doc, AsciiDoc...) nor links to the neighbours of a book's chapter
(``<link rel=prev|next|up|contents|index|start>``, as DocBook, gtk-doc and Sphinx write them,
or ``<a rel=prev|next|up>``, as MkDocs does).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from selectolax.lexbor import LexborHTMLParser

__all__ = ["article_html", "is_article"]

_ARTICLE_META = ('meta[property="og:type" i][content*="article" i], meta[property="article:published_time" i], '
                 '[itemtype*="schema.org/" i][itemtype*="Article" i], [itemtype*="schema.org/BlogPosting" i]')
_JSON_LD = 'script[type="application/ld+json" i]'
# Article, NewsArticle, BlogPosting, ReportageNewsArticle, TechArticle... as a JSON-LD @type.
_ARTICLE_TYPE = re.compile(r'"@type"\s*:\s*(?:\[[^\]]*?)?"(?:\w*Article|BlogPosting|LiveBlogPosting)"')
_DOCUMENTATION_GENERATOR = re.compile(
    r"sphinx|mkdocs|doxygen|docbook|gtk-?doc|asciidoc|docusaurus|vitepress|javadoc|rustdoc|typedoc|jsdoc|texinfo|"
    r"pandoc|docfx|antora|gitbook|mdbook|hugo-book|jekyll-docs", re.IGNORECASE)
_CHAPTER_LINKS = ('link[rel~="prev" i], link[rel~="next" i], link[rel~="up" i], link[rel~="contents" i], '
                  'link[rel~="index" i], link[rel~="start" i], a[rel~="prev" i], a[rel~="next" i], a[rel~="up" i]')
# An article body with fewer words is not taken: the page is read as any other.
_MIN_WORDS = 20


def is_article(tree: LexborHTMLParser) -> bool:
    """Whether the page is an article rather than documentation (see the module)."""
    if tree.css_first("pre") is not None:
        return False
    if tree.css_first(_ARTICLE_META) is not None:
        return True
    if any(_ARTICLE_TYPE.search(script.text(deep=True) or "") for script in tree.css(_JSON_LD)):
        return True
    generators = " ".join(meta.attributes.get("content") or "" for meta in tree.css('meta[name="generator" i]'))
    return _DOCUMENTATION_GENERATOR.search(generators) is None and tree.css_first(_CHAPTER_LINKS) is None


def article_html(markup: str, url: str | None) -> str | None:
    """The article's body as HTML (paragraphs, headings, lists, tables, links, emphasis), as
    trafilatura finds it without comments and favouring precision (images left out: their
    captions and credits are not the article's text); None when it finds fewer than
    twenty words."""
    import trafilatura

    html = trafilatura.extract(markup, url=url, output_format="html", include_comments=False, favor_precision=True,
                               include_links=True, include_formatting=True, include_images=False, include_tables=True)
    if html is None or len(re.findall(r"\w+", re.sub(r"<[^>]*>", " ", html))) < _MIN_WORDS:
        return None
    return str(html)
