"""The Scrapy add-on that wires a walk: its components, its consumer and its feeds."""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any

from scrapy.settings import SETTINGS_PRIORITIES

from sitewalk import items, jobs
from sitewalk._compat import public_suffix_list_offline
from sitewalk.items import FIELDS
from sitewalk.state import Walk

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

__all__ = ["Addon"]

# Components are named by import path, not imported here: Scrapy imports those it builds, and a
# walk imports only what it uses (start-up time, benchmarks/startup.py). The always-on ones check
# their own settings in from_crawler (NotConfigured when off).
# (setting, component, order); order None switches one of Scrapy's own off.
_COMPONENTS: tuple[tuple[str, str, int | None], ...] = (
    ("DOWNLOADER_MIDDLEWARES", "sitewalk.downloadermiddlewares.guard.AddressGuardMiddleware", 40),
    ("DOWNLOADER_MIDDLEWARES", "sitewalk.downloadermiddlewares.origin.SameOriginMiddleware", 60),
    ("DOWNLOADER_MIDDLEWARES", "sitewalk.downloadermiddlewares.robots.RobotsTxtMiddleware", 100),
    ("DOWNLOADER_MIDDLEWARES", "sitewalk.downloadermiddlewares.budget.BudgetMiddleware", 950),
    # Sees an answer before the redirect middleware: a 429 or 503 is asked again after a pause.
    ("DOWNLOADER_MIDDLEWARES", "sitewalk.downloadermiddlewares.retryafter.RetryAfterMiddleware", 900),
    # In the place of Scrapy's: a redirect hop keeps the Referer the spider set.
    ("DOWNLOADER_MIDDLEWARES", "scrapy.downloadermiddlewares.redirect.RedirectMiddleware", None),
    ("DOWNLOADER_MIDDLEWARES", "sitewalk.downloadermiddlewares.redirect.WalkRedirectMiddleware", 600),
    # The walk keeps its own origin and robots.txt rules; BudgetMiddleware sets every request's
    # timeout; every page is requested once; a meta refresh is not a link.
    ("DOWNLOADER_MIDDLEWARES", "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware", None),
    ("DOWNLOADER_MIDDLEWARES", "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware", None),
    ("DOWNLOADER_MIDDLEWARES", "scrapy.downloadermiddlewares.downloadtimeout.DownloadTimeoutMiddleware", None),
    ("DOWNLOADER_MIDDLEWARES", "scrapy.downloadermiddlewares.retry.RetryMiddleware", None),
    ("DOWNLOADER_MIDDLEWARES", "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware", None),
    # The walk keeps every status and URL length, and tracks depth itself: max_depth is its
    # limit and its frontier is breadth first, so DEPTH_LIMIT and DEPTH_PRIORITY do nothing here.
    ("SPIDER_MIDDLEWARES", "scrapy.spidermiddlewares.httperror.HttpErrorMiddleware", None),
    ("SPIDER_MIDDLEWARES", "scrapy.spidermiddlewares.urllength.UrlLengthMiddleware", None),
    ("SPIDER_MIDDLEWARES", "scrapy.spidermiddlewares.depth.DepthMiddleware", None),
    # The lowest order: it sees the spider's output last.
    ("SPIDER_MIDDLEWARES", "sitewalk.spidermiddlewares.ConsumedMiddleware", 10),
    ("EXTENSIONS", "sitewalk.extensions.WalkBudget", 10),
    ("EXTENSIONS", "sitewalk.extensions.WalkReport", 10),
    ("EXTENSIONS", "sitewalk.progress.TerminalProgress", 10),
    # In the place of Scrapy's: an exporter's exception is the page's failure.
    ("EXTENSIONS", "scrapy.extensions.feedexport.FeedExporter", None),
    ("EXTENSIONS", "sitewalk.extensions.WalkFeedExporter", 0),
    ("ITEM_PIPELINES", "sitewalk.pipelines.CallbackPipeline", 100),
)
# Components a walk has only when it asks for them (each still checks its own setting):
# (setting, component, order, whether the walk's config and settings ask for it).
_OPTIONAL: tuple[tuple[str, str, int, Callable[[Walk, BaseSettings], bool]], ...] = (
    # Sees a page after its redirects (and Scrapy's decompression): render=always/auto run it in a browser.
    ("DOWNLOADER_MIDDLEWARES", "sitewalk.render.downloadermiddlewares.RenderMiddleware", 550,
     lambda walk, _: walk.config.render != "never"),
    # Next to the spider: it sees the walk's pages before a consumer turns them into its items.
    ("SPIDER_MIDDLEWARES", "sitewalk.linkcheck.LinkChecker", 900, lambda walk, _: walk.config.check_links),
    ("EXTENSIONS", "sitewalk.journal.WalkJournal", 10, lambda _, settings: jobs.journal_path(settings) is not None),
    ("ITEM_PIPELINES", "sitewalk.pipelines.SaveDirPipeline", 200, lambda walk, _: walk.config.save_dir is not None),
    # With a state: between Scrapy's decompression (590) and redirects (600), so that a redirect
    # hop is asked conditionally too and a 304 is seen before it is decompressed.
    ("DOWNLOADER_MIDDLEWARES", "sitewalk.downloadermiddlewares.validators.ValidatorsMiddleware", 595,
     lambda walk, _: walk.config.state is not None),
    ("EXTENSIONS", "sitewalk.extensions.WalkMemory", 10, lambda walk, _: walk.config.state is not None),
)
# Feed formats whose Scrapy exporter the walk replaces (unless FEED_EXPORTERS names one already).
_EXPORTERS = {
    "json": "sitewalk.exporters.JsonItemExporter",
    "csv": "sitewalk.exporters.CsvItemExporter",
    "xml": "sitewalk.exporters.XmlItemExporter",
}
_NEVER = ("scrapy.extensions.telnet.TelnetConsole", "scrapy.extensions.remote_control.RemoteControl")
# What each consumer adds, and the name of the items its feeds hold (sitewalk.items).
_CONSUMERS: dict[str, tuple[str, str, int, str]] = {
    "index": ("ITEM_PIPELINES", "sitewalk.pipelines.IndexPipeline", 300, "sitewalk.items.IndexEntry"),
    "grep": ("SPIDER_MIDDLEWARES", "sitewalk.spidermiddlewares.GrepMiddleware", 500, "sitewalk.items.Match"),
    "extract": ("ITEM_PIPELINES", "sitewalk.pipelines.ExtractPipeline", 300, "sitewalk.items.Extract"),
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

    Rendering, link checking, the JOBDIR journal, save_dir and the state are wired only for a walk
    that asks for them, so that a walk imports only the components it uses.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def update_settings(self, settings: BaseSettings) -> None:
        walk = Walk.of(self.crawler)
        # No connection the walk does not make itself: Scrapy's cookie middleware would fetch the
        # Public Suffix List from the internet, past the address guard and the budgets.
        public_suffix_list_offline()
        setting, consumer, order, item_class = _CONSUMERS[walk.config.consumer]
        optional = [(name, component, order) for name, component, order, wanted in _OPTIONAL if wanted(walk, settings)]
        for name, component, priority in (*_COMPONENTS, *optional, (setting, consumer, order)):
            _set_component(settings, name, component, priority)
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
            if item_class == "sitewalk.items.IndexEntry":
                asked = [name for name in ("links", "content") if getattr(walk.config, name)]
                defaults["fields"] = [*FIELDS, *asked, *changes]
            else:
                item_fields = fields(getattr(items, item_class.rpartition(".")[2]))
                defaults["fields"] = [spec.name for spec in item_fields if spec.name != "change"] + changes
        settings.set(
            "FEEDS",
            {uri: {**defaults, **feed, **options} for uri, feed in feeds.items()},
            priority=_at_least_spider(settings, "FEEDS"),
        )


def _set_component(settings: BaseSettings, name: str, path: str, priority: int | None) -> None:
    """``settings.set_in_component_priority_dict`` for a component named by its import path: it
    takes a class (and imports every path already in the dict to compare them with it); a project
    naming the same component by another key is left to Scrapy's own deduplication, which keeps
    the last key given (this one) with a warning."""
    components = settings.getdict(name)
    components[path] = priority
    settings.set(name, components, settings.getpriority(name) or 0)


def _at_least_spider(settings: BaseSettings, name: str) -> int:
    # -s NAME=... has cmdline priority: what the walk adds must not lose to it.
    return max(settings.getpriority(name) or 0, SETTINGS_PRIORITIES["spider"])
