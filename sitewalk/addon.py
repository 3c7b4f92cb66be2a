"""The Scrapy add-on that wires a walk: its components, its consumer and its feeds."""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any

from scrapy.downloadermiddlewares.downloadtimeout import DownloadTimeoutMiddleware
from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware
from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware, RedirectMiddleware
from scrapy.downloadermiddlewares.retry import RetryMiddleware
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as ScrapyRobotsTxtMiddleware
from scrapy.extensions.feedexport import FeedExporter
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.spidermiddlewares.depth import DepthMiddleware
from scrapy.spidermiddlewares.httperror import HttpErrorMiddleware
from scrapy.spidermiddlewares.urllength import UrlLengthMiddleware

from sitewalk import jobs
from sitewalk.downloadermiddlewares import (
    AddressGuardMiddleware,
    BudgetMiddleware,
    RetryAfterMiddleware,
    RobotsTxtMiddleware,
    SameOriginMiddleware,
    ValidatorsMiddleware,
    WalkRedirectMiddleware,
)
from sitewalk.extensions import WalkBudget, WalkFeedExporter, WalkMemory, WalkReport
from sitewalk.items import FIELDS, Extract, IndexEntry, Match
from sitewalk.journal import WalkJournal
from sitewalk.linkcheck import LinkChecker
from sitewalk.pipelines import CallbackPipeline, ExtractPipeline, IndexPipeline, SaveDirPipeline
from sitewalk.progress import TerminalProgress
from sitewalk.render import RenderMiddleware
from sitewalk.spidermiddlewares import ConsumedMiddleware, GrepMiddleware
from sitewalk.state import Walk

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

__all__ = ["Addon"]

# (setting, component, order); order None switches one of Scrapy's own off.
_COMPONENTS: tuple[tuple[str, type, int | None], ...] = (
    ("DOWNLOADER_MIDDLEWARES", AddressGuardMiddleware, 40),
    ("DOWNLOADER_MIDDLEWARES", SameOriginMiddleware, 60),
    ("DOWNLOADER_MIDDLEWARES", RobotsTxtMiddleware, 100),
    ("DOWNLOADER_MIDDLEWARES", BudgetMiddleware, 950),
    # Sees an answer before the redirect middleware: a 429 or 503 is asked again after a pause.
    ("DOWNLOADER_MIDDLEWARES", RetryAfterMiddleware, 900),
    # In the place of Scrapy's: a redirect hop keeps the Referer the spider set.
    ("DOWNLOADER_MIDDLEWARES", RedirectMiddleware, None),
    ("DOWNLOADER_MIDDLEWARES", WalkRedirectMiddleware, 600),
    # Between Scrapy's decompression (590) and redirects (600): a redirect hop is asked
    # conditionally too, and a 304 is seen before it is decompressed (state).
    ("DOWNLOADER_MIDDLEWARES", ValidatorsMiddleware, 595),
    # Sees a page after its redirects (and Scrapy's decompression): render=always/auto run it in a browser.
    ("DOWNLOADER_MIDDLEWARES", RenderMiddleware, 550),
    # The walk keeps its own origin and robots.txt rules; BudgetMiddleware sets every request's
    # timeout; every page is requested once; a meta refresh is not a link.
    ("DOWNLOADER_MIDDLEWARES", OffsiteMiddleware, None),
    ("DOWNLOADER_MIDDLEWARES", ScrapyRobotsTxtMiddleware, None),
    ("DOWNLOADER_MIDDLEWARES", DownloadTimeoutMiddleware, None),
    ("DOWNLOADER_MIDDLEWARES", RetryMiddleware, None),
    ("DOWNLOADER_MIDDLEWARES", MetaRefreshMiddleware, None),
    # The walk keeps every status and URL length, and tracks depth itself: max_depth is its
    # limit and its frontier is breadth first, so DEPTH_LIMIT and DEPTH_PRIORITY do nothing here.
    ("SPIDER_MIDDLEWARES", HttpErrorMiddleware, None),
    ("SPIDER_MIDDLEWARES", UrlLengthMiddleware, None),
    ("SPIDER_MIDDLEWARES", DepthMiddleware, None),
    # The lowest order: it sees the spider's output last.
    ("SPIDER_MIDDLEWARES", ConsumedMiddleware, 10),
    # Next to the spider: it sees the walk's pages before a consumer turns them into its items.
    ("SPIDER_MIDDLEWARES", LinkChecker, 900),
    ("EXTENSIONS", WalkBudget, 10),
    ("EXTENSIONS", WalkReport, 10),
    ("EXTENSIONS", WalkJournal, 10),
    ("EXTENSIONS", WalkMemory, 10),
    ("EXTENSIONS", TerminalProgress, 10),
    # In the place of Scrapy's: an exporter's exception is the page's failure.
    ("EXTENSIONS", FeedExporter, None),
    ("EXTENSIONS", WalkFeedExporter, 0),
    ("ITEM_PIPELINES", CallbackPipeline, 100),
    ("ITEM_PIPELINES", SaveDirPipeline, 200),
)
# Feed formats whose Scrapy exporter the walk replaces (unless FEED_EXPORTERS names one already).
_EXPORTERS = {
    "json": "sitewalk.exporters.JsonItemExporter",
    "csv": "sitewalk.exporters.CsvItemExporter",
    "xml": "sitewalk.exporters.XmlItemExporter",
}
_NEVER = ("scrapy.extensions.telnet.TelnetConsole", "scrapy.extensions.remote_control.RemoteControl")
# What each consumer adds, and the items its feeds hold.
_CONSUMERS: dict[str, tuple[str, type, int, type]] = {
    "index": ("ITEM_PIPELINES", IndexPipeline, 300, IndexEntry),
    "grep": ("SPIDER_MIDDLEWARES", GrepMiddleware, 500, Match),
    "extract": ("ITEM_PIPELINES", ExtractPipeline, 300, Extract),
}


