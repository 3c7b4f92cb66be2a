"""sitewalk._compat: each shim still finds what it relies on in the installed packages, and it
still behaves as the shim expects. A failure names the package, its version and what changed."""

from __future__ import annotations

import argparse
import asyncio
import gzip
import inspect
import logging
import os
import subprocess
import sys
import threading
import warnings
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from typing import Any

import pytest
from scrapy import Request
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import DownloadFailedError, IgnoreRequest, ResponseDataLossError
from scrapy.http import Response
from scrapy.robotstxt import ProtegoRobotParser
from scrapy.utils.deprecate import create_deprecated_class
from scrapy.utils.gz import gunzip
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler
from twisted.web.client import HTTPConnectionPool, ResponseFailed

from sitewalk import _compat
from sitewalk._compat import (
    DECOMPRESSION_WARNING_LOGGER,
    MAXSIZE_WARNING_LOGGER,
    UNANSWERED,
    BadResponseVersion,
    DataLoss,
    DecompressionMaxSizeExceeded,
    ParseError,
    RequestNotSent,
    ada_free,
    ada_get_href,
    ada_is_valid,
    ada_parse_with_base,
    ada_unpack,
    decompression_warning_response,
    deprecated_classes_without_stack,
    disable_automatic_resend,
    maxsize_warning_request,
    option_strings,
    reactor_event_loop,
    robots_sitemaps,
    track_connection_reuse,
    watch_connection,
)
from sitewalk._reactor import run_blocking
from sitewalk.guard.addresses import parse_networks
from sitewalk.guard.resolver import allow_networks_for_crawl, release_crawl

SCRAPY = f"Scrapy {version('scrapy')}"
TWISTED = f"Twisted {version('twisted')}"
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


# --- a loopback HTTP server in the reactor's loop, and Scrapy's handler talking to it ---

Answer = Callable[[int, int], "bytes | None"]


class Loopback:
    """An HTTP server on 127.0.0.1, run in the reactor's loop. Each request gets
    ``answer(connection, request)`` (both numbered from 1): the bytes to send, then the connection
    closes if they say ``Connection: close``; or None, to close it without sending a byte."""

    def __init__(self, answer: Answer) -> None:
        self._answer = answer
        self.connections = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/"

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        connection, requests = self.connections, 0
        try:
            while True:
                try:
                    await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return
                requests += 1
                answer = self._answer(connection, requests)
                if answer is None:
                    return
                writer.write(answer)
                await writer.drain()
                if b"connection: close" in answer.lower():
                    return
        finally:
            writer.close()


def on_loopback(answer: Answer, scenario: Callable[[HTTP11DownloadHandler, str], Awaitable[Any]],
                setup: Callable[[HTTP11DownloadHandler], None] = lambda handler: None) -> tuple[Any, Loopback]:
    """``scenario(handler, url)`` in the reactor's loop: Scrapy's HTTP/1.1 handler (after
    ``setup``) and a :class:`Loopback` server at ``url``; its result and the server. The address
    guard's resolver, on the reactor once a walk in this process ran, lets it reach loopback."""
    crawler = get_crawler()
    server = Loopback(answer)

    async def run(_: None) -> Any:
        url = await server.start()
        handler = build_from_crawler(HTTP11DownloadHandler, crawler)
        setup(handler)
        try:
            return await scenario(handler, url)
        finally:
            await handler.close()
            await server.stop()

    allow_networks_for_crawl(crawler, parse_networks("127.0.0.1/32"))
    try:
        return run_blocking(run, None), server
    finally:
        release_crawl(crawler)


async def download_failure(handler: HTTP11DownloadHandler, url: str, **meta: Any) -> BaseException:
    try:
        response = await handler.download_request(Request(url, meta=meta))
    except Exception as exc:  # noqa: BLE001 - the failure is what the test looks at
        return exc
    raise AssertionError(f"the download did not fail: {response!r}")


def reasons(exc: BaseException | None) -> list[type[BaseException]]:
    """The types of the reasons of the ResponseFailed in ``exc``'s chain of causes."""
    while exc is not None and not isinstance(exc, ResponseFailed):
        exc = exc.__cause__
    assert exc is not None, f"{TWISTED}: no ResponseFailed among the causes"
    return [reason.type for reason in exc.reasons]


def test_the_page_readers_helper_does_not_import_twisted_nor_scrapy():
    # It imports sitewalk.links, which takes ada's C API from sitewalk._compat: Twisted's and
    # Scrapy's names there are imported on first use.
    code = "import sys, sitewalk.pagereader; print(sorted({'twisted', 'scrapy'} & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]", result


# --- ada-url ---


