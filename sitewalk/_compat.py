"""Where sitewalk relies on what other packages do not publish: each private name it uses, and why.

Each shim says what it is, why nothing public serves, and the versions it was checked against;
``tests/test_compat.py`` has a test per shim that fails, naming the package and its version, when an
upgrade removes or changes what the shim relies on. The rest of sitewalk takes another package's
private modules, classes, attributes and message texts from here, never from the package itself.

Twisted's and Scrapy's names are imported on first use (:func:`__getattr__`, PEP 562): the page
reader's helper process imports this module (for ada, through :mod:`sitewalk.links`) and must not
pay ~0.3 s for importing Twisted and Scrapy.
"""

from __future__ import annotations

import contextvars
import importlib
import inspect
import os
import re
import sys
import weakref
from contextlib import contextmanager
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

# ada-url's C API, through the cffi module its Python wrapper is built on. ada_url.join_url wraps
# each call in a garbage-collected handle and error handling that cost twice the parsing itself;
# sitewalk.links calls these in its per-link loop (measured in commit 8c0f2e5). ada_url publishes
# no batch or handle-free API. Checked against ada-url 4.0.0.
from ada_url._ada_wrapper import ffi as _ada_ffi
from ada_url._ada_wrapper import lib as _ada_lib

if TYPE_CHECKING:
    import argparse
    import asyncio
    from collections.abc import Callable, Hashable, Iterator

    from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
    from scrapy.robotstxt import RobotParser
    from scrapy.utils._compression import _DecompressionMaxSizeExceeded as DecompressionMaxSizeExceeded
    from twisted.internet.defer import Deferred
    from twisted.internet.interfaces import IStreamClientEndpoint
    from twisted.web._newclient import BadResponseVersion, HTTP11ClientProtocol, ParseError, RequestNotSent
    from twisted.web.http import _DataLoss as DataLoss

    UNANSWERED: tuple[type[Exception], ...]

__all__ = [
    "DECOMPRESSION_WARNING_LOGGER", "MAXSIZE_WARNING_LOGGER", "UNANSWERED", "BadResponseVersion", "ConnectionUse", "DataLoss", "DecompressionMaxSizeExceeded", "ParseError",
    "RequestNotSent", "ada_free", "ada_get_href", "ada_is_valid", "ada_parse_with_base", "ada_unpack",
    "decompression_warning_response", "deprecated_classes_without_stack", "disable_automatic_resend",
    "import_itemadapter_without_pydantic", "public_suffix_list_offline",
    "maxsize_warning_request", "option_strings", "reactor_event_loop", "robots_sitemaps", "track_connection_reuse",
    "watch_connection",
]

ada_parse_with_base = _ada_lib.ada_parse_with_base
ada_is_valid = _ada_lib.ada_is_valid
ada_get_href = _ada_lib.ada_get_href
ada_free = _ada_lib.ada_free
ada_unpack = _ada_ffi.unpack

# Imported on first use, by name: (module, attribute).
_LAZY: dict[str, tuple[str, str]] = {
    # Scrapy's decompression (scrapy.utils.gz.gunzip, HttpCompressionMiddleware) raises this
    # ValueError past its max_size; the middleware re-raises it as IgnoreRequest, this as the cause.
    # No public exception tells a body too large once decompressed from a damaged one.
    # Checked against Scrapy 2.19.0.
    "DecompressionMaxSizeExceeded": ("scrapy.utils._compression", "_DecompressionMaxSizeExceeded"),
    # Twisted's HTTP client fails with these reasons (in ResponseFailed.reasons) for a status line
    # that is not HTTP/1.x, or not a status line. twisted.web.client re-exports ResponseFailed and
    # ResponseNeverReceived, not these. Checked against Twisted 26.10.0.
    "BadResponseVersion": ("twisted.web._newclient", "BadResponseVersion"),
    "ParseError": ("twisted.web._newclient", "ParseError"),
    # Twisted's client fails a request with this when the connection it was given cannot take one
    # (it closed while in the pool); twisted.web.client does not re-export it. Twisted 26.10.0.
    "RequestNotSent": ("twisted.web._newclient", "RequestNotSent"),
    # Twisted's marker of a body shorter than its Content-Length, among ResponseFailed.reasons
    # (Scrapy's handler wraps that ResponseFailed in ResponseDataLossError). The public
    # PotentialDataLoss is the other case (no Content-Length). Checked against Twisted 26.10.0.
    "DataLoss": ("twisted.web.http", "_DataLoss"),
}


