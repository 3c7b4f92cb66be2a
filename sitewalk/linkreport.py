"""Which fetched page links to which URL, and which of those URLs are broken: the report's
``broken_links``, the HTML report's tables and the JUnit file."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sitewalk.hints import Surface
    from sitewalk.items import Page

__all__ = [
    "BROKEN_KINDS", "BUDGET_STOPS", "FIRST_INLINKS", "Incomplete", "LinkBook", "PageRecord", "Unchecked", "Verdict",
    "http_reason", "incomplete", "write_junit",
]

# The failure kinds (sitewalk.failures) that make a link broken: the URL could not be fetched.
# Not: robots (never asked for), budget (the walk's own limit cut it), too-large (DOWNLOAD_MAXSIZE,
# the walk's choice), off-origin (a redirect that works, to another site), read and consumer (the
# page was fetched).
BROKEN_KINDS = frozenset({
    "network", "timeout", "dns", "refused", "protocol", "guard", "redirect-loop", "too-many-redirects", "other",
})
# The stops by a budget, and the walk argument that raises each: they leave pages of the walk's scope
# unfetched. max_depth is scope, not a budget: a walk that ran out of pages within it is complete.
BUDGET_STOPS = {"max-pages": "max_pages", "max-bytes": "max_bytes", "deadline": "deadline"}
# The setting that bounds check_links' requests.
MAX_CHECKS = "SITEWALK_LINKCHECK_MAX_CHECKS"
# How many of the pages that link to a URL are named; all of them are counted.
FIRST_INLINKS = 10
# XML 1.0 has no place for these characters, even escaped; a reason may carry them.
_NOT_XML = dict.fromkeys(c for c in range(32) if c not in (9, 10, 13))


@dataclass(slots=True)
class PageRecord:
    """What the reports say of one fetched page; ``latency``: Scrapy's ``download_latency``, seconds."""

    url: str
    final_url: str
    status: int
    depth: int
    byte_count: int
    latency: float | None
    title: str | None


@dataclass(slots=True)
class Verdict:
    """What became of one URL the walk checked: its ``status`` (None when it failed), ``kind``
    (``http`` for a status, ``fragment`` for a page without the part a link's fragment names,
    else a failure kind) and ``reason``."""

    url: str
    status: int | None
    kind: str
    reason: str

    @property
    def broken(self) -> bool:
        return self.status is None or self.status >= 400 or self.kind == "fragment"


@dataclass(frozen=True, slots=True)
class Unchecked:
    """Why check_links did not check a link: its ``reason``, and whether a budget left it
    (``budget``: past SITEWALK_LINKCHECK_MAX_CHECKS, or the walk's end), which leaves the check
    incomplete; a link robots.txt disallows is the walk's choice, not a gap."""

    reason: str
    budget: bool


@dataclass(frozen=True, slots=True)
class Incomplete:
    """Why a walk's check did not cover its site: the budget stop (``max-pages``, ``max-bytes``,
    ``deadline``) or ``max-checks``, the known pages left unvisited, the links a budget left
    unchecked, and what to change (``fix``, as the walk's front end spells it)."""

    reason: str
    unvisited: int
    unchecked: int
    fix: str

    @property
    def short(self) -> str:
        """What the summary says of it: ``incomplete: max-pages left 37 pages unvisited``."""
        parts = [f"{_count(self.unvisited, 'page')} unvisited"] if self.reason != "max-checks" else []
        if self.unchecked:
            parts.append(f"{_count(self.unchecked, 'link')} unchecked")
        return f"incomplete: {self.reason} left {' and '.join(parts)}"

    def message(self, allowed: str) -> str:
        """The JUnit testcase's message; ``allowed``: the flag that accepts an incomplete check."""
        return f"the check is {self.short}: {self.fix} (or give {allowed} to accept an incomplete check)"


def incomplete(stopped: str | None, unvisited: int, book: LinkBook, surface: Surface) -> Incomplete | None:
    """Whether a walk that ended with ``stopped`` (the report's), ``unvisited`` known pages left
    and ``book``'s unchecked links covered its site: None if it did, else why not."""
    unchecked = sum(why.budget for why in book.unchecked_why.values())
    if stopped in BUDGET_STOPS:
        limit = BUDGET_STOPS[stopped]
        return Incomplete(stopped, unvisited, unchecked, f"raise {surface.option(limit)}")
    if unchecked:
        most = book.max_checks or 0
        return Incomplete("max-checks", 0, unchecked, f"raise {surface.setting(MAX_CHECKS, max(most * 2, 1000))}")
    return None


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def http_reason(status: int) -> str:
    """``HTTP 404 Not Found``; a status without a standard phrase is ``HTTP 599``."""
    try:
        return f"HTTP {status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"HTTP {status}"