def test_ada_c_api_resolves_a_link_against_a_base():
    base = b"http://Example.COM:80/a/b.html"

    def resolve(href: bytes) -> str | None:
        parsed = ada_parse_with_base(href, len(href), base, len(base))
        try:
            if not ada_is_valid(parsed):
                return None
            serialized = ada_get_href(parsed)
            return ada_unpack(serialized.data, serialized.length).decode()
        finally:
            ada_free(parsed)

    message = f"ada-url {version('ada-url')} changed its C API (ada_url._ada_wrapper), which sitewalk.links calls"
    assert resolve(b"../c d?q=\xc3\xa9#f") == "http://example.com/c%20d?q=%C3%A9#f", message
    assert resolve(b"http://[::1") is None, message


# --- Scrapy ---


def test_decompression_past_max_size_raises_the_private_exception():
    body = gzip.compress(b"x" * 10_000)
    message = f"{SCRAPY}: gunzip past max_size no longer raises scrapy.utils._compression._DecompressionMaxSizeExceeded"
    with pytest.raises(DecompressionMaxSizeExceeded) as raised:
        gunzip(body, max_size=1000)
    assert isinstance(raised.value, ValueError), message
    assert gunzip(body, max_size=20_000) == b"x" * 10_000, message


def test_httpcompression_ignores_a_body_past_max_size_with_the_private_cause_and_its_warning(caplog):
    middleware = build_from_crawler(HttpCompressionMiddleware, get_crawler())
    request = Request("http://site.test/page", meta={"download_maxsize": 1000})
    response = Response(request.url, body=gzip.compress(b"x" * 10_000), headers={"Content-Encoding": "gzip"}, request=request)
    with caplog.at_level(logging.WARNING, logger=DECOMPRESSION_WARNING_LOGGER), pytest.raises(IgnoreRequest) as raised:
        middleware.process_response(request, response)
    assert isinstance(raised.value.__cause__, DecompressionMaxSizeExceeded), (
        f"{SCRAPY}: HttpCompressionMiddleware no longer raises IgnoreRequest from _DecompressionMaxSizeExceeded "
        "(sitewalk.failures.too_large tells a body too large once decompressed by it)"
    )
    warned = [record.getMessage() for record in caplog.records if record.name == DECOMPRESSION_WARNING_LOGGER]
    assert [decompression_warning_response(message) for message in warned] == [str(response)], (
        f"{SCRAPY} changed the warning HttpCompressionMiddleware logs for a body past DOWNLOAD_MAXSIZE "
        f"(sitewalk._compat.decompression_warning_response reads it): {warned}"
    )
    assert decompression_warning_response(f"{response} body size after decompression (1 B) is larger") is None


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n" + b"x" * 5000, "Expected to receive 5000 bytes"),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + b"x" * 5000, "Received "),
    ],
    ids=["expected", "received"],
)
def test_the_handler_warns_of_a_download_past_max_size_in_the_words_the_shim_reads(caplog, answer, said):
    async def scenario(handler: HTTP11DownloadHandler, url: str) -> str:
        await download_failure(handler, url, download_maxsize=1000)
        return str(Request(url))

    with caplog.at_level(logging.WARNING, logger=MAXSIZE_WARNING_LOGGER):
        request, _ = on_loopback(lambda connection, number: answer, scenario)
    warned = [record.getMessage() for record in caplog.records if record.name == MAXSIZE_WARNING_LOGGER]
    assert [maxsize_warning_request(message) for message in warned] == [request], (
        f"{SCRAPY} changed the warning its HTTP/1.1 handler logs for a download past its max size "
        f"(sitewalk._compat.maxsize_warning_request reads it): {warned}"
    )
    assert warned[0].startswith(said)
    assert maxsize_warning_request(warned[0].replace("max size", "warn size")) is None


def test_protego_robot_parser_keeps_the_sitemaps():
    robots = b"User-agent: *\nDisallow: /private\nSitemap: http://site.test/a.xml\nSitemap: http://site.test/b.xml.gz\n"
    parser = ProtegoRobotParser.from_crawler(get_crawler(), robots)
    assert robots_sitemaps(parser) == ["http://site.test/a.xml", "http://site.test/b.xml.gz"], (
        f"{SCRAPY} / Protego {version('protego')}: ProtegoRobotParser.rp.sitemaps no longer lists a "
        "robots.txt's Sitemap: lines (sitewalk.sitemaps seeds from them)"
    )


