"""The walk: breadth-first, same origin, one page at a time, each page handed to the consumers."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import pickle
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider, signals
from scrapy.http import Response
from scrapy.settings import SETTINGS_PRIORITIES
from twisted.python.failure import Failure
from w3lib.url import file_uri_to_path

from sitewalk import failures
from sitewalk.config import WalkConfig
from sitewalk.items import Page, Report
from sitewalk.links import UTF8_CHARSETS, normalize, parse_html
from sitewalk.pagereader import PageReader, ReadPage, read_tree

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from scrapy.crawler import Crawler
    from selectolax.lexbor import LexborHTMLParser

    from sitewalk.downloadermiddlewares import SameOriginMiddleware
    from sitewalk.dupefilters import WalkDupeFilter
    from sitewalk.extensions import WalkBudget

__all__ = ["SitewalkSpider"]

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# HTML pages from this size on are read by the helper processes; smaller ones in the walk's
# process, where they cost about what the round trip to a helper would. A site of small pages
# then needs no helper at all (nor its memory).
HELPER_MIN_BYTES = 16 * 1024
# Pages downloaded and not yet consumed, at most. Their HTML is read by the helper processes
# meanwhile (with two of them for grep, both need pages in hand); the walk's process keeps their
# bodies, not their trees.
AHEAD = 8


class SitewalkSpider(Spider):
    """Walks one site from ``seed``; arguments are the fields of :class:`~sitewalk.config.WalkConfig`.

    The frontier is a FIFO of ``(url, depth, found_on)`` held here, not in Scrapy's scheduler. One
    request is in flight at a time. The next one is released once the previous page has been
    downloaded and counted, its failure recorded, or — when a consumer could stop the walk on that
    page (see :attr:`stop_checks`) — once it went through every consumer, so a stop by a budget, a
    consumer or a signal is followed by no further request. Pages are processed strictly in fetch
    order: the HTML of page *n* is read (title, links, grep's lines) by a helper process, or for
    small pages parsed in a worker thread, while page *n + 1*, already known from the frontier,
    downloads; when the frontier is empty the walk waits for the links of the pages still being
    processed, so the order of requests is exactly breadth-first. Request meta keys: ``sitewalk_depth``, ``sitewalk_found_on``, ``sitewalk_seed``
    (the seed and its redirect hops, which may leave the seed's origin).
    """

    name = "sitewalk"

    def __init__(self, *args: Any, on_page: Callable[[Page], Any] | None = None, **kwargs: Any):
        super().__init__()
        self.config: WalkConfig = WalkConfig.from_mapping(kwargs)
        self.job: str | None = kwargs.get("_job")
        self.on_page = on_page
        self.frontier: deque[tuple[str, int, str | None]] = deque()
        self.failures: list[dict[str, str | None]] = []
        self.robots_skipped: list[str] = []
        self.seed_error: str | None = None
        # Counters a consumer keeps across a resumed walk (e.g. the grep match budget spent).
        self.consumer_state: dict[str, int] = {}
        self.report: Report | None = None
        # Set by WalkDupeFilter when the scheduler builds it: the URLs the walk knows.
        self.dupefilter: WalkDupeFilter
        # Consumers that can stop the walk register a check here: called with the number of pages
        # and body bytes downloaded but not yet consumed (the latest page included), it says
        # whether the consumers might stop on one of them; if so, the next request waits for them.
        self.stop_checks: list[Callable[[int, int], bool]] = []
        # Set by a consumer that reads the visible lines of 2xx HTML pages (grep): the walk then
        # reads them with the page's links, beside the walk (Page.lines).
        self.wants_lines = False
        # Helper processes reading HTML pages, used in turn; started with the first large page.
        self._readers: list[PageReader] = []
        self._readers_starting: asyncio.Future[None] | None = None
        self._pages_read = 0
        self._turn: asyncio.Future[None] | None = None
        self._inflight: tuple[str, int, str | None] | None = None
        # The processing of the latest page handed to parse(): done when it (and so every page
        # before it) has gone through the consumers and added its links to the frontier.
        self._tail: asyncio.Future[None] | None = None
        self._unconsumed_pages = 0
        self._unconsumed_bytes = 0
        # The turn of the latest page, until the next request may go (see _release_early).
        self._held_turn: asyncio.Future[None] | None = None
        self._parser: ThreadPoolExecutor | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SitewalkSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        if spider.config.headers:
            settings = crawler.settings
            headers = dict(settings.getdict("DEFAULT_REQUEST_HEADERS"))
            headers.update(spider.config.headers)
            # -s DEFAULT_REQUEST_HEADERS has cmdline priority: the walk's headers add to it, winning per name.
            priority = max(settings.getpriority("DEFAULT_REQUEST_HEADERS") or 0, SETTINGS_PRIORITIES["spider"])
            settings.set("DEFAULT_REQUEST_HEADERS", headers, priority=priority)
        if spider.job:
            spider.config = _job_outputs(crawler, spider.config, spider.job)
        if spider._load_state() is not None:
            # Running the same command again resumes: the feed grows instead of starting over.
            feeds = crawler.settings.getdict("FEEDS")
            crawler.settings.set(
                "FEEDS", {uri: {**options, "overwrite": False} for uri, options in feeds.items()}, priority="cmdline"
            )
        crawler.signals.connect(spider.request_dropped, signal=signals.request_dropped)
        return spider

    # The components this spider works with; looked up once the engine has built them.
    @property
    def budget(self) -> WalkBudget:
        from sitewalk.extensions import WalkBudget

        budget = self.crawler.get_extension(WalkBudget)
        assert budget is not None, "sitewalk.extensions.WalkBudget must be enabled"
        return budget

    @property
    def origin(self) -> SameOriginMiddleware:
        from sitewalk.downloadermiddlewares import SameOriginMiddleware

        middleware = self.crawler.get_downloader_middleware(SameOriginMiddleware)
        assert middleware is not None, "sitewalk.downloadermiddlewares.SameOriginMiddleware must be enabled"
        return middleware

    async def start(self) -> AsyncIterator[Request]:
        loop = asyncio.get_running_loop()
        if not self._resume():
            seed = normalize(self.config.seed)
            self.dupefilter.add(seed)
            self.frontier.append((seed, 0, None))
        while True:
            while not self.frontier and self._tail is not None and not self._tail.done():
                await asyncio.shield(self._tail)  # the pages in processing may add links
            reason = self.budget.reason_to_stop()
            if reason is not None or not self.frontier:
                self.budget.finish(reason if self.frontier else None)
                return
            await self.budget.wait_turn()
            reason = self.budget.reason_to_stop()
            if reason is not None:
                self.budget.finish(reason)
                return
            self._inflight = url, depth, found_on = self.frontier.popleft()
            self._turn = loop.create_future()
            request = Request(
                url,
                callback=self.parse,
                errback=self.errback,
                meta={
                    "sitewalk_depth": depth,
                    "sitewalk_found_on": found_on,
                    "sitewalk_seed": depth == 0,
                },
            )
            yield request
            await self._turn
            if self.seed_error is not None:
                self.budget.finish(None)
                return

    def unvisited(self) -> list[str]:
        """Known pages not fetched yet: the page in flight (if a stop cut it off) and the frontier."""
        pending = [self._inflight] if self._inflight is not None else []
        return [url for url, _, _ in [*pending, *self.frontier]]

    # -- resumable walks (JOBDIR) -------------------------------------------------------------
    def _state_path(self) -> Path | None:
        jobdir = self.crawler.settings.get("JOBDIR")
        return Path(jobdir) / "sitewalk.state" if jobdir else None

    def save_state(self, finished: bool, elapsed: float) -> None:
        """With JOBDIR, keep what a resumed walk needs: frontier, seen URLs, results, budget spent."""
        path = self._state_path()
        if path is None:
            return
        pending = [self._inflight] if self._inflight is not None else []
        state = {
            "version": 1,
            "seed": self.config.seed,
            "finished": finished,
            "frontier": [*pending, *self.frontier],
            "seen": self.dupefilter.seen_urls(),
            "failures": self.failures,
            "robots_skipped": self.robots_skipped,
            "consumer_state": self.consumer_state,
            "origin": self.origin.origin,
            "pages": self.budget.pages,
            "bytes": self.budget.bytes,
            "elapsed": elapsed,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))
        partial.replace(path)

    def _load_state(self) -> dict[str, Any] | None:
        path = self._state_path()
        if path is None or not path.exists():
            return None
        state: dict[str, Any] = pickle.loads(path.read_bytes())
        if state.get("finished") or state.get("seed") != self.config.seed:
            return None
        return state

    def _resume(self) -> bool:
        state = self._load_state()
        if state is None:
            return False
        self.frontier.extend(state["frontier"])
        for url in state["seen"]:
            self.dupefilter.add(url)
        self.failures.extend(state["failures"])
        self.robots_skipped.extend(state["robots_skipped"])
        self.consumer_state.update(state["consumer_state"])
        if state["origin"] is not None:
            self.origin.set_origin(state["origin"])
        self.budget.resume(state["pages"], state["bytes"], state["elapsed"])
        self.logger.info(
            "resuming the walk in JOBDIR: %d pages fetched, %d queued", state["pages"], len(self.frontier)
        )
        return True

    def _settle(self, turn: asyncio.Future[None] | None) -> None:
        """The request of ``turn`` is over (downloaded, failed or dropped): the next may go."""
        if turn is self._turn:
            self._inflight = None
        if turn is not None and not turn.done():
            turn.set_result(None)

    async def closed(self, reason: str) -> None:
        if self._parser is not None:
            self._parser.shutdown(wait=False)
        if self._readers_starting is not None:
            await self._readers_starting
        readers, self._readers = self._readers, []
        await asyncio.gather(*(reader.close() for reader in readers))

    async def parse(self, response: Response) -> list[Any]:
        # Called for the request in flight: its turn is the current one.
        turn = self._turn
        previous = self._tail
        self._tail = done = asyncio.get_running_loop().create_future()
        try:
            await self._handle_page(response, turn, previous)
        finally:
            self._settle(turn)
            done.set_result(None)
        return []

    async def _handle_page(
        self, response: Response, turn: asyncio.Future[None] | None, previous: asyncio.Future[None] | None
    ) -> None:
        request = response.request
        assert request is not None
        meta = response.meta
        depth: int = meta["sitewalk_depth"]
        url: str = meta.get("redirect_urls", [response.url])[0]
        if meta.get("sitewalk_seed"):
            self.origin.set_origin(response.url)
        content_type = _media_type(response)
        byte_count = len(response.body)
        self.budget.page_fetched(byte_count, depth)
        encoding: str | None = getattr(response, "encoding", None)
        reading: _Reading | None = None
        if content_type in _HTML_TYPES and response.body:
            markup = response.body if encoding in UTF8_CHARSETS else response.text  # type: ignore[attr-defined]
            successful = 200 <= response.status < 300
            reading = self._start_reading(
                markup, response.url, links=successful and depth < self.config.max_depth,
                lines=successful and self.wants_lines,
            )
        self._unconsumed_pages += 1
        self._unconsumed_bytes += byte_count
        self._held_turn = turn
        try:
            self._release_early()
            if previous is not None and not previous.done():
                await asyncio.shield(previous)  # pages go to the consumers in fetch order
            await self._consume(response, url, depth, content_type, encoding, byte_count, reading)
        finally:
            self._unconsumed_pages -= 1
            self._unconsumed_bytes -= byte_count
            self._release_early()

    def _release_early(self) -> None:
        """Let the next page download while the latest ones are consumed, if that is safe.

        Safe when no consumer could stop on the pages in hand (downloaded, not yet consumed), and
        there are few of them (AHEAD): slow consumers must not make the walk hold the site in
        memory. Otherwise the turn waits for the latest page's consumers, or for an earlier page
        to be consumed, whichever comes first.
        """
        turn = self._held_turn
        if turn is None or turn.done():
            self._held_turn = None
            return
        if self._unconsumed_pages > AHEAD:
            return
        if any(check(self._unconsumed_pages, self._unconsumed_bytes) for check in self.stop_checks):
            return
        self._held_turn = None
        self._settle(turn)

    async def _consume(
        self,
        response: Response,
        url: str,
        depth: int,
        content_type: str | None,
        encoding: str | None,
        byte_count: int,
        reading: _Reading | None,
    ) -> None:
        meta = response.meta
        tree, read = await self._finish_reading(reading) if reading is not None else (None, ReadPage(None, [], None))
        page = Page(
            url=url,
            final_url=response.url,
            status=response.status,
            byte_count=byte_count,
            depth=depth,
            content_type=content_type,
            title=read.title,
            found_on=meta.get("sitewalk_found_on"),
            headers={k.decode("latin-1"): b", ".join(v).decode("latin-1") for k, v in response.headers.items()},
            body=response.body,
            encoding=encoding,
            lines=read.lines,
            _tree=tree,
        )
        await self.crawler.engine.scraper.start_itemproc_async(page, response=response)
        add = self.dupefilter.add
        prefix = self.origin.prefix
        offsite = 0
        for link in read.links:
            if not link.startswith(prefix):
                offsite += 1
            elif add(link):
                self.frontier.append((link, depth + 1, response.url))
        if offsite:
            self.crawler.stats.inc_value("sitewalk/origin/offsite_links", offsite)

    # -- reading HTML: in the helper process, else parsed in a worker thread and read here
    def _start_reading(self, markup: bytes | str, url: str, links: bool, lines: bool) -> _Reading:
        large = len(markup) >= HELPER_MIN_BYTES
        if large and self._readers_starting is None:
            self._readers_starting = asyncio.ensure_future(self._start_readers())
        if large and self._readers:
            reader = self._readers[self._pages_read % len(self._readers)]
            self._pages_read += 1
            future: asyncio.Future[Any] = reader.read(markup, url, links, lines)
        else:
            if self._parser is None:
                self._parser = ThreadPoolExecutor(1, thread_name_prefix="sitewalk-parse")
            future = asyncio.get_running_loop().run_in_executor(self._parser, parse_html, markup)
        return _Reading(future, markup, url, links, helper=large and bool(self._readers))

    async def _start_readers(self) -> None:
        # grep's visible lines make reading a page cost more than Scrapy's work for it: two
        # helpers then share the pages (on a machine with cores for them).
        helpers = 2 if self.wants_lines and (os.cpu_count() or 1) > 1 else 1
        started = await asyncio.gather(*(PageReader.start() for _ in range(helpers)))
        self._readers = [reader for reader in started if reader is not None]

    async def _finish_reading(self, reading: _Reading) -> tuple[LexborHTMLParser | None, ReadPage]:
        """The page's tree (None when the helper read it: Page.tree parses on demand) and what was read.

        Links are read before the consumers see the page: they may change the tree (grep does).
        """
        if reading.helper:
            try:
                return None, await reading.future
            except (BrokenPipeError, RuntimeError) as exc:
                self._reader_failed(exc)
                tree = parse_html(reading.markup)
        else:
            tree = await reading.future
        return tree, read_tree(tree, reading.url, links=reading.links, lines=False)

    def _reader_failed(self, exc: BaseException) -> None:
        if isinstance(exc, BrokenPipeError) and self._readers:
            self.logger.warning("%s: reading pages in the walk's process from now on", exc)
            readers, self._readers = self._readers, []
            for reader in readers:
                asyncio.ensure_future(reader.close())
        else:
            self.logger.debug("reading the page here: %s", exc)

    def errback(self, failure: Failure) -> None:
        try:
            self._handle_failure(failure)
        finally:
            self._settle(self._turn)

    def _handle_failure(self, failure: Failure) -> None:
        request: Request = failure.request  # type: ignore[attr-defined]
        meta = request.meta
        url = meta.get("redirect_urls", [request.url])[0]
        if failures.is_robots_refusal(failure):
            if meta.get("sitewalk_seed"):
                if failure.value.unreachable:
                    self.seed_error = f"seed {url} could not be fetched: {failure.value}"
                else:
                    self.seed_error = (
                        f"seed {url} is disallowed by the site's robots.txt "
                        "(set -s ROBOTSTXT_OBEY=false to fetch it anyway)"
                    )
            else:
                self.robots_skipped.append(url)
                self.crawler.stats.inc_value("sitewalk/robots/skipped")
            return
        cut = self.budget.cut_off(failure, request)
        reason = cut or failures.describe(failure, request)
        if meta.get("sitewalk_seed"):
            self.seed_error = f"seed {url} could not be fetched: {reason}"
            return
        self.failures.append({"url": url, "reason": reason, "found_on": meta.get("sitewalk_found_on")})
        self.crawler.stats.inc_value("sitewalk/failures")

    def request_dropped(self, request: Request) -> None:
        """A redirect led to a URL already known: a loop is a failure, any other is a duplicate."""
        if request.meta.get("sitewalk_depth") is None:
            return
        chain = request.meta.get("redirect_urls", [])
        url = chain[0] if chain else request.url
        if request.url in chain:
            hops = " -> ".join([*chain, request.url])
            reason = f"redirect loop: {hops}"
            if request.meta.get("sitewalk_seed"):
                self.seed_error = f"seed {url} could not be fetched: {reason}"
            else:
                self.failures.append({"url": url, "reason": reason, "found_on": request.meta.get("sitewalk_found_on")})
        else:
            self.crawler.stats.inc_value("sitewalk/dupefilter/redirect_to_known")
        self._settle(self._turn)

    def build_report(self, stopped: str | None, elapsed: float) -> Report:
        return Report(
            seed=self.config.seed,
            origin=self.origin.origin,
            fetched=self.budget.pages,
            stopped=stopped,
            failures=list(self.failures),
            robots_skipped=list(self.robots_skipped),
            unvisited=self.unvisited() if stopped else [],
            bytes=self.budget.bytes,
            elapsed_s=round(elapsed, 3),
        )


@dataclasses.dataclass
class _Reading:
    """An HTML page being read: by the helper process (``helper``), else being parsed in a thread."""

    future: asyncio.Future[Any]
    markup: bytes | str
    url: str
    links: bool
    helper: bool


def _job_outputs(crawler: Crawler, config: WalkConfig, job: str) -> WalkConfig:
    """Under scrapyd (a ``_job`` argument), give the job its own feed and report paths.

    scrapyd's ``items_dir`` sets FEEDS to ``<items_dir>/<project>/<spider>/<job>.jl``; the report
    then goes beside it as ``<job>.report.json``. Without items_dir (and without ``-O``), items go
    to ``<SITEWALK_JOBS_DIR>/<spider>/<job>.jsonl`` and the report beside them. A ``report``
    argument always wins.
    """
    feeds = crawler.settings.getdict("FEEDS")
    if not feeds:
        feed = Path(crawler.settings.get("SITEWALK_JOBS_DIR")) / SitewalkSpider.name / f"{job}.jsonl"
        crawler.settings.set("FEEDS", {str(feed): {"format": "jsonlines"}}, priority="spider")
        feeds = {str(feed): {}}
    if config.report is not None:
        return config
    feed_uri = str(next(iter(feeds)))
    if len(feeds) == 1 and (feed_uri.startswith("file://") or "://" not in feed_uri):
        feed_path = Path(file_uri_to_path(feed_uri)) if feed_uri.startswith("file://") else Path(feed_uri)
        report = feed_path.with_name(f"{job}.report.json")
    else:
        report = Path(crawler.settings.get("SITEWALK_JOBS_DIR")) / SitewalkSpider.name / f"{job}.report.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    return dataclasses.replace(config, report=str(report))


def _media_type(response: Response) -> str | None:
    value = response.headers.get(b"Content-Type")
    if not value:
        return None
    media_type = value.decode("latin-1").split(";", 1)[0].strip().lower()
    return media_type or None