def __getattr__(name: str) -> Any:
    """Twisted's and Scrapy's private names, imported when first asked for (see the module's doc)."""
    if name == "UNANSWERED":
        from twisted.web.client import RequestTransmissionFailed, ResponseNeverReceived

        # Twisted's "no answer came" failures: the request was not sent, not all sent, or no
        # byte of a response arrived (what Twisted's own re-send, _RetryingHTTP11ClientProtocol,
        # checks). Scrapy's handler re-raises them as DownloadFailedError, the original as the cause.
        value: Any = (__getattr__("RequestNotSent"), RequestTransmissionFailed, ResponseNeverReceived)
    elif name in _LAZY:
        module, attribute = _LAZY[name]
        value = getattr(importlib.import_module(module), attribute)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def reactor_event_loop() -> asyncio.AbstractEventLoop:
    """The asyncio loop the installed reactor (Twisted's ``AsyncioSelectorReactor``) runs on."""
    from twisted.internet import reactor

    # The reactor keeps its loop in a private attribute, and no public API of Twisted gives it
    # (Scrapy reads the same attribute, in scrapy.utils.reactor and scrapy.utils.log). The running
    # loop does not serve: the Python API asks from the caller's thread, whose loop (if any) is
    # another one when the reactor runs in its own thread, and before the reactor runs at all.
    # Checked against Twisted 26.10.0.
    loop: asyncio.AbstractEventLoop = reactor._asyncioEventloop
    return loop


def option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """The option strings ``parser`` knows, its groups' included."""
    # argparse keeps a parser's actions in the private _actions, and has no public list of them
    # (parse_known_args takes the options, it does not list them). Checked against Python 3.11.7,
    # 3.12.1 and 3.13.0.
    return [flag for action in parser._actions for flag in action.option_strings]


def robots_sitemaps(parser: RobotParser) -> list[str]:
    """The ``Sitemap:`` URLs of the robots.txt ``parser`` read (Scrapy's ``ProtegoRobotParser``; none for another)."""
    # Scrapy's RobotParser interface has no name for them; its ProtegoRobotParser keeps Protego's
    # parse in the undocumented attribute rp, whose sitemaps Protego publishes. Checked against
    # Scrapy 2.19.0 and Protego 0.7.0.
    rules = getattr(parser, "rp", None)
    return list(getattr(rules, "sitemaps", ()))


@contextmanager
def deprecated_classes_without_stack() -> Iterator[None]:
    """While in it, Scrapy's ``create_deprecated_class`` finds the module that defines a deprecated
    alias without calling ``inspect.stack()``.

    It calls ``inspect.stack()`` only to learn that module (``inspect.getmodule`` of the frame at
    ``[1]``); ``inspect.stack()`` reads the source of every frame on the stack and maps every loaded
    module to its file: 0.1-0.3 s of a walk's start-up, when Scrapy's HTTP/1.1 handler is imported
    (three aliases, in ``scrapy.core.downloader.tls`` and ``contextfactory``). Here ``inspect.stack``
    returns just the caller's caller, with the same ``__module__`` answer the full stack would give.
    No public way asks Scrapy for the module, nor keeps it from asking. Checked against Scrapy 2.19.0.
    """
    full_stack = inspect.stack

    def defining_module(context: int = 1) -> list[Any]:
        # This frame, then create_deprecated_class's, then the module that calls it.
        frame = inspect.currentframe()
        caller = frame.f_back.f_back if frame is not None and frame.f_back is not None else None
        name = caller.f_globals.get("__name__") if caller is not None else None
        return [None, (SimpleNamespace(__module__=name),)]

    inspect.stack = defining_module
    try:
        yield
    finally:
        inspect.stack = full_stack


