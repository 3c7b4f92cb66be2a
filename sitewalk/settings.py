"""Scrapy settings of the sitewalk project: one strict, polite, breadth-first walk."""

from __future__ import annotations

from sitewalk import __version__

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

DOWNLOADER_MIDDLEWARES = {
    "sitewalk.downloadermiddlewares.AddressGuardMiddleware": 40,
    "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None,
    "sitewalk.downloadermiddlewares.SameOriginMiddleware": 60,
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "sitewalk.downloadermiddlewares.WalkRobotsTxtMiddleware": 100,
    "sitewalk.downloadermiddlewares.BudgetMiddleware": 950,
}
EXTENSIONS = {
    "sitewalk.extensions.WalkBudget": 10,
    "scrapy.extensions.telnet.TelnetConsole": None,
    "scrapy.extensions.remote_control.RemoteControl": None,
}
ITEM_PIPELINES = {
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
