"""What a walk produces: pages for the consumers, index/match/extract items for feeds, the report."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from sitewalk.hints import CLI
from sitewalk.indexing import indexing_signals
from sitewalk.kinds import DEPTH, FETCHED_BYTES, FOUND_ON, WIRE_BYTES

if TYPE_CHECKING:
    from scrapy.http import Response
    from selectolax.lexbor import LexborHTMLParser

    from sitewalk.hints import Surface

__all__ = ["FIELDS", "HTML_TYPES", "Extract", "IndexEntry", "Match", "Page", "Report", "count", "human_bytes", "media_type", "page_of"]


HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})


@dataclass(eq=False)
class _Fetched:
    """What the index says of a fetched page."""

    url: str
    final_url: str
    status: int
    byte_count: int
    depth: int
    content_type: str | None
    title: str | None
    found_on: str | None
    # The page's own indexing signals (sitewalk.indexing): the URL it names as its original, and
    # whether it asks to be left out of an index.
    canonical: str | None = field(default=None, kw_only=True)
    noindex: bool = field(default=False, kw_only=True)


# Compared by identity, and never printed with its headers and body (Scrapy logs items at DEBUG).
@dataclass(eq=False)
class Page(_Fetched):
    """One fetched page, as every consumer sees it (not exported as such: it carries the body)."""

    headers: dict[str, str] = field(repr=False)
    body: bytes = field(repr=False)
    encoding: str | None = None
    # The visible lines of a 2xx HTML page (sitewalk.text.visible_lines), when a consumer asked
    # the walk to read them with the page (grep); None otherwise.
    lines: list[str] | None = field(default=None, repr=False, compare=False)
    # The page's followable links (sitewalk.links.page_links), when the walk read them.
    links: list[str] | None = field(default=None, repr=False, compare=False)
    # The content the walk read beside it: (mode, main_content, content).
    _content: tuple[str, bool, str] | None = field(default=None, repr=False, compare=False)
    # The parsed HTML, if the walk parsed it in this process (see `tree`).
    _tree: LexborHTMLParser | None = field(default=None, repr=False, compare=False)
    # With a state (sitewalk.memory): new, changed or unchanged since the previous walk.
    change: str | None = None

    @property
    def tree(self) -> LexborHTMLParser | None:
        """The parsed HTML (lexbor) of an HTML page, shared with the consumers; they may change it.

        Parsed on first use (the walk reads links and titles in a helper process); None for
        pages that are not HTML or have no body.
        """
        if self._tree is None and self.is_html and self.body:
            from sitewalk.links import UTF8_CHARSETS, parse_html

            utf8 = (self.encoding or "").lower() in UTF8_CHARSETS
            self._tree = parse_html(self.body if utf8 else self.text)
        return self._tree

    def add_reading(self, title: str | None, lines: list[str] | None, tree: LexborHTMLParser | None,
                    links: list[str] | None = None, content: tuple[str, bool, str] | None = None,
                    signals: tuple[str | None, bool] | None = None) -> None:
        """What reading the page found (the walk reads it after it arrived); ``tree`` if parsed
        here; ``signals``: its canonical URL and noindex, read from its HTML and headers."""
        self.title, self.lines, self._tree, self.links, self._content = title, lines, tree, links, content
        if signals is not None:
            self.canonical, self.noindex = signals

    def content(self, mode: str = "markdown", *, main_content: bool = False) -> str | None:
        """The page's content: ``markdown`` or ``text`` of an HTML page (:func:`sitewalk.content.html_content`;
        with ``main_content``, of its main part only; targets resolved against ``final_url``), ``html`` its decoded body; a text page
        (text/*, JSON, XML) gives its body as it is; a PDF its text (Markdown: its outline as
        headings, :mod:`sitewalk.documents`) when the walk read it (``content`` or ``save_dir``
        given), any other page None."""
        from sitewalk.content import MODES, html_content
        from sitewalk.text import is_plain_text

        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if not self.is_html:
            if is_plain_text(self.content_type):
                return self.text
            # A document: read by the walk's helper process, bounded there.
            if self._content is not None and self._content[0] == mode:
                return self._content[2]
            return None
        if mode == "html":
            return self.text
        if self._content is not None and self._content[:2] == (mode, main_content):
            return self._content[2]
        from sitewalk.links import parse_html

        markup = self.text
        return html_content(parse_html(markup), markup, mode, main=main_content, url=self.final_url)

    @property
    def is_html(self) -> bool:
        return self.content_type in HTML_TYPES

    @property
    def text(self) -> str:
        """The body decoded with the page's declared or detected charset."""
        from w3lib.encoding import html_to_unicode

        _, text = html_to_unicode(self.headers.get("Content-Type"), self.body)
        return text


def page_of(response: Response) -> Page:
    """The walk's page as it arrived (the request's meta names its depth and where it was found);
    reading it adds its title (and grep's lines)."""
    page = Page(
        url=response.meta.get("redirect_urls", [response.url])[0],
        final_url=response.url,
        status=response.status,
        byte_count=response.meta.get(FETCHED_BYTES) or response.meta.get(WIRE_BYTES, len(response.body)),
        depth=response.meta[DEPTH],
        content_type=media_type(response),
        title=None,
        found_on=response.meta.get(FOUND_ON),
        headers={k.decode("latin-1"): b", ".join(v).decode("latin-1") for k, v in response.headers.items()},
        body=response.body,
        encoding=getattr(response, "encoding", None),
    )
    # What its headers say (a page that is read adds what its HTML says: add_reading).
    page.canonical, page.noindex, _ = indexing_signals(None, page.final_url, page.headers)
    return page


def media_type(response: Response) -> str | None:
    """The response's Content-Type without its parameters, lower case; None when there is none."""
    value = response.headers.get(b"Content-Type")
    if not value:
        return None
    return value.decode("latin-1").split(";", 1)[0].strip().lower() or None


@dataclass
class IndexEntry(_Fetched):
    """The index consumer's item: one per fetched page, in fetch order. ``links`` (``links=true``):
    the page's followable links, resolved, each once, in document order, on any origin; None for
    a page that is not a 2xx HTML page. ``content`` (``content=...``): :meth:`Page.content` of a
    2xx page. Feeds export these fields only when asked for
    (:data:`FIELDS` otherwise)."""

    links: list[str] | None = None
    content: str | None = None
    # With a state: the page is new, changed or unchanged since the previous walk (sitewalk.memory).
    change: str | None = None

    @classmethod
    def from_page(cls, page: Page, *, links: bool = False, content: str | None = None,
                  main_content: bool = False) -> IndexEntry:
        entry = cls(**{spec.name: getattr(page, spec.name) for spec in fields(_Fetched)}, change=page.change)
        if links and page.links is not None:
            entry.links = list(dict.fromkeys(page.links))
        if content is not None and 200 <= page.status < 300:
            entry.content = page.content(content, main_content=main_content)
        return entry


# What a feed of index items holds when no optional field is asked for.
FIELDS = tuple(spec.name for spec in fields(_Fetched))


@dataclass
class Match:
    """The grep consumer's item: one matching line of a page's text."""

    url: str
    line: int
    text: str
    before: list[str]
    after: list[str]
    depth: int
    # With a state: whether the page is new, changed or unchanged since the previous walk.
    change: str | None = None


@dataclass
class Extract:
    """The extract consumer's item: the values a selector found on one page."""

    url: str
    depth: int
    values: list[str]
    # With a state: whether the page is new, changed or unchanged since the previous walk.
    change: str | None = None


@dataclass
class Report:
    """How a walk went; the same fields as the report JSON.

    Each of ``failures`` and ``error`` (the seed's, when it could not be fetched) is a record
    with ``url``, ``kind`` and ``reason`` (failures also ``found_on``); the kinds are listed in
    :mod:`sitewalk.failures`.
    """

    seed: str
    origin: str | None
    fetched: int = 0
    stopped: str | None = None
    # The seed's failure record (url, kind, reason) when it could not be fetched, else None.
    error: dict[str, str] | None = None
    failures: list[dict[str, str | None]] = field(default_factory=list)
    robots_skipped: list[str] = field(default_factory=list)
    unvisited: list[str] = field(default_factory=list)
    bytes: int = 0
    elapsed_s: float = 0.0
    # Links on the origin that include, exclude or no_parent left out (each counted once).
    out_of_scope: int = 0
    # The sitemap files read (sitemap=true).
    sitemaps: list[str] = field(default_factory=list)
    # The sitemap files fetched and not read (cut off, an HTTP error status, not gzip or not a
    # sitemap), each with url, kind and reason.
    sitemaps_not_read: list[dict[str, str]] = field(default_factory=list)
    # Each broken URL (4xx, 5xx, a failure: sitewalk.linkreport.BROKEN_KINDS) with url, status,
    # kind, reason, inlinks (how many fetched pages link to it) and linked_from (the first 10).
    broken_links: list[dict[str, Any]] = field(default_factory=list)
    # With check_links: the URLs to check that were not (past SITEWALK_LINKCHECK_MAX_CHECKS, or
    # left when the walk halted).
    unchecked_links: list[str] = field(default_factory=list)
    # With JOBDIR: the pages a resumed walk fetched again because its journal was damaged (the
    # pages done that the lines dropped name); 0 when not resumed or not damaged.
    refetched: int = 0
    # With a state: what changed since the previous walk (sitewalk.memory.Changes: new, changed,
    # unchanged, removed, and why pages not reached are not compared, when they are not); null without.
    changes: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def ending(self, consumer: str = "index", surface: Surface = CLI) -> str:
        """How the walk ended, as the summary says it: ``stopped: max-pages — raise --max-pages``
        (the argument as ``surface`` spells it), ``stopped: no (ran out of pages)`` or
        ``walk failed: <the seed's reason>``."""
        limit = _LIMITS.get("max-matches" if self.stopped == "callback" and consumer == "grep" else self.stopped or "")
        remedy = f"raise {surface.option(limit)}" if limit else None
        stopped = f"{self.stopped} — {remedy}" if remedy else self.stopped or "no (ran out of pages)"
        return f"walk failed: {self.error['reason']}" if self.error is not None else f"stopped: {stopped}"

    def summary(self, consumer: str = "index", surface: Surface = CLI, matches: int | None = None) -> str:
        """The one line logged at the end of every walk: with ``matches``, a grep walk's count; a
        stop names the argument that would change it, as ``surface`` spells it (``consumer``: the
        walk's, whose limit a ``callback`` stop may be)."""
        ending = self.ending(consumer, surface)
        found = f"; {count(matches, 'matching line')}" if matches is not None else ""
        return (
            f"{count(self.fetched, 'page')}, {human_bytes(self.bytes)} in {self.elapsed_s:.2f}s from "
            f"{self.origin or self.seed}{found}; {ending}; failures: {len(self.failures)}; "
            f"robots_skipped: {len(self.robots_skipped)}; unvisited: {len(self.unvisited)}"
            + (f"; refetched: {self.refetched}" if self.refetched else "")
        )


# The argument that changes each stop by a limit.
_LIMITS = {
    "max-pages": "max_pages",
    "deadline": "deadline",
    "max-bytes": "max_bytes",
    "max-matches": "max_matches",
}


def count(number: int, noun: str) -> str:
    """``number`` and ``noun``, in the plural unless it is one: ``1 page``, ``2 pages``."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def human_bytes(count: float) -> str:
    """``count`` bytes for a person: ``512 B``, ``4.7 kB``, ``1.2 MB``, ``20 MB`` (powers of 1000)."""
    for unit in ("B", "kB", "MB", "GB"):
        if abs(count) < 999.5 or unit == "GB":
            break
        count /= 1000
    if unit == "B":
        return f"{count:.0f} B"
    return f"{count:.1f} {unit}".replace(".0 ", " ") if count < 10 else f"{count:.0f} {unit}"