# Scrapy's warnings that a download passed its size limit, told apart by their text: Scrapy logs
# them with nothing else to tell them by (no exception, no extra), from these loggers. Checked
# against Scrapy 2.19.0 (scrapy.utils._download_handlers.get_maxsize_msg; HttpCompressionMiddleware).
MAXSIZE_WARNING_LOGGER = "scrapy.core.downloader.handlers.http11"
DECOMPRESSION_WARNING_LOGGER = "scrapy.downloadermiddlewares.httpcompression"
_MAXSIZE_WARNING = re.compile(
    r"(?:Expected to receive|Received) \d+ bytes which is larger than download max size \(\d+\) in request (.*)\.", re.S
)
_DECOMPRESSION_WARNING = re.compile(
    r"Ignored response (<.*>) because its body \(\d+ B compressed, \d+ B decompressed so far\) exceeded"
    r" DOWNLOAD_MAXSIZE \(\d+ B\) during decompression\.", re.S
)


def maxsize_warning_request(message: str) -> str | None:
    """The request (``str(request)``) that Scrapy's download handler warns of in ``message`` (a
    download cut at its max size, from :data:`MAXSIZE_WARNING_LOGGER`); None for another message."""
    match = _MAXSIZE_WARNING.fullmatch(message)
    return match[1] if match else None


def decompression_warning_response(message: str) -> str | None:
    """The response (``str(response)``) that Scrapy's HttpCompressionMiddleware warns of in
    ``message`` (its body ignored past the max size once decompressed, from
    :data:`DECOMPRESSION_WARNING_LOGGER`); None for another message."""
    match = _DECOMPRESSION_WARNING.fullmatch(message)
    return match[1] if match else None


def disable_automatic_resend(handler: HTTP11DownloadHandler) -> None:
    """Turn off the re-send of Twisted's connection pool under Scrapy's HTTP/1.1 ``handler``: a GET
    or HEAD that got no answer on a kept-alive connection fails instead of going again at once."""
    # retryAutomatically is the pool's public attribute, but Scrapy keeps the pool in the
    # handler's private _pool and no setting reaches it. Checked against Scrapy 2.19.0 and
    # Twisted 26.10.0.
    handler._pool.retryAutomatically = False


class ConnectionUse:
    """The connection a request went out on, as :func:`watch_connection` saw it: :attr:`reused`
    is True for a kept-alive connection the pool had, False for one opened for the request, None
    while none was supplied (still connecting, or connecting failed)."""

    __slots__ = ("reused",)

    def __init__(self) -> None:
        self.reused: bool | None = None


_WATCHED: contextvars.ContextVar[ConnectionUse | None] = contextvars.ContextVar("sitewalk_connection_use", default=None)


@contextmanager
def watch_connection() -> Iterator[ConnectionUse]:
    """The :class:`ConnectionUse` of the download started in it, by a handler made with
    :func:`track_connection_reuse` (the request's connection is asked for in the same task)."""
    use = ConnectionUse()
    token = _WATCHED.set(use)
    try:
        yield use
    finally:
        _WATCHED.reset(token)


