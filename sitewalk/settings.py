"""Scrapy settings of the sitewalk project: one strict, polite, breadth-first walk."""

from __future__ import annotations

from scrapy.settings import default_settings as _scrapy_defaults

from sitewalk import __version__
from sitewalk._startup import import_http11_handler

# Imported here, early, because Scrapy's TLS modules inspect the whole call stack at import.
import_http11_handler()

BOT_NAME = "sitewalk"
SPIDER_MODULES = ["sitewalk.spiders"]
NEWSPIDER_MODULE = "sitewalk.spiders"
# `scrapy crawl` that reports bad arguments and an unfetchable seed in one line.
COMMANDS_MODULE = "sitewalk.commands"

USER_AGENT = f"sitewalk/{__version__} (+https://pypi.org/project/sitewalk/)"
ROBOTSTXT_OBEY = True
ROBOTSTXT_USER_AGENT = "sitewalk"

# One request at a time; the spider's frontier releases the next one only when the previous
# page has been consumed. Breadth-first settings for anything that does use the scheduler.
CONCURRENT_REQUESTS = 1
CONCURRENT_REQUESTS_PER_DOMAIN = 1
CONCURRENT_ITEMS = 1
DEPTH_PRIORITY = 1
SCHEDULER_MEMORY_QUEUE = "scrapy.squeues.FifoMemoryQueue"
SCHEDULER_DISK_QUEUE = "scrapy.squeues.PickleFifoDiskQueue"
DUPEFILTER_CLASS = "sitewalk.dupefilters.WalkDupeFilter"
# The walk paces itself (WalkBudget): delay between request starts, never shortened by jitter.
DOWNLOAD_DELAY = 0
DOWNLOAD_DELAY_JITTER = 0

# Every page is requested once; an HTTP error status is a fetched page, not a failure.
RETRY_ENABLED = False
HTTPERROR_ALLOW_ALL = True
METAREFRESH_ENABLED = False
DOWNLOAD_TIMEOUT = 60
DOWNLOAD_MAXSIZE = 0
DOWNLOAD_WARNSIZE = 0

# Only http(s) is fetched.
DOWNLOAD_HANDLERS = {
    "http": "sitewalk.downloadhandlers.WalkHTTPDownloadHandler",
    "https": "sitewalk.downloadhandlers.WalkHTTPDownloadHandler",
    "data": None,
    "file": None,
    "s3": None,
    "ftp": None,
}

# The address guard: nothing reaches a non-public address unless its network is listed here
# (comma-separated CIDRs, e.g. "10.0.0.0/8" for an intranet site). Enforced by the resolver,
# which sees every connection; proxies are off so they cannot bypass it.
SITEWALK_GUARD_ALLOW_NETWORKS = ""
TWISTED_DNS_RESOLVER = "sitewalk.guard.GuardResolver"
HTTPPROXY_ENABLED = False

# The walk's components live in the *_BASE settings, so that a user's DOWNLOADER_MIDDLEWARES,
# SPIDER_MIDDLEWARES, EXTENSIONS or ITEM_PIPELINES add to them rather than replace them.
DOWNLOADER_MIDDLEWARES_BASE = {
    **_scrapy_defaults.DOWNLOADER_MIDDLEWARES_BASE,
    "sitewalk.downloadermiddlewares.AddressGuardMiddleware": 40,
    "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None,
    "sitewalk.downloadermiddlewares.SameOriginMiddleware": 60,
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "sitewalk.downloadermiddlewares.WalkRobotsTxtMiddleware": 100,
    "sitewalk.downloadermiddlewares.BudgetMiddleware": 950,
    # Nothing to do in this walk (BudgetMiddleware sets every request's timeout; no retries).
    "scrapy.downloadermiddlewares.downloadtimeout.DownloadTimeoutMiddleware": None,
    "scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
}
# The spider tracks depth itself and keeps every status and URL length.
SPIDER_MIDDLEWARES_BASE = {
    **_scrapy_defaults.SPIDER_MIDDLEWARES_BASE,
    "scrapy.spidermiddlewares.httperror.HttpErrorMiddleware": None,
    "scrapy.spidermiddlewares.urllength.UrlLengthMiddleware": None,
    "scrapy.spidermiddlewares.depth.DepthMiddleware": None,
}
# Scrapy's own list without the telnet console and the remote-control endpoint, which must not
# run (they listen on a port; remote control can execute code) and cost start-up time to import.
EXTENSIONS_BASE = {
    "scrapy.extensions.corestats.CoreStats": 0,
    "scrapy.extensions.logcount.LogCount": 0,
    "scrapy.extensions.memusage.MemoryUsage": 0,
    "scrapy.extensions.memdebug.MemoryDebugger": 0,
    "scrapy.extensions.closespider.CloseSpider": 0,
    "scrapy.extensions.feedexport.FeedExporter": 0,
    "scrapy.extensions.logstats.LogStats": 0,
    "scrapy.extensions.spiderstate.SpiderState": 0,
    "scrapy.extensions.throttle.AutoThrottle": 0,
    "sitewalk.extensions.WalkBudget": 10,
}
ITEM_PIPELINES_BASE = {
    "sitewalk.pipelines.CallbackPipeline": 100,
    # The consumers: the walk's config enables exactly one of them.
    "sitewalk.pipelines.IndexPipeline": 300,
    "sitewalk.pipelines.GrepPipeline": 300,
    "sitewalk.pipelines.ExtractPipeline": 300,
}
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False

SITEWALK_PROGRESS_INTERVAL = 10.0
# Under scrapyd without items_dir: where each job's items and report go (<dir>/sitewalk/<job>.*).
SITEWALK_JOBS_DIR = "jobs"
FEED_EXPORT_ENCODING = "utf-8"