class LinkBook:
    """The walk's fetched pages, in the order they were consumed, and every link each has.

    Each distinct URL is kept once (an id); each page keeps its links as 4-byte ids, each once;
    for each URL, how many pages link to it and the first :data:`FIRST_INLINKS` of them (4-byte
    page numbers): a 20,000-page walk with 50 links a page keeps about 4 MB of links. A page's
    redirect hops are kept as ``(from, to, status)``. The links of a page are those the walk read
    (:func:`sitewalk.links.page_links`: followable, on any origin).
    """

    def __init__(self) -> None:
        self.pages: list[PageRecord] = []
        self.redirects: list[tuple[str, str, int | None]] = []
        self._ids: dict[str, int] = {}
        self._urls: list[str] = []
        self._inlinks: array[int] = array("I")
        self._first: list[array[int]] = []
        self._links: list[array[int]] = []
        # Page index by its URL and its final URL (a link may name either).
        self._page_of: dict[str, int] = {}
        # The first status of URLs whose redirects led to a page known already.
        self._redirected: dict[str, int] = {}
        # With check_links: the verdicts of the links it checked, and the URLs it left unchecked.
        self._checked: dict[str, Verdict] = {}
        self.unchecked: list[str] = []
        self.unchecked_why: dict[str, Unchecked] = {}
        # SITEWALK_LINKCHECK_MAX_CHECKS of the walk that checked them.
        self.max_checks: int | None = None

    def page_fetched(self, page: Page, links: list[str], meta: Mapping[str, Any]) -> None:
        """A page went through the walk with ``links`` (its response's ``meta`` has the download
        time and the redirect hops)."""
        index = len(self.pages)
        self.pages.append(PageRecord(page.url, page.final_url, page.status, page.depth, page.byte_count,
                                     meta.get("download_latency"), page.title))
        self._page_of.setdefault(page.url, index)
        self._page_of.setdefault(page.final_url, index)
        self._hops(page.final_url, meta)
        self._links.append(array("I"))
        self._add(index, links)

    def add_links(self, url: str, links: list[str]) -> None:
        """More links of the fetched page ``url`` (check_links: the resources it embeds, its links
        with a fragment); those it has already are not counted again."""
        index = self._page_of.get(url)
        if index is not None:
            self._add(index, links)

    def _add(self, index: int, links: list[str]) -> None:
        ids = self._links[index]
        had = set(ids)
        known, urls, inlinks, firsts = self._ids, self._urls, self._inlinks, self._first
        # Each URL once per page, however often the page links to it.
        for link in dict.fromkeys(links):
            number = known.get(link)
            if number is None:
                number = known[link] = len(urls)
                urls.append(link)
                inlinks.append(0)
                firsts.append(array("I"))
            elif number in had:
                continue
            ids.append(number)
            inlinks[number] += 1
            first = firsts[number]
            if len(first) < FIRST_INLINKS:
                first.append(index)

    def links_checked(self, verdicts: dict[str, Verdict], unchecked: dict[str, Unchecked], max_checks: int) -> None:
        """What check_links found (:mod:`sitewalk.linkcheck`): the verdicts of links to other
        sites, of resources and of links with a fragment, the URLs it did not check and why, and
        the most it could check (``max_checks``)."""
        self._checked.update(verdicts)
        self.unchecked = list(unchecked)
        self.unchecked_why = unchecked
        self.max_checks = max_checks

    def redirected_to_known(self, url: str, meta: Mapping[str, Any]) -> None:
        """A redirect led to ``url``, a page the walk knows already (so no page comes of it): its
        hops are kept, and the URL it started from answered with its status."""
        self._hops(url, meta)
        reasons = meta.get("redirect_reasons", ())
        if reasons and isinstance(reasons[0], int):
            self._redirected[meta["redirect_urls"][0]] = reasons[0]

    def _hops(self, url: str, meta: Mapping[str, Any]) -> None:
        """Keep the redirect hops that led to ``url`` as (from, to, status)."""
        hops = [*meta.get("redirect_urls", ()), url]
        reasons = meta.get("redirect_reasons", ())
        for step in range(len(hops) - 1):
            reason = reasons[step] if step < len(reasons) else None
            self.redirects.append((hops[step], hops[step + 1], reason if isinstance(reason, int) else None))

    def inlinks(self, url: str) -> tuple[int, list[str]]:
        """How many fetched pages link to ``url``, and the (final) URLs of the first of them."""
        number = self._ids.get(url)
        if number is None:
            return 0, []
        return self._inlinks[number], [self.pages[index].final_url for index in self._first[number]]

    def verdicts(self, failures: list[dict[str, str | None]], error: dict[str, str] | None = None) -> dict[str, Verdict]:
        """What became of each URL the walk checked: each fetched page's status, the failures of
        :data:`BROKEN_KINDS` (``error``: the seed's), and the links check_links checked."""
        found: dict[str, Verdict] = dict(self._checked)
        records: list[Mapping[str, str | None]] = [*failures, *([error] if error else [])]
        for record in records:
            url, kind = record["url"], record["kind"]
            if url and kind in BROKEN_KINDS:
                found.setdefault(url, Verdict(url, None, kind, record["reason"] or kind))
        for url, index in self._page_of.items():
            status = self.pages[index].status
            found[url] = Verdict(url, status, "http", http_reason(status))
        for url, status in self._redirected.items():
            found.setdefault(url, Verdict(url, status, "http", http_reason(status)))
        return found

    def broken(self, verdicts: dict[str, Verdict]) -> list[dict[str, Any]]:
        """The report's ``broken_links``: each broken URL once (by the URL it was requested as), with
        its inlinks, most linked first (then in the order pages first linked to them; the seed first)."""
        rows: list[tuple[int, int, dict[str, Any]]] = []
        for url, verdict in verdicts.items():
            if not verdict.broken or (url in self._page_of and self.pages[self._page_of[url]].url != url):
                continue
            count, first = self.inlinks(url)
            rows.append((-count, self._ids.get(url, -1), {"url": url, "status": verdict.status, "kind": verdict.kind, "reason": verdict.reason,
                                 "inlinks": count, "linked_from": first}))
        rows.sort(key=lambda row: row[:2])
        return [row for _, _, row in rows]

    def page_links(self) -> Iterator[tuple[PageRecord, list[str]]]:
        """Each fetched page with its links (each once), in the order the walk fetched them."""
        urls = self._urls
        for page, ids in zip(self.pages, self._links, strict=True):
            yield page, [urls[number] for number in ids]

    def checked_links(self, verdicts: dict[str, Verdict]) -> Iterator[tuple[PageRecord, list[Verdict]]]:
        """Each fetched page with the verdicts of its links the walk checked, in the page's order."""
        for page, links in self.page_links():
            yield page, [verdicts[url] for url in links if url in verdicts]