class _ConnectionWatch:
    """In front of a pool's ``getConnection``: tells the watched download whether the connection
    it is given is one the pool gave before (kept alive), or a new one."""

    def __init__(self, get_connection: Callable[[Hashable, IStreamClientEndpoint], Deferred[HTTP11ClientProtocol]]) -> None:
        self._get_connection = get_connection
        self._given: weakref.WeakSet[HTTP11ClientProtocol] = weakref.WeakSet()

    def __call__(self, key: Hashable, endpoint: IStreamClientEndpoint) -> Deferred[HTTP11ClientProtocol]:
        use = _WATCHED.get()
        return self._get_connection(key, endpoint).addCallback(self._given_to, use)

    def _given_to(self, connection: HTTP11ClientProtocol, use: ConnectionUse | None) -> HTTP11ClientProtocol:
        if use is not None:
            use.reused = connection in self._given
        self._given.add(connection)
        return connection


def track_connection_reuse(handler: HTTP11DownloadHandler) -> None:
    """Let each download of Scrapy's HTTP/1.1 ``handler`` tell, in :func:`watch_connection`, whether
    it went out on a reused kept-alive connection or a new one. Turns the pool's own re-send off
    (:func:`disable_automatic_resend`): it would hand out a wrapper, not the connection, and send a
    request again on a new connection unseen."""
    disable_automatic_resend(handler)
    # Twisted's HTTPConnectionPool.getConnection (public: agents call it for each request) gives a
    # kept-alive connection back as the same protocol object, a new one as a new object: a
    # connection given before is a reused one. Scrapy builds and configures the pool itself
    # (maxPersistentPerHost, its lenient protocol factory) in the handler's private _pool; the
    # watch goes in front of that very object's method, so all Scrapy set on it stays.
    # Checked against Scrapy 2.19.0 and Twisted 26.10.0.
    pool = handler._pool
    if not isinstance(pool.getConnection, _ConnectionWatch):
        pool.getConnection = _ConnectionWatch(pool.getConnection)  # type: ignore[method-assign]  # an instance attribute in front of the method, on purpose (see above)


def import_itemadapter_without_pydantic() -> None:
    """Import itemadapter, which Scrapy's feed exporters use, without its support for pydantic models.

    itemadapter imports pydantic as it is itself imported, when pydantic is installed
    (sitewalk-mcp needs it), to recognise pydantic models as items: 80-100 ms of CPU, a tenth of
    the ``sitewalk`` command's start-up (benchmarks/startup.py). The items of a walk are
    sitewalk's dataclasses, and that process runs the walk alone. A None entry in ``sys.modules``
    makes an import fail as if the module were not installed (the import system's documented
    rule); it is taken out after, so pydantic itself stays importable. What this relies on is
    itemadapter's: that it looks for pydantic once, as it is imported. Checked against
    itemadapter 0.13.1.
    """
    if "itemadapter" in sys.modules or "pydantic" in sys.modules:
        return
    sys.modules["pydantic"] = None  # type: ignore[assignment]  # None: "not installed", for the import system
    try:
        import itemadapter  # noqa: F401
    finally:
        del sys.modules["pydantic"]


# tldextract's public switch for where it fetches the Public Suffix List from: empty, nowhere.
_SUFFIX_LIST_URLS = "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS"


def public_suffix_list_offline() -> None:
    """Keep Scrapy's cookie middleware from fetching the Public Suffix List over the network.

    Scrapy splits a cookie's Domain with a module-level ``tldextract.TLDExtract``, which, with no
    cached list, fetches one from publicsuffix.org (or GitHub) through ``requests``: a connection
    the walk's address guard, robots.txt and budgets never see. With no URL it uses the snapshot it
    ships. The environment variable is tldextract's public switch, read when an instance is built
    (a user's own value is kept); Scrapy builds its instance when its cookie middleware is first
    imported, so an instance built already is switched in Scrapy's private ``_split_domain``.
    Checked against Scrapy 2.19.0 and tldextract 5.4.0.
    """
    os.environ.setdefault(_SUFFIX_LIST_URLS, "")
    cookies = sys.modules.get("scrapy.downloadermiddlewares.cookies")
    if cookies is not None and os.environ[_SUFFIX_LIST_URLS] == "":
        cookies._split_domain.suffix_list_urls = ()