class Addon:
    """Puts the walk's components into Scrapy's component priority dicts (so a project's own
    middlewares, extensions and pipelines add to them), with the one consumer the walk's
    arguments name. Each feed holds that consumer's items only (its ``item_classes``, unless the
    feed sets them); ``CONCURRENT_REQUESTS`` and ``CONCURRENT_REQUESTS_PER_DOMAIN`` are the
    walk's ``concurrency`` (the gate is what limits requests in flight); JSON, CSV and XML feeds
    use :mod:`sitewalk.exporters` (missing values empty, lists as JSON in CSV, a feed appended to
    continued as one file) unless FEED_EXPORTERS names others. The walk's ``headers`` add to
    ``DEFAULT_REQUEST_HEADERS``, winning per name; a resumed walk (JOBDIR) appends to its feeds;
    a scrapyd job without feeds writes ``<SITEWALK_JOBS_DIR>/sitewalk/<job>.jsonl``.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def update_settings(self, settings: BaseSettings) -> None:
        walk = Walk.of(self.crawler)
        setting, consumer, order, item_class = _CONSUMERS[walk.config.consumer]
        for name, component, priority in (*_COMPONENTS, (setting, consumer, order)):
            settings.set_in_component_priority_dict(name, component, priority)
        # The telnet console and remote control must not run (they listen on a port; remote control
        # runs code). Switched off (TELNETCONSOLE_ENABLED, REMOTE_CONTROL_ENABLED) they would still
        # be imported, with aiohttp and twisted.conch: 9.5 MB of a walk's memory. Scrapy imports
        # every key of EXTENSIONS, even one set to None, so they leave EXTENSIONS_BASE by name.
        base = settings.getdict("EXTENSIONS_BASE")
        for path in _NEVER:
            base.pop(path, None)
        settings.set("EXTENSIONS_BASE", base, priority=settings.getpriority("EXTENSIONS_BASE") or 0)
        # The gate decides how many requests are in flight; Scrapy's limits only must not be lower.
        for name in ("CONCURRENT_REQUESTS", "CONCURRENT_REQUESTS_PER_DOMAIN"):
            settings.set(name, walk.config.concurrency, priority=_at_least_spider(settings, name))
        if walk.config.headers:
            headers = {**settings.getdict("DEFAULT_REQUEST_HEADERS"), **walk.config.headers}
            settings.set("DEFAULT_REQUEST_HEADERS", headers, priority=_at_least_spider(settings, "DEFAULT_REQUEST_HEADERS"))
        exporters = {**_EXPORTERS, **settings.getdict("FEED_EXPORTERS")}
        settings.set("FEED_EXPORTERS", exporters, priority=max(settings.getpriority("FEED_EXPORTERS") or 0, SETTINGS_PRIORITIES["addon"]))
        feeds = (jobs.job_feeds(settings, walk.job) if walk.job else None) or settings.getdict("FEEDS")
        options: dict[str, Any] = {"overwrite": False} if walk.resumed else {}
        defaults: dict[str, Any] = {"item_classes": [item_class]}
        if not settings.get("FEED_EXPORT_FIELDS"):
            # Optional fields only when asked for, not as nulls in every item: the index's links
            # and content, and every item's change (with a state).
            changes = ["change"] if walk.config.state is not None else []
            if item_class is IndexEntry:
                asked = [name for name in ("links", "content") if getattr(walk.config, name)]
                defaults["fields"] = [*FIELDS, *asked, *changes]
            else:
                defaults["fields"] = [spec.name for spec in fields(item_class) if spec.name != "change"] + changes
        settings.set(
            "FEEDS",
            {uri: {**defaults, **feed, **options} for uri, feed in feeds.items()},
            priority=_at_least_spider(settings, "FEEDS"),
        )


def _at_least_spider(settings: BaseSettings, name: str) -> int:
    # -s NAME=... has cmdline priority: what the walk adds must not lose to it.
    return max(settings.getpriority(name) or 0, SETTINGS_PRIORITIES["spider"])