def write_junit(
    path: str, book: LinkBook, verdicts: dict[str, Verdict], gap: Incomplete | None = None,
    allow: str = "-a allow_incomplete=true", accepted: bool = False,
) -> None:
    """The JUnit XML file: one testsuite per fetched page (named by its final URL), one testcase per
    link it has that the walk checked, a broken one a ``failure`` whose type is its kind, and one
    per link check_links left unchecked, ``skipped`` with why. A walk that did not cover its site
    (``gap``) ends with a testsuite ``sitewalk`` whose testcase says why: a ``failure`` of type
    ``incomplete`` naming ``allow``, the flag that accepts it, or ``skipped`` when it was given
    (``accepted``)."""
    root = ET.Element("testsuites", name="sitewalk")
    total = failed = skipped = 0
    unchecked = book.unchecked_why
    for page, urls in book.page_links():
        links = [verdicts[url] for url in urls if url in verdicts]
        gaps = [url for url in urls if url in unchecked and url not in verdicts]
        broken = sum(verdict.broken for verdict in links)
        suite = ET.SubElement(root, "testsuite", name=_xml(page.final_url), tests=str(len(links) + len(gaps)),
                              failures=str(broken), errors="0", skipped=str(len(gaps)), time=f"{page.latency or 0:.3f}")
        properties = ET.SubElement(suite, "properties")
        for name, value in (("status", page.status), ("depth", page.depth)):
            ET.SubElement(properties, "property", name=name, value=str(value))
        for verdict in links:
            case = ET.SubElement(suite, "testcase", classname=_xml(page.final_url), name=_xml(verdict.url))
            if verdict.broken:
                failure = ET.SubElement(case, "failure", message=_xml(verdict.reason), type=verdict.kind)
                failure.text = _xml(f"{verdict.url} linked from {page.final_url}: {verdict.reason}")
        for url in gaps:
            case = ET.SubElement(suite, "testcase", classname=_xml(page.final_url), name=_xml(url))
            ET.SubElement(case, "skipped", message=_xml(f"not checked: {unchecked[url].reason}"))
        total += len(links) + len(gaps)
        failed += broken
        skipped += len(gaps)
    if gap is not None:
        suite = ET.SubElement(root, "testsuite", name="sitewalk", tests="1", failures=str(int(not accepted)), errors="0",
                              skipped=str(int(accepted)), time="0.000")
        case = ET.SubElement(suite, "testcase", classname="sitewalk", name="the walk covered the site")
        if accepted:
            ET.SubElement(case, "skipped", message=_xml(f"the check is {gap.short} (accepted by {allow})"))
        else:
            failure = ET.SubElement(case, "failure", message=_xml(gap.message(allow)), type="incomplete")
            failure.text = _xml(f"stopped: {gap.reason}; pages left unvisited: {gap.unvisited}; "
                                f"links left unchecked: {gap.unchecked}; {gap.fix}")
        total += 1
        failed += int(not accepted)
        skipped += int(accepted)
    root.set("tests", str(total))
    root.set("failures", str(failed))
    root.set("skipped", str(skipped))
    ET.indent(root)
    Path(path).write_bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n")


def _xml(text: str) -> str:
    return text.translate(_NOT_XML)
