"""Link checking (``check_links``): the links to other origins and the resources pages embed,
each asked for once, and the fragments of same-origin links, looked up in the pages fetched."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import unquote

import ada_url
from scrapy import Request, signals
from scrapy.exceptions import NotConfigured, StopDownload
from scrapy.http.request import NO_CALLBACK
from twisted.python.failure import Failure

from sitewalk.failures import describe
from sitewalk.indexing import indexing_signals
from sitewalk.items import Page
from sitewalk.kinds import KIND, Kind, kind_of
from sitewalk.linkreport import BROKEN_KINDS, MAX_CHECKS, Unchecked, Verdict, http_reason
from sitewalk.links import UTF8_CHARSETS, parse_html
from sitewalk.state import WalkComponent

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["IN_FLIGHT", "LinkChecker", "Targets", "fragment_found", "read_targets"]

logger = logging.getLogger(__name__)

# The most checks in flight at once, over all hosts (one at a time per host).
IN_FLIGHT = 8
# The hosts with the most checks left that the progress line names.
PROGRESS_HOSTS = 3
# Answers to HEAD that mean "ask with GET".
_HEAD_REFUSED = frozenset({405, 501})
_RESOURCES = 'img[src], script[src], link[href][rel~="stylesheet" i]'
_ANCHORS = "a[href], area[href]"
_UNFOLLOWED = 'a[href][rel~="nofollow" i], area[href][rel~="nofollow" i]'
# Fragments that always have a target (the HTML standard: the top of the document).
_TOP = frozenset({"", "top"})


class Targets(NamedTuple):
    """What one page gives to check: the ``resources`` it embeds (absolute, without fragment), its
    links with a fragment as (URL, fragment), the ``ids`` a link to it may name (``id``
    attributes and ``<a name>``), and the links the walk does not follow (``unfollowed``: absolute,
    without fragment; ``rel=nofollow``, or every link of a page whose robots directives say
    ``nofollow``)."""

    resources: list[str]
    fragments: list[tuple[str, str]]
    ids: frozenset[str]
    unfollowed: list[str]


def read_targets(markup: bytes | str, url: str, headers: Mapping[str, str] | None = None) -> Targets:
    """The :class:`Targets` of the HTML page ``markup`` at ``url`` (relative URLs resolved
    against its first ``<base href>``, as a browser does; ``headers``: its response's, for
    ``X-Robots-Tag``)."""
    tree = parse_html(markup)
    base = url
    element = tree.css_first("base[href]")
    if element is not None:
        base = _join(url, element.attributes.get("href") or "") or url
    resources: dict[str, None] = {}
    for element in tree.css(_RESOURCES):
        attributes = element.attributes
        target = _join(base, attributes.get("href" if element.tag == "link" else "src") or "")
        if target is not None:
            resources[target.partition("#")[0]] = None
    fragments: dict[tuple[str, str], None] = {}
    for element in tree.css(_ANCHORS):
        href = element.attributes.get("href") or ""
        if "#" in href:
            target = _join(base, href)
            if target is not None:
                page, _, fragment = target.partition("#")
                fragments[page, fragment] = None
    ids = {element.attributes.get("id") or "" for element in tree.css("[id]")}
    ids.update(element.attributes.get("name") or "" for element in tree.css("a[name]"))
    # The links sitewalk.links.page_links leaves out, by the same rules (sitewalk.indexing).
    nofollow = indexing_signals(tree, url, headers or {}).nofollow
    unfollowed: dict[str, None] = {}
    for element in tree.css(_ANCHORS if nofollow else _UNFOLLOWED):
        href = (element.attributes.get("href") or "").partition("#")[0]
        target = _join(base, href) if href.strip() or base != url else None
        if target is not None:
            unfollowed[target] = None
    return Targets(list(resources), list(fragments), frozenset(ids), list(unfollowed))


def _join(base: str, href: str) -> str | None:
    try:
        target: str = ada_url.join_url(base, href.strip())
    except ValueError:
        return None
    return target if target.startswith(("http://", "https://")) else None


def fragment_found(fragment: str, ids: frozenset[str]) -> bool:
    """Whether a link's ``fragment`` names a part of a page with ``ids``: as a browser finds it
    (the HTML standard's "indicated part of the document"), as it is or percent-decoded."""
    if fragment.lower() in _TOP:
        return True
    return fragment in ids or unquote(fragment) in ids


class LinkChecker(WalkComponent):
    """With ``check_links``: reads each page the walk hands to its consumers (a spider middleware,
    next to the spider) for the links to check, and checks them beside the walk.

    Each distinct link to another origin, each link the walk does not follow (``rel=nofollow``, or
    on a page whose ``<meta name=robots>`` or ``X-Robots-Tag`` says ``nofollow``; on the walk's
    origin, one it has not queued or fetched as a page) and each resource a page embeds (``img src``,
    ``script src``, ``link rel=stylesheet href``), on any origin, is asked for once with HEAD,
    then with GET where HEAD is refused (405, 501; the body is not downloaded: the download stops
    at the headers), and never followed: a redirect is its verdict (not broken), no links are
    read from it. The requests go through Scrapy's downloader, so the address guard, the
    deadline and the site's cookies apply as to pages; they are not pages (not in max_pages,
    max_bytes, the feeds nor the walk's order). Requests to one host and port go one at a time,
    their starts ``delay`` seconds apart, at most :data:`IN_FLIGHT` over all hosts. On another
    origin robots.txt is not asked (one request per link); on the walk's origin they also keep
    the walk's pace and obey its robots.txt. A same-origin link with a fragment (``page.html#intro``) is broken
    when the page it names was fetched and has no element with that id (nor ``<a name>``).

    At most ``SITEWALK_LINKCHECK_MAX_CHECKS`` URLs are checked (default 1000), shared between
    hosts: a host takes its next URL only while every other host with URLs waiting can still
    check as many as it has (:meth:`_may_take`); the rest, and those a halt (the deadline, an
    interruption) left, are :meth:`unchecked`. :meth:`progress` says how the checks go. The spider awaits
    :meth:`finished` before the walk ends. Kinds: :attr:`sitewalk.kinds.Kind.CHECK` and ``CHECK_OTHER``. Stats:
    ``sitewalk/linkcheck/checked``, ``sitewalk/linkcheck/unchecked``. What it found goes to the
    walk's :class:`~sitewalk.linkreport.LinkBook` (:meth:`~sitewalk.linkreport.LinkBook.links_checked`).
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        if not self.walk.config.check_links:
            raise NotConfigured
        self._most = crawler.settings.getint(MAX_CHECKS)
        self._delay = self.walk.config.delay
        # Every distinct URL to check, in the order pages gave them; their verdicts.
        self._wanted: dict[str, None] = {}
        self.verdicts: dict[str, Verdict] = {}
        # Why a URL wanted was not checked, for those that were not (the rest: the walk's end).
        self._skipped: dict[str, Unchecked] = {}
        self._queues: dict[str, deque[str]] = {}
        # The budget: URLs taken from the queues to check, in all and by host; set when they change.
        self._taken = 0
        self._taken_by: dict[str, int] = {}
        self._changed = asyncio.Event()
        self._past_budget = Unchecked(f"past the link-check budget ({MAX_CHECKS}={self._most})", budget=True)
        # URLs being checked now, in all and by host.
        self._in_flight = 0
        self._in_flight_by: dict[str, int] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._reading: set[asyncio.Task[None]] = set()
        self._slots: asyncio.Semaphore | None = None
        # Fetched pages (by URL and final URL) with their status and ids; links with a fragment.
        self._pages: dict[str, tuple[int, frozenset[str]]] = {}
        self._fragments: list[tuple[str, str]] = []
        crawler.signals.connect(self.headers_received, signal=signals.headers_received)
        self.walk.ledger.add_progress(self.progress)

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for item in result:
            if isinstance(item, Page) and item.is_html and item.body and 200 <= item.status < 300:
                reading = asyncio.ensure_future(self._read(item))
                self._reading.add(reading)
                reading.add_done_callback(self._reading.discard)
            yield item

    async def _read(self, page: Page) -> None:
        utf8 = (page.encoding or "").lower() in UTF8_CHARSETS
        try:
            targets = await asyncio.to_thread(read_targets, page.body if utf8 else page.text, page.final_url, page.headers)
        except Exception as exc:  # noqa: BLE001 - a page that cannot be read gives nothing to check
            logger.warning("%s could not be read for check_links (%s: %s): its links are not checked",
                           page.final_url, type(exc).__name__, exc)
            return
        frontier = self.walk.frontier
        for url in (page.url, page.final_url):
            self._pages.setdefault(url, (page.status, targets.ids))
        fragments = [(url, fragment) for url, fragment in targets.fragments if fragment and frontier.same_origin(url)]
        self._fragments.extend(fragments)
        others = [url for url in page.links or () if not frontier.same_origin(url)]
        # Links the walk does not follow: checked as links to other sites are, never walked; one on
        # the walk's origin only while the walk does not know it as a page (its fetch is its check).
        followed = set(page.links or ())
        unfollowed = [url for url in targets.unfollowed if url not in followed
                      and not (frontier.same_origin(url) and frontier.known(url))]
        self.walk.results.links.add_links(
            page.url, [*targets.resources, *unfollowed, *(f"{url}#{fragment}" for url, fragment in fragments)])
        for url in (*others, *unfollowed, *targets.resources):
            self._want(url)

    def _want(self, url: str) -> None:
        if url in self._wanted:
            return
        self._wanted[url] = None
        if self._taken >= self._most:
            self._skipped[url] = self._past_budget
            return
        if self.walk.halting:
            return
        host = ada_url.URL(url).host
        queue = self._queues.setdefault(host, deque())
        queue.append(url)
        if host not in self._workers or self._workers[host].done():
            self._workers[host] = asyncio.ensure_future(self._work(host, queue))

    def _may_take(self, host: str) -> bool:
        """Whether ``host`` may take its next URL from the checks' budget now: only if what is left
        after it still lets every other host with URLs waiting check as many as ``host`` has (each
        at most its waiting URLs), so no host gets more than its share while another waits."""
        mine = self._taken_by.get(host, 0)
        owed = sum(min(len(queue), mine - self._taken_by.get(other, 0))
                   for other, queue in self._queues.items() if other != host and queue)
        return self._most - self._taken - 1 >= max(owed, 0)

    async def _turn(self, host: str) -> bool:
        """Wait until ``host`` may take its next URL (:meth:`_may_take`); False when the budget is
        spent or the walk is over (no check starts any more)."""
        while not self._over() and self._taken < self._most and not self._may_take(host):
            await self._changed.wait()
        return not self._over() and self._taken < self._most

    def _notify(self) -> None:
        """Wake the hosts waiting for their turn (:meth:`_turn`): the budget's shares changed."""
        self._changed.set()
        self._changed = asyncio.Event()

    async def _work(self, host: str, queue: deque[str]) -> None:
        """Check the URLs of one host (and port), one request at a time, in turn with the other
        hosts (:meth:`_may_take`): on another origin ``delay`` apart, on this host's own clock; on
        the walk's origin at the walk's own pace (:meth:`sitewalk.gate.Gate.start`, Crawl-delay
        included), as its pages."""
        try:
            await self._check_all(queue, host)
        finally:
            if self._taken >= self._most:
                for url in queue:
                    self._skipped.setdefault(url, self._past_budget)
                queue.clear()
            self._notify()

    async def _check_all(self, queue: deque[str], host: str) -> None:
        if self._slots is None:
            self._slots = asyncio.Semaphore(IN_FLIGHT)
        started = float("-inf")
        while queue and await self._turn(host):
            url = queue.popleft()
            self._taken += 1
            self._taken_by[host] = self._taken_by.get(host, 0) + 1
            self._notify()
            self._in_flight += 1
            self._in_flight_by[host] = self._in_flight_by.get(host, 0) + 1
            try:
                started = await self._check(url, started)
            finally:
                self._in_flight -= 1
                self._in_flight_by[host] -= 1

    async def _check(self, url: str, started: float) -> float:
        """Check ``url``: HEAD, then GET where HEAD is refused; ``started``: when this host's
        previous request started (on another origin the next waits ``delay`` after it). Returns
        when its last request started."""
        assert self._slots is not None
        other = not self.walk.frontier.same_origin(url)
        verdict: Verdict | None = None
        for method in ("HEAD", "GET"):
            if self._over():
                break
            # The walk's one clock (sitewalk.clock), as the gate's pace reads it.
            clock = self.walk.clock
            while other and (wait := started + self._delay - clock.now()) > 0:
                await clock.sleep(wait)
            async with self._slots:
                started = clock.now()
                answer = await self._ask(url, method, other)
            if isinstance(answer, Unchecked):
                self._skipped[url], verdict = answer, None
                break
            verdict = answer
            if verdict.status not in _HEAD_REFUSED:
                break
        if verdict is not None:
            self.verdicts[url] = verdict
            self.crawler.stats.inc_value("sitewalk/linkcheck/checked")
        return started

    async def _ask(self, url: str, method: str, other: bool) -> Verdict | Unchecked:
        """One request for ``url``; its verdict, or why it was not checked: the walk's budget cut
        it off, or robots.txt disallows it."""
        # A check on the walk's origin is paced with its pages and obeys robots.txt (sitewalk.kinds).
        meta: dict[str, Any] = {KIND: Kind.CHECK, "dont_redirect": True, "handle_httpstatus_all": True}
        if other:
            # Scrapy's own keys: no robots.txt of the other site (one request per link), and a
            # downloader slot per host and port (Scrapy's are per host name: a site on another port
            # of the walk's host would wait behind its pages).
            meta.update({KIND: Kind.CHECK_OTHER, "dont_obey_robotstxt": True, "download_slot": ada_url.URL(url).host})
        request = Request(url, method=method, callback=NO_CALLBACK, meta=meta)
        try:
            response = await self.crawler.engine.download_async(request)
        except Exception as exc:  # noqa: BLE001 - any failure to fetch it is the link's verdict
            failure = Failure(exc)
            cut = self.walk.ledger.cut_off(failure, request)
            if cut is not None:
                return Unchecked(cut[1], budget=True)
            failed = describe(failure, request)
            # A failure that says nothing of the link (robots.txt, DOWNLOAD_MAXSIZE): not checked.
            if failed.kind in BROKEN_KINDS:
                return Verdict(url, None, failed.kind, failed.reason)
            return Unchecked(failed.reason, budget=False)
        status = response.status
        reason = http_reason(status)
        location = response.headers.get(b"Location")
        if 300 <= status < 400 and location:
            target = response.urljoin(location.decode("latin-1"))
            self.walk.results.links.redirects.append((url, target, status))
            reason = f"{reason}, to {target}"
        return Verdict(url, status, "http", reason)

    def progress(self) -> str:
        """The checks in the walk's progress line (:meth:`sitewalk.ledger.Ledger.add_progress`), in
        all and for the :data:`PROGRESS_HOSTS` hosts with the most left to do:
        ``; link checks: 12 done, 30 left, 4 in flight, 5 unchecked (a.example: 20 left, 3 in flight;
        b.example: 10 left, 1 in flight)``; "" before any link to check."""
        if not self._wanted:
            return ""
        left = sum(len(queue) for queue in self._queues.values())
        line = f"; link checks: {self._taken - self._in_flight} done, {left} left, {self._in_flight} in flight"
        line += f", {len(self._skipped)} unchecked" if self._skipped else ""
        busy = sorted(((len(queue), self._in_flight_by.get(host, 0), host) for host, queue in self._queues.items()
                       if queue or self._in_flight_by.get(host)), key=lambda work: (-work[0] - work[1], work[2]))
        if not busy:
            return line
        hosts = [f"{host}: {waiting} left, {flying} in flight" for waiting, flying, host in busy[:PROGRESS_HOSTS]]
        more = len(busy) - PROGRESS_HOSTS
        return f"{line} ({'; '.join(hosts)}{f'; {more} more hosts' if more > 0 else ''})"

    def _over(self) -> bool:
        """Whether the walk halted or its deadline passed: no check starts any more."""
        return self.walk.halting or self.walk.ledger.seconds_left() <= 0

    def headers_received(self, request: Request) -> None:
        """A GET that checks a link needs the status only: its body is not downloaded."""
        if kind_of(request.meta) in (Kind.CHECK, Kind.CHECK_OTHER) and request.method == "GET":
            raise StopDownload(fail=False)

    async def finished(self) -> None:
        """Wait until every page is read and every link checked, or until the walk halts."""
        while True:
            pending = [task for task in (*self._reading, *self._workers.values()) if not task.done()]
            if not pending:
                break
            if self.walk.halting:
                for task in pending:
                    task.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
                break
            # A halt (the deadline, an interruption) is looked for between waits.
            await asyncio.wait(pending, timeout=0.1)
        unchecked = self.unchecked()
        self.walk.results.links.links_checked({**self.verdicts, **self._fragment_verdicts()}, unchecked, self._most)
        if unchecked:
            self.crawler.stats.set_value("sitewalk/linkcheck/unchecked", len(unchecked))
            logger.info("sitewalk: %d links not checked (the walk's end, or SITEWALK_LINKCHECK_MAX_CHECKS=%d)",
                        len(unchecked), self._most)

    @classmethod
    async def finished_in(cls, crawler: Crawler) -> None:
        """:meth:`finished` of the walk ``crawler`` runs, if it checks links."""
        checker = crawler.get_spider_middleware(cls)
        if checker is not None:
            await checker.finished()

    def unchecked(self) -> dict[str, Unchecked]:
        """The URLs to check that were not, and why: past the checks' budget, cut off by the walk's
        end, or disallowed by the walk origin's robots.txt."""
        ended = Unchecked("the walk ended before it was checked", budget=True)
        return {url: self._skipped.get(url, ended) for url in self._wanted if url not in self.verdicts}

    def _fragment_verdicts(self) -> dict[str, Verdict]:
        """The verdicts of the links with a fragment to a page fetched."""
        verdicts: dict[str, Verdict] = {}
        for url, fragment in self._fragments:
            known = self._pages.get(url)
            if known is None:
                continue
            status, ids = known
            link = f"{url}#{fragment}"
            if fragment_found(fragment, ids):
                verdicts[link] = Verdict(link, status, "http", http_reason(status))
            else:
                verdicts[link] = Verdict(link, status, "fragment", f"the page has no element with id {fragment!r}")
        return verdicts
