"""The Python API: the same walk as ``scrapy crawl sitewalk``, run from a program."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.settings import Settings

from sitewalk import jobs
from sitewalk._reactor import run_async, run_blocking
from sitewalk.config import WalkConfig
from sitewalk.configchecks import check_run
from sitewalk.exceptions import SeedError, SitewalkError
from sitewalk.hints import API
from sitewalk.items import Extract, Match, Page, Report

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["extract", "extract_async", "grep", "grep_async", "walk", "walk_async"]

# Graceful stops of walks whose caller was cancelled; asyncio holds tasks only weakly.
_STOPPING: set[asyncio.Future[None]] = set()


# An on_page callback: a function or coroutine function of a Page; False stops the walk.
OnPage = Callable[[Page], Any] | None
ScrapySettings = Mapping[str, Any] | None


def walk(seed: str | None = None, *, on_page: OnPage = None, on_page_stops: bool = True,
         settings: ScrapySettings = None, **options: Any) -> Report:
    """Walk the site from ``seed`` and return the report; blocks until the walk ends.

    ``options`` are the walk's arguments (``max_depth``, ``max_pages``, ``delay``, ``deadline``,
    ``max_bytes``, ``report``, ``html_report``, ``junit``, ``check_links``, ``headers``, ``config`` =
    a TOML path or a mapping, ...; the report's ``broken_links`` lists broken links with inlinks);
    ``settings`` are Scrapy settings (e.g. ``{"SITEWALK_GUARD_ALLOW_NETWORKS": "10.0.0.0/8"}``).
    ``on_page(page)`` is called for every fetched page, in fetch order, on the walk's event loop
    thread; returning ``False`` stops the walk (``stopped == "callback"``) and nothing after that
    page is requested: each page waits for its verdict. ``on_page_stops=False`` says it never
    returns ``False``: the next pages then download while it runs (a ``False`` still stops the
    walk, after the pages already downloaded). An exception raised by ``on_page`` ends the walk
    (nothing more is requested, the report is written) and is raised here as it is. Raises
    :class:`SeedError` when the seed cannot be fetched (its ``kind`` says why: ``refused``,
    ``dns``, ``guard``, ``timeout``, ``robots``, ...) and :class:`SitewalkError` for invalid
    arguments or settings, before anything is requested. Can be called any number of times per
    process.
    """
    return run_blocking(_crawl, _Walk.of("walk", seed, options, on_page, on_page_stops, settings, None))[0]


async def walk_async(seed: str | None = None, *, on_page: OnPage = None, on_page_stops: bool = True,
                     settings: ScrapySettings = None, **options: Any) -> Report:
    """:func:`walk` for asyncio programs; several may run concurrently. ``on_page`` may be async."""
    return (await run_async(_crawl, _Walk.of("walk_async", seed, options, on_page, on_page_stops, settings, None)))[0]


def grep(seed: str | None = None, pattern: str | None = None, *, on_page: OnPage = None, on_page_stops: bool = True,
         settings: ScrapySettings = None, **options: Any) -> tuple[list[Match], Report]:
    """Search the visible text of every page for ``pattern``; returns the matches and the report.

    Options as for :func:`walk` plus ``max_matches``, ``ignore_case``, ``fixed_strings`` and
    ``context``. Reaching ``max_matches`` stops the walk (``stopped == "callback"``);
    ``on_page`` is called for every fetched page, as in :func:`walk`.
    """
    call = _Walk.of("grep", seed, {**options, "grep": pattern}, on_page, on_page_stops, settings, Match)
    report, matches = run_blocking(_crawl, call)
    return matches, report


async def grep_async(seed: str | None = None, pattern: str | None = None, *, on_page: OnPage = None,
                     on_page_stops: bool = True, settings: ScrapySettings = None,
                     **options: Any) -> tuple[list[Match], Report]:
    """:func:`grep` for asyncio programs."""
    call = _Walk.of("grep_async", seed, {**options, "grep": pattern}, on_page, on_page_stops, settings, Match)
    report, matches = await run_async(_crawl, call)
    return matches, report


def extract(seed: str | None = None, *, css: str | None = None, xpath: str | None = None, regex: str | None = None,
            on_page: OnPage = None, on_page_stops: bool = True, settings: ScrapySettings = None,
            **options: Any) -> tuple[list[Extract], Report]:
    """Run a ``css`` or ``xpath`` selector (optionally filtered by ``regex``) on every HTML page;
    returns one :class:`Extract` per page with values, and the report."""
    selector = {"css": css, "xpath": xpath, "regex": regex}
    call = _Walk.of("extract", seed, {**options, **selector}, on_page, on_page_stops, settings, Extract)
    report, items = run_blocking(_crawl, call)
    return items, report


async def extract_async(seed: str | None = None, *, css: str | None = None, xpath: str | None = None,
                        regex: str | None = None, on_page: OnPage = None, on_page_stops: bool = True,
                        settings: ScrapySettings = None, **options: Any) -> tuple[list[Extract], Report]:
    """:func:`extract` for asyncio programs."""
    selector = {"css": css, "xpath": xpath, "regex": regex}
    call = _Walk.of("extract_async", seed, {**options, **selector}, on_page, on_page_stops, settings, Extract)
    report, items = await run_async(_crawl, call)
    return items, report


@dataclass(frozen=True)
class _Walk:
    """One call's walk: its arguments, its callback, its Scrapy settings and the items it returns."""

    config: WalkConfig
    on_page: OnPage
    on_page_stops: bool
    settings: ScrapySettings
    collect: type | None

    @classmethod
    def of(cls, function: str, seed: str | None, options: Mapping[str, Any], on_page: OnPage, on_page_stops: bool,
           settings: ScrapySettings, collect: type | None) -> _Walk:
        """The call's walk; bad arguments fail here, before anything starts, and so does a
        consumer other than the one ``function`` (the API function called) returns the items of."""
        values = {key: value for key, value in options.items() if value is not None}
        if seed is not None:
            values["seed"] = seed
        config = WalkConfig.from_mapping(values, API)
        _check_consumer(function, config.consumer)
        check_run(config, _settings(settings), API)
        return cls(config, on_page, on_page_stops, settings, collect)


