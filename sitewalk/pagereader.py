"""Reading HTML pages in a helper process, beside the walk.

Parsing a page, finding its title and links and, for grep, its visible lines is most of the
walk's own work. lexbor parses without the GIL, but the rest (selector results, URL resolution,
the regular expressions of :func:`sitewalk.text.visible_lines`) holds it, so in the walk's
process it takes turns with Scrapy's work instead of running beside it. :class:`ReaderProcess`
starts one helper process (this module, run by the same Python; it imports lexbor, ada and
:mod:`sitewalk.text` only), sends it each HTML page and gets the title, links and lines back
while the walk downloads the next page. Where the helper cannot start or stops, the walk reads
pages itself (see the spider): the same results, only later.

The helper and the walk exchange frames over its stdin and stdout: a 4-byte big-endian length,
then a pickle. A request is a :class:`ReadRequest`; an answer is the :class:`ReadPage`, or a
string saying why the page could not be read. Answers come in the order of the requests. (Pickle,
because both ends are this module run by the same Python, and nothing else writes to those pipes.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import signal
import struct
import sys
import warnings
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from sitewalk.content import html_content
from sitewalk.documents import DOCUMENT_TYPES, DocumentError, document_content
from sitewalk.indexing import indexing_signals
from sitewalk.items import HTML_TYPES
from sitewalk.links import page_links, page_title, parse_html
from sitewalk.text import plain_lines, visible_lines

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from selectolax.lexbor import LexborHTMLParser

__all__ = [
    "HELPER_MIN_BYTES", "ReadPage", "ReadRequest", "ReaderPool", "ReaderProcess", "flags_for", "read_page", "read_tree", "serve",
]

logger = logging.getLogger(__name__)

LINKS = 1
LINES = 2
MARKDOWN = 4
TEXT = 8
MAIN = 16
_CONTENT = {"markdown": MARKDOWN, "text": TEXT}
_LENGTH = struct.Struct(">I")
# What reading one document may take, in the helper that reads documents: past either, it is the
# page's failure. The walk waits DOCUMENT_GRACE more before it stops that helper (a read stuck
# in C code, where the helper's own timer cannot interrupt it).
DOCUMENT_SECONDS = 20.0
DOCUMENT_GRACE = 10.0
# Seconds between the time limit's signals once it has passed (_time_limit).
_REFIRE = 0.05
DOCUMENT_MEMORY = 1 << 30
# HTML pages from this size on are read by the helper processes; smaller ones in the walk's
# process, where they cost about what the round trip to a helper would. A site of small pages
# then needs no helper at all (nor its memory).
HELPER_MIN_BYTES = 16 * 1024


class ReadRequest(NamedTuple):
    """A page for the helper to read: its HTML (or a document's bytes), URL, what to read of it
    (:func:`flags_for`), the encoding its links' queries are in (None for UTF-8), the response
    headers that bear on it (:data:`SIGNAL_HEADERS`) and its media type."""

    markup: bytes
    url: str
    flags: int
    encoding: str | None
    headers: dict[str, str]
    media_type: str | None


class ReadPage(NamedTuple):
    """What the walk reads from an HTML page or a document: title, links, grep's lines, content,
    and the page's own indexing signals (:func:`sitewalk.indexing.indexing_signals`)."""

    title: str | None
    links: list[str]
    lines: list[str] | None
    content: str | None = None
    canonical: str | None = None
    noindex: bool = False


def flags_for(*, links: bool, lines: bool, content: str | None = None, main: bool = False) -> int:
    """The request flags for what to read of a page (``content``: ``markdown``, ``text`` or None)."""
    return ((LINKS if links else 0) | (LINES if lines else 0) | _CONTENT.get(content or "", 0)
            | (MAIN if main and content else 0))


def read_page(markup: bytes | str, url: str, flags: int, encoding: str | None = None,
              headers: Mapping[str, str] | None = None, media_type: str | None = None) -> ReadPage:
    """Title, links (if ``flags & LINKS``; their queries in the page's ``encoding``, None for
    UTF-8; none when the page or its ``headers`` say ``nofollow``), visible lines (if ``flags &
    LINES``), content (``MARKDOWN`` or ``TEXT``, of the main part with ``MAIN``) and indexing
    signals of an HTML page; a document's (``media_type`` in
    :data:`sitewalk.documents.DOCUMENT_TYPES`) title, lines, content and signals."""
    if media_type in DOCUMENT_TYPES:
        return read_document(markup if isinstance(markup, bytes) else markup.encode(), url, flags, headers or {})
    return read_tree(parse_html(markup), url, flags, encoding, markup, headers)


def read_document(body: bytes, url: str, flags: int, headers: Mapping[str, str]) -> ReadPage:
    """:func:`read_page` of a document: its text as grep's lines, its content, no links (raises
    :class:`sitewalk.documents.DocumentError`)."""
    signals = indexing_signals(None, url, headers)
    title, text = document_content(body, "markdown" if flags & MARKDOWN else "text")
    return ReadPage(title, [], plain_lines(text) if flags & LINES else None,
                    text if flags & (MARKDOWN | TEXT) else None, signals.canonical, signals.noindex)


def read_tree(tree: LexborHTMLParser, url: str, flags: int, encoding: str | None = None,
              markup: bytes | str = b"", headers: Mapping[str, str] | None = None) -> ReadPage:
    """:func:`read_page` of a parsed page (reading lines or content changes the tree)."""
    # Links, title and signals first: reading the content or the lines changes the tree.
    signals = indexing_signals(tree, url, headers or {})
    page_urls = page_links(tree, url, encoding) if flags & LINKS and not signals.nofollow else []
    title = page_title(tree)
    content = None
    if flags & (MARKDOWN | TEXT):
        text = markup.decode("utf-8", "replace") if isinstance(markup, bytes) else markup
        content = html_content(tree, text, "markdown" if flags & MARKDOWN else "text", main=bool(flags & MAIN),
                               url=url)
    return ReadPage(title, page_urls, visible_lines(tree) if flags & LINES else None, content,
                    signals.canonical, signals.noindex)


def serve(requests: BinaryIO, answers: BinaryIO, *, documents: bool = False) -> None:
    """The helper's loop: one answer per request, until ``requests`` ends. A helper for
    ``documents`` reads each within :data:`DOCUMENT_SECONDS` and :data:`DOCUMENT_MEMORY`."""
    # The helper runs in a session of its own (ReaderProcess.start); should a Ctrl-C reach it
    # anyway, the walk handles it and then closes our stdin.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if documents:
        _limit_memory()
        # What pypdf says of a broken file is the page's failure, said by the walk, not lines
        # on the walk's terminal.
        logging.getLogger("pypdf").setLevel(logging.CRITICAL)
        warnings.simplefilter("ignore")
    while (request := _read_frame(requests)) is not None:
        markup, url, flags, encoding, headers, media_type = ReadRequest(*pickle.loads(request))
        answer: ReadPage | str
        try:
            if documents:
                with _time_limit(DOCUMENT_SECONDS):
                    answer = read_page(markup, url, flags, encoding, headers, media_type)
            else:
                answer = read_page(markup, url, flags, encoding, headers, media_type)
        except DocumentError as exc:
            answer = str(exc)
        except TimeoutError:
            answer = f"reading the document took longer than {DOCUMENT_SECONDS:g} s"
        except MemoryError:
            answer = f"reading the document needed more than {DOCUMENT_MEMORY >> 20} MiB"
        except Exception as exc:  # noqa: BLE001 - reported to the walk, which then reads the page itself
            answer = repr(exc)
        answers.write(_frame(answer))
        answers.flush()


def _limit_memory() -> None:
    """Let this process grow by :data:`DOCUMENT_MEMORY` at most (past it, an allocation raises
    MemoryError): where the system says how large it is and lets it be limited."""
    try:
        import resource

        import pypdf  # noqa: F401 - loaded before the size is taken: the limit is for the documents

        with open("/proc/self/statm", encoding="ascii") as statm:
            size = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = size + DOCUMENT_MEMORY
        resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    except (ImportError, OSError, ValueError) as exc:
        logger.debug("documents are read without a memory limit: %s", exc)


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise TimeoutError in the code within, once it ran ``seconds`` (where signals allow; the
    walk also stops waiting for the helper a little later: ReaderPool). A parser that catches
    every exception may swallow one, or turn it into its own error: the timer fires again every
    :data:`_REFIRE` seconds, and code that ends after its time, however it ends, raises
    TimeoutError then."""
    expired = False

    def expire(signum: int, frame: object) -> None:
        nonlocal expired
        expired = True
        raise TimeoutError

    if not hasattr(signal, "setitimer"):
        yield
        return
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, _REFIRE)
    try:
        yield
    except Exception:
        # The parser's own error for the TimeoutError it caught (a document it "cannot read").
        if expired:
            raise TimeoutError from None
        raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if expired:
        raise TimeoutError


# The response headers that bear on reading a page (sitewalk.indexing), sent with it to a helper.
SIGNAL_HEADERS = frozenset({"x-robots-tag", "link"})


def _signal_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    return {name: value for name, value in (headers or {}).items() if name.lower() in SIGNAL_HEADERS}


def _frame(value: object) -> bytes:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(data)) + data


def _read_frame(stream: BinaryIO) -> bytes | None:
    header = stream.read(_LENGTH.size)
    if len(header) < _LENGTH.size:
        return None
    return stream.read(_LENGTH.unpack(header)[0])


class ReaderProcess:
    """One helper process reading pages, in order, beside the walk (or documents: ``documents``,
    each within its limits; one it could not read fails with DocumentError)."""

    def __init__(self, process: asyncio.subprocess.Process, documents: bool = False) -> None:
        self._process = process
        self._documents = documents
        self._pending: deque[tuple[asyncio.Future[ReadPage], int]] = deque()
        # Bytes of HTML sent and not yet answered: how far behind the helper is.
        self.behind = 0
        self._broken: BrokenPipeError | None = None
        self._answers = asyncio.ensure_future(self._read_answers())

    @classmethod
    async def start(cls, documents: bool = False) -> ReaderProcess | None:
        """Start the helper (for ``documents``); None (and the reason logged) where it cannot start."""
        # The helper imports this package from where this process did (a scrapyd egg, say).
        root = str(Path(__file__).resolve().parent.parent)
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        code = ("import sys; from sitewalk.pagereader import serve; "
                f"serve(sys.stdin.buffer, sys.stdout.buffer, documents={documents})")
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable or "python3", "-c", code,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                env={**os.environ, "PYTHONPATH": path},
                # Out of the terminal's process group: Ctrl-C there is the walk's to handle (it
                # closes the helper's stdin); one that came while the helper was still starting
                # would kill it with a traceback.
                start_new_session=True,
            )
        except (OSError, RuntimeError, NotImplementedError) as exc:
            logger.info("reading pages in the walk's process: the helper process did not start (%s)", exc)
            return None
        return cls(process, documents)

    def read(self, markup: bytes | str, url: str, flags: int, encoding: str | None = None,
             headers: Mapping[str, str] | None = None, media_type: str | None = None) -> asyncio.Future[ReadPage]:
        """The page read by the helper (a future; it fails with BrokenPipeError if the helper stopped)."""
        future: asyncio.Future[ReadPage] = asyncio.get_running_loop().create_future()
        stdin = self._process.stdin
        if self._broken is not None or stdin is None or stdin.is_closing():
            future.set_exception(self._broken or BrokenPipeError("the helper process has stopped"))
            return future
        # lexbor reads text as UTF-8, dropping what cannot be encoded: the bytes it would parse here.
        data = markup if isinstance(markup, bytes) else markup.encode("utf-8", "ignore")
        # Buffered by the transport: writing never blocks the walk.
        stdin.write(_frame(tuple(ReadRequest(data, url, flags, encoding, _signal_headers(headers), media_type))))
        self._pending.append((future, len(data)))
        self.behind += len(data)
        return future

    async def _read_answers(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        try:
            while True:
                (size,) = _LENGTH.unpack(await stdout.readexactly(_LENGTH.size))
                answer = pickle.loads(await stdout.readexactly(size))
                future, sent = self._pending.popleft()
                self.behind -= sent
                if future.done():
                    continue
                if isinstance(answer, ReadPage):
                    future.set_result(answer)
                elif self._documents:
                    future.set_exception(DocumentError(answer))
                else:
                    future.set_exception(RuntimeError(f"the helper process could not read the page: {answer}"))
        except Exception as exc:  # noqa: BLE001 - any fault here must fail the pages waiting, not leave them waiting
            self._broken = BrokenPipeError(f"the page-reading helper process stopped ({exc!r})")
        while self._pending:
            future, _ = self._pending.popleft()
            if not future.done():
                future.set_exception(self._broken or BrokenPipeError("the helper process stopped"))

    def kill(self) -> None:
        """Stop the helper now: the pages it was sent fail with BrokenPipeError."""
        with contextlib.suppress(ProcessLookupError):
            self._process.kill()

    async def close(self) -> None:
        """Let the helper finish (its stdin ends) and wait for it; kill it if it does not exit."""
        stdin = self._process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()
        try:
            await asyncio.wait_for(self._process.wait(), timeout=5)
        except TimeoutError:
            self._process.kill()
            await self._process.wait()
        await asyncio.gather(self._answers, return_exceptions=True)


class ReaderPool:
    """Reads the walk's HTML pages: title, links and, for grep, the visible lines, for the index
    with ``content``, the page's content (:mod:`sitewalk.content`).

    Pages from :data:`HELPER_MIN_BYTES` on go to helper processes, started with the first such
    page (two when visible lines or content are read, on a machine with the cores: they cost
    more than Scrapy's own work for a page), each page to the one with the least HTML still to read; smaller pages are parsed in a thread and read
    in the walk's process. If no helper starts, or one stops, every page is read in the walk's
    process from then on: the same results, only later.

    Documents (PDF: :data:`sitewalk.documents.DOCUMENT_TYPES`) are read, when their content or
    lines are asked for, by a helper of their own, started with the first one, each within
    :data:`DOCUMENT_SECONDS` and :data:`DOCUMENT_MEMORY`; a document it cannot read, or one it
    does not answer for :data:`DOCUMENT_GRACE` longer (the helper is then stopped, and another
    started for the next document), is that page's failure. Never in the walk's process.
    """

    def __init__(self, lines: bool, content: str | None = None, main: bool = False) -> None:
        self._lines = lines
        self._content = content if content in _CONTENT else None
        self._main = main
        self._helpers: list[ReaderProcess] = []
        self._documents: ReaderProcess | None = None
        self._documents_lock = asyncio.Lock()
        self._starting: asyncio.Future[None] | None = None
        self._thread: ThreadPoolExecutor | None = None
        # Helpers being closed after one of them stopped (asyncio holds tasks only weakly).
        self._closing: set[asyncio.Future[None]] = set()

    def reads(self, media_type: str | None, *, lines: bool) -> bool:
        """Whether pages of ``media_type`` are read: HTML always, documents for their content or
        (``lines``) grep's lines."""
        return media_type in HTML_TYPES or (media_type in DOCUMENT_TYPES and (lines or self._content is not None))

    async def read(
        self, markup: bytes | str, url: str, *, links: bool, lines: bool, content: bool = False,
        encoding: str | None = None, headers: Mapping[str, str] | None = None, media_type: str | None = None,
    ) -> tuple[ReadPage, LexborHTMLParser | None]:
        """What the page says, and its tree when it was parsed here (None when a helper read it:
        ``Page.tree`` parses on first use). Reading lines or content changes the tree; ``content``:
        read the content the reader was made for; ``encoding`` is the page's (None for UTF-8),
        which its links' queries are encoded in; ``headers`` the response's (its indexing
        signals); ``media_type`` in :data:`sitewalk.documents.DOCUMENT_TYPES`: a document."""
        flags = flags_for(links=links, lines=lines, content=self._content if content else None, main=self._main)
        if media_type in DOCUMENT_TYPES:
            body = markup if isinstance(markup, bytes) else markup.encode("utf-8", "surrogateescape")
            return await self._read_document(body, url, flags, headers, media_type), None
        large = len(markup) >= HELPER_MIN_BYTES
        if large and self._starting is None:
            self._starting = asyncio.ensure_future(self._start_helpers())
        if large and self._helpers:
            # The helper least behind: a large page at one does not hold up the pages after it.
            helper = min(self._helpers, key=lambda reader: reader.behind)
            try:
                return await helper.read(markup, url, flags, encoding, headers), None
            except (BrokenPipeError, RuntimeError) as exc:
                self._helper_failed(exc)
                tree = parse_html(markup)
        else:
            if self._thread is None:
                self._thread = ThreadPoolExecutor(1, thread_name_prefix="sitewalk-parse")
            tree = await asyncio.get_running_loop().run_in_executor(self._thread, parse_html, markup)
        # A tree the content was read from is changed: Page.tree parses the page again.
        return read_tree(tree, url, flags, encoding, markup, headers), tree if not flags & (MARKDOWN | TEXT) else None

    async def _read_document(self, body: bytes, url: str, flags: int, headers: Mapping[str, str] | None,
                             media_type: str) -> ReadPage:
        # One document at a time: the time one is waited for is its own.
        async with self._documents_lock:
            if self._documents is None:
                self._documents = await ReaderProcess.start(documents=True)
            helper = self._documents
            if helper is None:
                raise DocumentError("no helper process could be started to read it in")
            try:
                return await asyncio.wait_for(helper.read(body, url, flags, None, headers, media_type),
                                              DOCUMENT_SECONDS + DOCUMENT_GRACE)
            except TimeoutError:
                self._stop_documents(helper)
                raise DocumentError(f"reading the document took longer than {DOCUMENT_SECONDS:g} s") from None
            except BrokenPipeError as exc:
                self._stop_documents(helper)
                raise DocumentError(f"the process reading it stopped ({exc})") from None

    def _stop_documents(self, helper: ReaderProcess) -> None:
        """Stop the documents' helper (the next document starts another)."""
        if self._documents is helper:
            self._documents = None
        helper.kill()
        closing = asyncio.ensure_future(helper.close())
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)

    async def _start_helpers(self) -> None:
        count = 2 if (self._lines or self._content) and (os.cpu_count() or 1) > 1 else 1
        started = await asyncio.gather(*(ReaderProcess.start() for _ in range(count)))
        self._helpers = [helper for helper in started if helper is not None]

    def _helper_failed(self, exc: BaseException) -> None:
        if isinstance(exc, BrokenPipeError) and self._helpers:
            logger.warning("%s: reading pages in the walk's process from now on", exc)
            helpers, self._helpers = self._helpers, []
            for helper in helpers:
                closing = asyncio.ensure_future(helper.close())
                self._closing.add(closing)
                closing.add_done_callback(self._closing.discard)
        else:
            logger.debug("reading the page here: %s", exc)

    async def close(self) -> None:
        """Stop the thread and the helpers (each finishes the pages it was sent)."""
        if self._thread is not None:
            self._thread.shutdown(wait=False)
        if self._starting is not None:
            await self._starting
        helpers, self._helpers = self._helpers, []
        if self._documents is not None:
            helpers.append(self._documents)
            self._documents = None
        await asyncio.gather(*(helper.close() for helper in helpers), *self._closing)
