"""The walk: breadth first, same origin, one page at a time, each page handed to the consumers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider, signals
from scrapy.exceptions import CloseSpider

from sitewalk import jobs
from sitewalk.config import WalkConfig
from sitewalk.extensions import WalkMemory
from sitewalk.failures import HOST_KINDS, Failed, RobotsDisallowed, RobotsUnreachable, describe
from sitewalk.hints import CLI, SCRAPYD
from sitewalk.items import Page, count, page_of
from sitewalk.kinds import DEPTH, FOUND_ON, KIND, SEED, VALIDATED, Kind
from sitewalk.reading import PageReading
from sitewalk.state import Walk
from sitewalk.tickets import TICKET, Dropped, Ticket

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure

    from sitewalk.clock import Clock
    from sitewalk.hints import Surface
    from sitewalk.memory import Memory
    from sitewalk.sitemaps import Sitemaps

__all__ = ["SitewalkSpider"]


class SitewalkSpider(Spider):
    """Walks one site from ``seed``; arguments are the fields of :class:`~sitewalk.config.WalkConfig`.

    The walk's state (:class:`~sitewalk.state.Walk`: frontier, budget, gate, results) is
    ``spider.walk``. :meth:`start` asks the gate when the next request may go and the frontier
    which page it is; :meth:`parse` counts the page, has it read (beside the walk), admits its
    links and yields it to the consumers, both in fetch order; :meth:`errback` records a
    failure. Each request but the seed's carries a ``Referer`` header naming the page that
    linked to it (``REFERER_ENABLED=False`` leaves it out). Request meta keys: ``sitewalk_depth``,
    ``sitewalk_found_on``, ``sitewalk_seed`` (the seed and its redirect hops, which may leave the
    seed's origin).
    """

    name = "sitewalk"

    def __init__(
        self, *args: Any, on_page: Callable[[Page], Any] | None = None, on_page_stops: bool = True,
        surface: Surface | None = None, clock: Clock | None = None, **kwargs: Any
    ) -> None:
        super().__init__()
        # The API and the commands hand over the config they checked; other arguments are checked here.
        given = kwargs.get("config")
        job = kwargs.get("_job")
        # How messages spell what to change: the front end's (the API, the commands), or a
        # scrapyd job's parameters, else scrapy crawl's -a and -s.
        surface = surface or (SCRAPYD if job else CLI)
        config = given if isinstance(given, WalkConfig) else WalkConfig.from_mapping(kwargs, surface)
        # The walk's one clock: the event loop's, unless a test gives a fake one.
        self.walk = Walk(config, job=job, surface=surface, clock=clock)
        # The API's callback and whether it may stop the walk, for CallbackPipeline.
        self.on_page, self.on_page_stops = on_page, on_page_stops
        self._reading = PageReading(config, self.logger)
        self._sitemaps: Sitemaps | None = None
        # The walk's memory across walks (state), from start().
        self._memory: Memory | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        # The settings of the walk's config file (--robots...), below the command line's and the
        # API's; Scrapy reads settings only after it made the spider.
        if spider.walk.config.settings:
            crawler.settings.setdict(spider.walk.config.settings, priority="spider")
        # With JOBDIR the frontier's changes go to the journal, the links of pages at max_depth
        # kept there too, for a resumed walk with a larger max_depth.
        if jobs.journal_path(crawler.settings) is not None:
            spider.walk.frontier.keep_changes()
        state = jobs.replay(crawler.settings, spider.walk.config)
        if state is not None:
            spider.walk.restore(state)
        crawler.signals.connect(spider.request_dropped, signal=signals.request_dropped)
        crawler.signals.connect(spider.spider_idle, signal=signals.spider_idle)
        if spider.walk.config.sitemap and not spider.walk.resumed:
            # Imported only by a walk that reads sitemaps: start-up time (benchmarks/startup.py).
            from sitewalk.sitemaps import Sitemaps

            spider._sitemaps = Sitemaps(crawler, spider.walk)
        return spider

    async def start(self) -> AsyncIterator[Request]:
        self._reading.start(self.crawler)
        memory = self.crawler.get_extension(WalkMemory)
        self._memory = memory.memory if memory is not None else None
        walk = self.walk
        frontier, gate = walk.frontier, walk.gate
        # The page that linked here, as a browser says: Scrapy's RefererMiddleware sees only the
        # requests a callback yields, and the walk's come from here. REFERER_ENABLED switches it off.
        referer = self.crawler.settings.getbool("REFERER_ENABLED")
        if walk.resumed:
            self.logger.info("resuming the walk in JOBDIR: %s fetched, %d queued", count(walk.ledger.pages, "page"), len(frontier))
        else:
            frontier.add_seed(walk.config.seed)
        sitemaps = self._sitemaps
        ledger = walk.ledger
        while True:
            await gate.settled(lambda: not len(frontier))
            reason = walk.reason_to_stop()
            if reason is not None or not (len(frontier) or sitemaps):
                break
            if sitemaps:
                # After the seed's own links, before the pages they lead to: one file at a time,
                # with nothing else in flight.
                await gate.idle()
                await gate.ready(ledger.seconds_left())
                reason = walk.reason_to_stop()
                if reason is not None:
                    break
                url = sitemaps.next_file()
                ticket = gate.request_sent(url, page=False)
                yield Request(url, callback=sitemaps.parsed, errback=sitemaps.failed,
                              meta={KIND: Kind.SITEMAP, TICKET: ticket})
                continue
            await gate.ready(ledger.seconds_left())
            reason = walk.reason_to_stop()
            if reason is not None:
                break
            url, depth, found_on = frontier.pop()
            ticket = gate.request_sent(url)
            # The page holds its place in max_pages from now: it counts the requests sent, not the pages arrived.
            ledger.hold(ticket)
            meta = {DEPTH: depth, FOUND_ON: found_on, SEED: depth == 0, TICKET: ticket}
            headers = {"Referer": found_on} if found_on and referer else None
            yield Request(url, callback=self.parse, errback=self.errback, meta=meta, headers=headers)
        # The requests in flight are the budget's: their pages go through, and their links tell
        # whether the stop left anything unfetched (as they do one request at a time).
        await gate.drained()
        if walk.config.check_links:
            # Imported only by a walk that checks links: start-up time (benchmarks/startup.py).
            from sitewalk.linkcheck import LinkChecker

            await LinkChecker.finished_in(self.crawler)  # and the links still being checked
        # A stop that came meanwhile (a consumer's, on one of those pages) is what ended the walk.
        stopped = walk.stopped(walk.reason_to_stop() if reason is not None else None)
        if stopped is not None:
            await self.crawler.engine.close_spider_async(reason=stopped)

    async def parse(self, response: Response) -> AsyncIterator[Page]:
        walk = self.walk
        gate = walk.gate
        ticket: Ticket = response.meta[TICKET]
        page = page_of(response)
        gate.page_arrived(ticket, page)
        if response.meta.get(SEED):
            walk.frontier.set_origin(response.url)
            if self._sitemaps is not None and walk.frontier.origin is not None:
                self._sitemaps.start(walk.frontier.origin)
        # With a state: the page is new, changed or unchanged; one answered 304 Not Modified goes
        # on from the links the state kept, unread.
        memory = self._memory
        remembered = memory.arrived(ticket.number, response, page, response.meta.get(VALIDATED)) if memory else None
        # One page that cannot be read is that page's failure, not the walk's: it is counted,
        # its links are not followed, and it takes its turn like any other page.
        try:
            if remembered is not None:
                links, failed = remembered, None
            else:
                links, failed = await self._reading.links(ticket, response, page)
            gate.page_read(ticket)
            await ticket.turn_to_admit()
            offsite = walk.admit_links(links, page.depth + 1, response.url)
            if offsite:
                self.crawler.stats.inc_value("sitewalk/origin/offsite_links", offsite)
            gate.links_admitted(ticket)
            walk.results.links.page_fetched(page, links, response.meta)
            await ticket.turn_to_consume()
        except Dropped:
            # The walk let go of this request (a stop after an earlier page, the deadline, an
            # interruption): its page is not handed to the consumers; the report lists it as unvisited.
            return
        if failed is not None:
            self._failed(response.request, page.url, failed)  # type: ignore[arg-type]
            return
        if page.change == "unchanged" and walk.config.changed_only:
            return  # it counts as fetched, and its links are followed, but no consumer sees it
        yield page

    def errback(self, failure: Failure) -> None:
        walk = self.walk
        request: Request = failure.request  # type: ignore[attr-defined]
        ticket: Ticket = request.meta[TICKET]
        url = request.meta.get("redirect_urls", [request.url])[0]
        if failure.check(Dropped):
            # Cut off when the walk let go of it: not fetched, listed as unvisited.
            walk.gate.request_over(ticket)
            return
        if failure.check(RobotsDisallowed, RobotsUnreachable):
            exc = failure.value
            if not request.meta.get(SEED):
                walk.gate.request_over(ticket, lambda: self._robots_skipped(url))
                return
            # A host that cannot be reached fails its robots.txt first: that is the seed's own problem.
            if isinstance(exc, RobotsUnreachable) and exc.kind in HOST_KINDS:
                failed = exc.failed
                walk.gate.request_over(ticket, lambda: self._failed(request, url, failed))
                return
        cut = walk.ledger.cut_off(failure, request)
        if cut is not None:
            self.logger.info("%s %s: stopping the walk", url, cut[1])
            if cut[0] == "max-bytes":
                walk.out_of_bytes(ticket)
            else:
                walk.stop(cut[0], left_unfetched=True)
        failed = Failed("budget", cut[1]) if cut is not None else describe(failure, request)
        walk.gate.request_over(ticket, lambda: self._failed(request, url, failed))

    def _robots_skipped(self, url: str) -> None:
        self.walk.results.robots_skipped.append(url)
        self.crawler.stats.inc_value("sitewalk/robots/skipped")

    def spider_idle(self) -> None:
        """A stop that came after the last request was sent (the deadline, a signal, while the
        last pages were read or consumed) ends the walk with its reason, not as finished."""
        stopped = self.walk.stopped(self.walk.reason_to_stop())
        if stopped is not None:
            raise CloseSpider(stopped)

    def request_dropped(self, request: Request) -> None:
        """A redirect led to a URL already known: a loop is a failure, any other a duplicate."""
        if request.meta.get(DEPTH) is None:
            return
        chain = request.meta.get("redirect_urls", [])
        if request.url in chain:
            failed = Failed("redirect-loop", "redirect loop: " + " -> ".join([*chain, request.url]))
            self.walk.gate.request_over(request.meta[TICKET], lambda: self._failed(request, chain[0], failed))
        else:
            self.walk.gate.request_over(request.meta[TICKET])
            self.walk.results.links.redirected_to_known(request.url, request.meta)
            self.crawler.stats.inc_value("sitewalk/dupefilter/redirect_to_known")

    def _failed(self, request: Request, url: str, failed: Failed) -> None:
        if request.meta.get(SEED):
            self.walk.results.seed_error = (url, failed)
            return
        self.walk.page_failed(url, request.meta.get(FOUND_ON), failed, self.crawler.stats)

    async def closed(self, reason: str) -> None:
        await self._reading.close()
