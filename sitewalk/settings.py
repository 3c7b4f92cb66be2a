"""Scrapy settings of the sitewalk project: one strict, polite, breadth-first walk.

The walk's own components are wired by its add-on (:mod:`sitewalk.addon`); these are the
settings it runs with. Each sitewalk setting is documented here once, with its default.
"""

from __future__ import annotations

from importlib.util import find_spec

from sitewalk import __version__

BOT_NAME = "sitewalk"
SPIDER_MODULES = ["sitewalk.spiders"]
NEWSPIDER_MODULE = "sitewalk.spiders"
# `scrapy crawl` that reports bad arguments and an unfetchable seed in one line.
COMMANDS_MODULE = "sitewalk.commands"
ADDONS = {"sitewalk.addon.Addon": 0}
LOG_LEVEL = "INFO"
# A component's exception is the page's failure, said in one line; its traceback at DEBUG.
LOG_FORMATTER = "sitewalk.logformatter.WalkLogFormatter"
# A halt of the walk (its deadline, an interruption) cuts an item's way through the pipelines.
ITEM_PROCESSOR = "sitewalk.pipelines.WalkPipelineManager"

# The event loop under Twisted's asyncio reactor: uvloop's, where it is installed (not on Windows).
# A page costs the walk's process about a sixth less CPU on it (docs/speed.md, benchmarks/speed.py);
# the address guard, re-sends and the ledger's byte counts live in Twisted, above the loop, as
# before. The Python API runs on the loop it finds (sitewalk.api leaves this unset).
ASYNCIO_EVENT_LOOP = "uvloop.Loop" if find_spec("uvloop") else None

USER_AGENT = f"sitewalk/{__version__} (+https://pypi.org/project/sitewalk/)"
ROBOTSTXT_OBEY = True
ROBOTSTXT_USER_AGENT = "sitewalk"

# The walk's gate releases each request itself, as many in flight as its concurrency argument
# (the add-on sets these two to it). FIFO queues keep what
# does go through the scheduler (redirect hops) in order; CONCURRENT_ITEMS=1 keeps a page's
# items (grep's matches) in order through the pipelines.
CONCURRENT_REQUESTS = 1
CONCURRENT_REQUESTS_PER_DOMAIN = 1
CONCURRENT_ITEMS = 1
SCHEDULER_MEMORY_QUEUE = "scrapy.squeues.FifoMemoryQueue"
# With JOBDIR too: the walk's journal keeps what a resumed walk needs (sitewalk.jobs).
SCHEDULER = "sitewalk.schedulers.WalkScheduler"
DUPEFILTER_CLASS = "sitewalk.dupefilters.WalkDupeFilter"
# The walk paces itself (delay between request starts), never shortened by jitter.
DOWNLOAD_DELAY = 0
DOWNLOAD_DELAY_JITTER = 0

# Every page is requested once; an HTTP error status is a fetched page, not a failure.
RETRY_ENABLED = False
HTTPERROR_ALLOW_ALL = True
METAREFRESH_ENABLED = False
DOWNLOAD_TIMEOUT = 60
DOWNLOAD_MAXSIZE = 0
DOWNLOAD_WARNSIZE = 0

# Local feeds are written unbuffered: after a crash they hold every item written before it.
FEED_STORAGES = {
    "": "sitewalk.extensions.FileFeedStorage",
    "file": "sitewalk.extensions.FileFeedStorage",
}

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

# The telnet console and the remote-control endpoint must not run: they listen on a port, and
# remote control executes code (the add-on also keeps them from being imported).
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False

# Seconds between the walk's progress lines (besides one at each new depth); 0 = at new depths only.
SITEWALK_PROGRESS_INTERVAL = 10.0
# Under scrapyd without items_dir: where each job's items and report go (<dir>/sitewalk/<job>.*).
SITEWALK_JOBS_DIR = "jobs"
FEED_EXPORT_ENCODING = "utf-8"

# A page answered 429 or 503 is asked again at most this many times, after a pause of the whole
# walk: its Retry-After, else 1 s doubled for each pause in a row, at most this many seconds.
SITEWALK_RETRY_TIMES = 3
SITEWALK_RETRY_AFTER_MAX = 120.0

# check_links checks at most this many URLs (links to other sites, resources); the rest are listed
# in the report's unchecked_links.
SITEWALK_LINKCHECK_MAX_CHECKS = 1000

# sitemap=true reads at most this many sitemap files (indexes included).
SITEWALK_SITEMAP_MAX_FILES = 20

# render=always/auto (sitewalk.render): the Chromium to run, a path or a command name on PATH
# (Debian's: apt-get install chromium); Playwright drives it, its own browser download is never used.
SITEWALK_RENDER_CHROMIUM = "chromium"
# Seconds one page's render may take (never past the deadline): then the page is the DOM it has.
SITEWALK_RENDER_TIMEOUT = 15.0
# Resource types (Playwright's names) the browser is not given: comma-separated, "" fetches all.
SITEWALK_RENDER_SKIP = "image,media,font"
# Pages open in the browser at once, at most; and pages a browser renders before it is replaced
# by a new one (a browser's memory grows with the pages it has run).
SITEWALK_RENDER_PAGES_OPEN = 2
SITEWALK_RENDER_RESTART_AFTER = 100