def test_create_deprecated_class_learns_its_module_without_inspect_stack(monkeypatch):
    calls: list[int] = []
    full_stack = inspect.stack

    def counted(context: int = 1) -> list[inspect.FrameInfo]:
        calls.append(context)
        return full_stack(context)[1:]  # the stack as its caller would see it

    monkeypatch.setattr(inspect, "stack", counted)

    class New:
        pass

    assert create_deprecated_class("Old", New).__module__ == __name__
    assert calls, (
        f"{SCRAPY}: create_deprecated_class no longer calls inspect.stack(); "
        "sitewalk._compat.deprecated_classes_without_stack (and sitewalk._startup) can go"
    )
    calls.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Scrapy warns when it cannot find the module
        with deprecated_classes_without_stack():
            old = create_deprecated_class("Old", New)
    assert calls == [] and old.__module__ == __name__, (
        f"{SCRAPY}: create_deprecated_class no longer finds the module from inspect.stack()[1] "
        "(sitewalk._compat.deprecated_classes_without_stack answers only that)"
    )
    assert inspect.stack is counted


def test_the_http11_handler_imports_with_its_aliases_in_their_modules():
    # In a process of its own: this one has imported the handler already.
    code = (
        "import inspect; full = inspect.stack\n"
        "from sitewalk._startup import import_http11_handler; import_http11_handler()\n"
        "from scrapy.core.downloader import contextfactory, tls\n"
        "assert inspect.stack is full\n"
        "print(tls.ScrapyClientTLSOptions.__module__, contextfactory.ScrapyClientContextFactory.__module__,"
        " contextfactory.AcceptableProtocolsContextFactory.__module__)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.split() == ["scrapy.core.downloader.tls"] + ["scrapy.core.downloader.contextfactory"] * 2, result
    assert "Error detecting parent module" not in result.stderr, f"{SCRAPY}: {result.stderr}"


# --- Twisted ---


def test_the_asyncio_reactor_keeps_its_loop():
    from twisted.internet import reactor

    seen: list[asyncio.AbstractEventLoop] = []
    ran = threading.Event()

    def in_the_reactor() -> None:
        seen.append(asyncio.get_running_loop())
        ran.set()

    reactor.callFromThread(in_the_reactor)
    assert ran.wait(10), "the reactor (started by tests/conftest.py) did not run the call"
    assert hasattr(reactor, "_asyncioEventloop") and reactor_event_loop() is seen[0], (
        f"{TWISTED}: AsyncioSelectorReactor no longer keeps the loop it runs on in _asyncioEventloop "
        "(sitewalk._reactor finds the reactor's loop by it)"
    )


def test_twisted_client_failures_are_where_the_shims_take_them():
    from twisted.web import _newclient, client, http

    names = {"BadResponseVersion": _newclient, "ParseError": _newclient, "RequestNotSent": _newclient, "_DataLoss": http}
    for name, module in names.items():
        assert isinstance(getattr(module, name, None), type), f"{TWISTED}: {module.__name__}.{name} is gone"
    assert issubclass(BadResponseVersion, ParseError) and issubclass(DataLoss, Exception)
    assert (RequestNotSent, client.RequestTransmissionFailed, client.ResponseNeverReceived) == UNANSWERED, (
        f"{TWISTED}: twisted.web.client no longer re-exports the failures of a request that got no answer"
    )


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (b"HTTP/x.y 200 OK\r\nConnection: close\r\n\r\n", "BadResponseVersion"),
        (b"nonsense\r\nConnection: close\r\n\r\n", "ParseError"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n0123456789", "DataLoss"),
    ],
)
def test_twisted_client_fails_with_the_private_reasons(answer, reason):
    failure, _ = on_loopback(lambda connection, number: answer, download_failure)
    expected = getattr(_compat, reason)
    assert any(issubclass(cause, expected) for cause in reasons(failure)), (
        f"{TWISTED}: the answer {answer[:40]!r} no longer fails with {expected.__module__}.{expected.__name__} among "
        f"ResponseFailed's reasons ({reasons(failure)}): sitewalk.failures reads them"
    )
    if reason == "DataLoss":
        assert isinstance(failure, ResponseDataLossError), f"{SCRAPY}: {failure!r}"


def drop_second_request(connection: int, number: int) -> bytes | None:
    """The first connection answers its first request, then closes on the next without a byte."""
    return None if connection == 1 and number == 2 else OK


async def twice(handler: HTTP11DownloadHandler, url: str) -> list[Any]:
    """Two requests in turn: what each gave (a response's status or the failure), and whether its connection was reused."""
    results: list[Any] = []
    for _ in range(2):
        with watch_connection() as connection:
            try:
                outcome: Any = (await handler.download_request(Request(url))).status
            except DownloadFailedError as exc:
                outcome = exc
        results.append((outcome, connection.reused))
    return results


def test_the_pool_sends_a_request_a_reused_connection_lost_again_unless_turned_off():
    (first, second), server = on_loopback(drop_second_request, twice)
    assert HTTPConnectionPool.retryAutomatically is True and first[0] == second[0] == 200 and server.connections == 2, (
        f"{TWISTED}: the pool no longer sends again a request its kept-alive connection lost "
        f"({[first, second]}, {server.connections} connections); sitewalk sends it again itself"
    )
    (first, second), server = on_loopback(drop_second_request, twice, disable_automatic_resend)
    assert first[0] == 200 and isinstance(second[0], DownloadFailedError) and server.connections == 1, (
        f"{SCRAPY} / {TWISTED}: the handler's _pool.retryAutomatically = False no longer keeps the pool "
        f"from sending again a request a kept-alive connection lost ({[first, second]}, {server.connections} connections)"
    )