# Which API function returns the items of each consumer.
_FUNCTIONS = {"index": "walk", "grep": "grep", "extract": "extract"}


def _check_consumer(function: str, consumer: str) -> None:
    base = function.removesuffix("_async")
    suffix = function[len(base):]
    if _FUNCTIONS[consumer] == base:
        return
    if base == "walk":
        instead = "grep(seed, pattern, ...)" if consumer == "grep" else "extract(seed, css=... or xpath=...)"
        raise SitewalkError(f"{function}() returns no {consumer} results: use {instead.replace('(', suffix + '(', 1)}")
    what = "a pattern" if base == "grep" else "css=... or xpath=... (what to extract)"
    raise SitewalkError(f"{function}() needs {what}; walk{suffix}() lists the pages")


def _settings(overrides: Mapping[str, Any] | None) -> Settings:
    settings = Settings()
    settings.setmodule("sitewalk.settings", priority="project")
    # A walk of the API runs on the loop it finds, or one of its own (sitewalk._reactor): Scrapy
    # must not require the sitewalk command's (uvloop's) there.
    settings.set("ASYNCIO_EVENT_LOOP", None, priority="project")
    if overrides:
        settings.setdict(dict(overrides), priority="cmdline")
    return settings


async def _crawl(call: _Walk) -> tuple[Report, list[Any]]:
    from scrapy.crawler import AsyncCrawlerRunner

    from sitewalk.extensions import WalkReport
    from sitewalk.pipelines import CallbackPipeline
    from sitewalk.spiders.sitewalk import SitewalkSpider

    settings = _settings(call.settings)
    jobs.check_jobdir(settings, call.config)
    _install_resolver(settings)
    runner = AsyncCrawlerRunner(settings)
    crawler = runner.create_crawler(SitewalkSpider)
    items: list[Any] = []
    collect = call.collect

    def item_scraped(item: Any) -> None:
        if collect is not None and isinstance(item, collect):
            items.append(item)

    crawler.signals.connect(item_scraped, signal=signals.item_scraped)
    crawl = runner.crawl(crawler, config=call.config, on_page=call.on_page, on_page_stops=call.on_page_stops, surface=API)
    try:
        await asyncio.shield(crawl)
    except asyncio.CancelledError:
        # The caller gave up: stop gracefully ("interrupted"); cancelling Scrapy mid-step would
        # leave the crawl's engine open for good in a long-lived process.
        stopping = asyncio.ensure_future(_interrupt(crawler, crawl))
        _STOPPING.add(stopping)
        stopping.add_done_callback(_STOPPING.discard)
        raise
    callback = crawler.get_item_pipeline(CallbackPipeline)
    if callback is not None and callback.error is not None:
        raise callback.error
    walk = crawler.spider.walk  # type: ignore[union-attr]
    if walk.results.seed_error is not None:
        url, failed = walk.results.seed_error
        raise SeedError(failed.seed_message(url, API), url=url, kind=failed.kind, reason=failed.reason, fix=failed.fix)
    reporter = crawler.get_extension(WalkReport)
    assert reporter is not None and reporter.report is not None
    return reporter.report, items


async def _interrupt(crawler: Crawler, crawl: asyncio.Future[None]) -> None:
    walk = getattr(crawler.spider, "walk", None)
    if walk is None:
        await crawler.stop_async()
    else:
        walk.stop("interrupted", left_unfetched=True)
    await crawl


def _install_resolver(settings: Settings) -> None:
    """Scrapy installs TWISTED_DNS_RESOLVER only in CrawlerProcess; the API does it here.

    The resolver outlives this walk, so it is built with no allowed networks of its own: each
    walk registers its SITEWALK_GUARD_ALLOW_NETWORKS while it runs (AddressGuardMiddleware).
    """
    from sitewalk import guard

    resolver_settings = settings.copy()
    resolver_settings.set("SITEWALK_GUARD_ALLOW_NETWORKS", "", priority="cmdline")
    guard.install_guard_resolver(resolver_settings)