def test_a_download_tells_a_reused_connection_from_a_new_one():
    async def scenario(handler: HTTP11DownloadHandler, url: str) -> list[Any]:
        async def fetch() -> bool | None:
            with watch_connection() as connection:
                await handler.download_request(Request(url))
            return connection.reused

        # Two at once: two new connections; then both kept alive and reused, and closed by the
        # server after their answers; then a new one, kept alive and reused.
        return [await asyncio.gather(fetch(), fetch()), await asyncio.gather(fetch(), fetch()), await fetch(), await fetch()]

    closing = OK.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
    results, server = on_loopback(lambda connection, number: closing if number == 2 else OK, scenario, track_connection_reuse)
    assert results == [[False, False], [True, True], False, True] and server.connections == 3, (
        f"{SCRAPY} / {TWISTED}: sitewalk._compat.track_connection_reuse no longer tells a reused connection "
        f"from a new one ({results}, {server.connections} connections): see HTTPConnectionPool.getConnection"
    )


def test_a_request_a_reused_connection_lost_fails_unanswered_and_says_so():
    (first, second), server = on_loopback(drop_second_request, twice, track_connection_reuse)
    assert first == (200, False) and server.connections == 1
    failure, reused = second
    assert reused is True and isinstance(failure.__cause__, UNANSWERED), (
        f"{SCRAPY} / {TWISTED}: a request the server closed a kept-alive connection on no longer fails "
        f"with one of {UNANSWERED} as the cause ({failure!r}, cause {failure.__cause__!r}, reused {reused})"
    )


def test_watching_a_connection_outside_a_tracked_handler_sees_none():
    results, _ = on_loopback(lambda connection, number: OK, twice)
    assert results == [(200, None), (200, None)]


# --- Python ---


def test_argparse_lists_the_option_strings_of_a_parser_and_its_groups():
    parser = argparse.ArgumentParser()
    parser.add_argument("-o", "--output")
    parser.add_argument_group("walk").add_argument("--depth")
    exclusive = parser.add_mutually_exclusive_group()
    exclusive.add_argument("--quiet", action="store_true")
    exclusive.add_argument("-v", action="count")
    parser.add_argument("seed")
    assert option_strings(parser) == ["-h", "--help", "-o", "--output", "--depth", "--quiet", "-v"], (
        f"Python {sys.version.split()[0]}: argparse.ArgumentParser._actions no longer lists a parser's options"
    )


def test_itemadapter_imports_without_pydantic_and_pydantic_stays_importable():
    script = (
        "import sys\n"
        "from sitewalk._compat import import_itemadapter_without_pydantic\n"
        "import_itemadapter_without_pydantic()\n"
        "assert 'itemadapter' in sys.modules and 'pydantic' not in sys.modules, sorted(sys.modules)\n"
        "import pydantic, itemadapter.utils\n"
        "print(pydantic.VERSION)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert result.returncode == 0, (
        f"itemadapter {version('itemadapter')}: importing it with pydantic marked absent no longer works: {result.stderr}"
    )


def test_the_public_suffix_list_is_never_fetched_by_scrapys_cookie_middleware():
    # In a fresh process: before Scrapy's cookie middleware is imported, and after.
    script = (
        "import os, sys\n"
        "from sitewalk._compat import public_suffix_list_offline\n"
        "public_suffix_list_offline()\n"
        "from scrapy.downloadermiddlewares import cookies\n"
        "assert cookies._split_domain.suffix_list_urls == (), cookies._split_domain.suffix_list_urls\n"
        "del os.environ['TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS']\n"
        "import tldextract\n"
        "cookies._split_domain = tldextract.TLDExtract(cache_dir=None, include_psl_private_domains=True)\n"
        "assert cookies._split_domain.suffix_list_urls, 'tldextract has URLs by default'\n"
        "public_suffix_list_offline()\n"
        "assert cookies._split_domain.suffix_list_urls == ()\n"
        # The snapshot tldextract ships splits a domain with no network.
        "print(cookies._split_domain('www.example.co.uk').registered_domain)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False,
                            env={**os.environ, "TLDEXTRACT_CACHE_TIMEOUT": "0.01"})
    assert result.returncode == 0 and result.stdout.strip() == "example.co.uk", (
        f"Scrapy {version('scrapy')}, tldextract {version('tldextract')}: the cookie middleware's suffix list "
        f"is no longer switched off as expected: {result.stderr}"
    )
