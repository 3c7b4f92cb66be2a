"""The walk's memory of a site across walks (``state``): each page as last fetched, for conditional requests and what changed."""

from __future__ import annotations

import fcntl
import hashlib
import json
import sqlite3
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

from sitewalk.exceptions import SitewalkError

if TYPE_CHECKING:
    from scrapy.http import Response

    from sitewalk.config import WalkConfig
    from sitewalk.hints import Surface
    from sitewalk.items import Page

__all__ = ["CHANGES", "FILE", "Changes", "Memory", "Remembered", "check_state"]

# The file a state directory holds, and the file a walk locks while it uses the state.
FILE = "sitewalk-state.sqlite"
_LOCK = "sitewalk-state.lock"
_VERSION = 1
# What an item's ``change`` says of its page.
CHANGES = ("new", "changed", "unchanged")
# Statuses that say a page is gone.
_GONE = frozenset({404, 410})
# Stops after which the pages a walk did not reach say something about the site: it went as far
# as its budgets take it. A deadline, an interruption or a consumer's stop end it anywhere.
_COMPARABLE_STOPS = frozenset({None, "max-pages", "max-bytes"})
# The arguments that decide which pages a walk reaches: "no longer reached" compares walks with the same.
_SHAPE = ("max_depth", "max_pages", "max_bytes", "include", "exclude", "no_parent", "sitemap")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS site (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS walks (
    id INTEGER PRIMARY KEY, started REAL NOT NULL, ended REAL, stopped TEXT, shape TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pages (
    url TEXT PRIMARY KEY, final_url TEXT NOT NULL, status INTEGER NOT NULL, etag TEXT, last_modified TEXT,
    hash TEXT, content_type TEXT, title TEXT, links TEXT, walk INTEGER NOT NULL, present INTEGER NOT NULL,
    change TEXT, gone_in INTEGER);
CREATE INDEX IF NOT EXISTS pages_final_url ON pages (final_url);
"""


class _Row(NamedTuple):
    """A row of the pages table, its columns in the table's order (an INSERT takes it as it is)."""

    url: str
    final_url: str
    status: int
    etag: str | None
    last_modified: str | None
    hash: str | None
    content_type: str | None
    title: str | None
    links: str | None  # JSON
    walk: int | None
    present: int
    change: str
    gone_in: int | None


@dataclass(frozen=True, slots=True)
class Remembered:
    """What a request for a page the state knows sends: the URL of the row it validates (the
    page whose final URL it asks for), and that row's status, ``ETag`` and ``Last-Modified``."""

    url: str
    status: int
    etag: str | None
    last_modified: str | None

    def validators(self) -> dict[str, str]:
        """The headers of a conditional request for this page (none for a page that was not 2xx)."""
        if not 200 <= self.status < 300:
            return {}
        headers = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


@dataclass
class Changes:
    """What changed since the previous walk, as the report's ``changes`` says it: the pages of
    this walk by their items' ``change``, and ``removed``: each page the previous walk fetched
    that now answers 404 or 410 (``why``: the status) or that this walk did not reach
    (``why``: ``unreached``). ``unreached`` says why pages not reached are not listed, when they
    are not: only a walk with the previous walk's budgets and scope, ended by running out of
    pages or by max_pages or max_bytes, tells a page that is gone from one it did not get to."""

    new: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: list[dict[str, str]] = field(default_factory=list)
    unreached: str | None = None
    # The final URLs of the pages removed (what save_dir named their files by); not in the report.
    removed_final_urls: list[str] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        del record["removed_final_urls"]
        return record


def body_hash(body: bytes) -> str:
    """What tells two bodies apart (the body as decompressed)."""
    return hashlib.blake2b(body, digest_size=16).hexdigest()


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def _path(config: WalkConfig) -> Path:
    assert config.state is not None
    return Path(config.state) / FILE


def _refused(config: WalkConfig, surface: Surface, problem: str) -> SitewalkError:
    return SitewalkError(
        f"{surface.name('state')} {config.state!r} {problem}: give another state directory "
        f"(e.g. {surface.argument('state', 'state')}), or delete that one to start over"
    )


def _connect(config: WalkConfig, surface: Surface) -> sqlite3.Connection:
    """The state's database, checked: the refusal when it is damaged, from another sitewalk, or
    of another origin than the seed's."""
    path = _path(config)
    if path.parent.exists() and not path.parent.is_dir():
        raise _refused(config, surface, "is a file, not a directory")
    existed = path.exists()
    if not existed:
        return _created(path, config, surface)
    try:
        connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        checked = connection.execute("PRAGMA quick_check").fetchone()[0]
        if checked != "ok":
            raise sqlite3.DatabaseError(checked)
        site = dict(connection.execute("SELECT key, value FROM site").fetchall())
        connection.execute(f"SELECT {_COLUMNS}, change, gone_in FROM pages LIMIT 1").fetchall()
        connection.execute("SELECT id, started, ended, stopped, shape FROM walks LIMIT 1").fetchall()
    except sqlite3.Error as exc:
        raise _refused(config, surface, f"holds a damaged state ({exc})") from None
    if site.get("version") != str(_VERSION):
        raise _refused(config, surface, f"holds a state of another sitewalk version ({site.get('version')})")
    origins = {site.get("origin"), _origin(site.get("seed", ""))}
    seed_origin = _origin(config.seed)
    if seed_origin not in origins:
        raise _refused(config, surface, f"holds the state of {site.get('origin')}, not of {seed_origin}")
    return connection


def _created(path: Path, config: WalkConfig, surface: Surface) -> sqlite3.Connection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        connection.executescript(_SCHEMA)
        connection.executemany("INSERT OR REPLACE INTO site (key, value) VALUES (?, ?)",
                               [("version", str(_VERSION)), ("seed", config.seed), ("origin", _origin(config.seed))])
    except (OSError, sqlite3.Error) as exc:
        raise _refused(config, surface, f"cannot be written ({getattr(exc, 'strerror', None) or exc})") from None
    return connection


def _locked(config: WalkConfig, surface: Surface) -> IO[bytes]:
    """The state's lock, held until the file returned is closed (or the process ends, killed or
    not): two walks at once would each take the other's pages for removed ones."""
    lock = _path(config).with_name(_LOCK).open("ab")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        raise SitewalkError(
            f"{surface.name('state')} {config.state!r} is in use by another walk: wait for it to end, "
            "or give this walk another state directory"
        ) from None
    return lock


def check_state(config: WalkConfig, surface: Surface) -> None:
    """Before the walk: a state that is damaged, from another sitewalk, of another origin or in
    use by another walk is refused in one line (a new one is created, which checks that it can be
    written)."""
    if config.state is not None:
        _connect(config, surface).close()
        _locked(config, surface).close()


class Memory:
    """The state of a site across walks (``state``, a directory): one row per page fetched, with
    its final URL, status, ``ETag``, ``Last-Modified``, the hash of its body, its content type,
    title and links (what a walk needs to go on from a page answered 304 Not Modified).

    SQLite (Python's ``sqlite3``) rather than JSON lines: the state is a table updated in place
    across walks, which an append-only file would grow by a walk's worth of lines each time and
    have to compact, and a walk reads a page's row by its URL at each 304 (the validators of
    every page, which each request asks for, are read once as the walk begins: a few hundred
    bytes a page). Each page is written in its own transaction when it is settled (WAL journal,
    ``synchronous=NORMAL``; a 304's row updated in place): a walk killed
    with SIGKILL keeps every page written before, and a power cut loses at most the last pages
    (their next walk fetches them whole), never the state itself.

    A walk's rows are written from :meth:`begin` on; until then the state is only read, so a
    walk refused before it starts leaves it as it was. One walk at a time uses a state (a lock
    file beside it, which the kernel releases when a walk ends, however it ends).
    """

    def __init__(self, config: WalkConfig, surface: Surface) -> None:
        self._seed = config.seed
        self._db = _connect(config, surface)
        self._lock = _locked(config, surface)
        self._shape = json.dumps({name: getattr(config, name) for name in _SHAPE}, sort_keys=True)
        # This walk's row in walks, from begin().
        self.walk: int | None = None
        # The page rows to write when their page is settled (the pages table's columns), by ticket
        # number; with whether the row is the one the request validated, unchanged (then updated in place).
        self._pending: dict[int, tuple[bool, _Row]] = {}
        # The rows a request may validate, by final URL, from begin().
        self._known: dict[str, Remembered] = {}
        self._changes: Changes | None = None

    def begin(self, *, resumed: bool) -> None:
        """The walk starts: a row of its own, or the row of the walk it resumes (JOBDIR), whose
        pages then count as this walk's."""
        db = self._db
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        last = db.execute("SELECT id FROM walks ORDER BY id DESC LIMIT 1").fetchone()
        if resumed and last is not None:
            self.walk = int(last[0])
            db.execute("UPDATE walks SET ended = NULL, stopped = NULL WHERE id = ?", (self.walk,))
        else:
            self.walk = db.execute("INSERT INTO walks (started, shape) VALUES (?, ?)", (time.time(), self._shape)).lastrowid
        # What each request may validate, read once: a look-up at each request rather than a
        # query. Each final URL's latest row (the last written wins), kept as this walk writes.
        self._known = {final_url: Remembered(url, status, etag, modified) for url, final_url, status, etag, modified
                       in db.execute("SELECT url, final_url, status, etag, last_modified FROM pages ORDER BY walk, rowid")}

    def known(self, url: str) -> Remembered | None:
        """The page whose final URL is ``url`` (what a request for ``url`` may validate)."""
        return self._known.get(url)

    def arrived(self, number: int, response: Response, page: Page, validated: str | None) -> list[str] | None:
        """``page`` arrived for the request ``number`` (``validated``: the URL of the row whose
        validators it sent): sets its ``change``, keeps its row for :meth:`settled`; for a page
        answered 304 Not Modified, returns its links, title and content type from the state (its
        links also in ``page.links``)."""
        db = self._db
        if page.status == 304 and validated is not None and (known := db.execute(
                "SELECT final_url, status, etag, last_modified, hash, content_type, title, links FROM pages WHERE url = ?",
                (validated,)).fetchone()) is not None:
            final_url, status, etag, modified, digest, content_type, title, links = known
            page.change = "unchanged"
            page.title, page.content_type = title, content_type
            page.links = json.loads(links) if links is not None else []
            # The row as it was, under this request's URL, with the validators the 304 sent, if any;
            # its links as the state holds them (not encoded again).
            self._pending[number] = page.url == validated, _Row(
                page.url, final_url, status, _header(response, b"ETag") or etag,
                _header(response, b"Last-Modified") or modified, digest, content_type, title, links, self.walk, 1,
                "unchanged", None,
            )
            return page.links
        before = (db.execute("SELECT status, hash, present FROM pages WHERE url = ?", (page.url,)).fetchone()
                  or db.execute("SELECT status, hash, present FROM pages WHERE final_url = ? ORDER BY walk DESC LIMIT 1",
                                (page.final_url,)).fetchone())
        digest = body_hash(response.body)
        gone = page.status in _GONE
        # A page gone before and gone still is compared like any other.
        if before is None or (not before[2] and not gone):
            page.change = "new"
        elif before[0] == page.status and before[1] == digest:
            page.change = "unchanged"
        else:
            page.change = "changed"
        self._pending[number] = False, _Row(
            page.url, page.final_url, page.status, _header(response, b"ETag"), _header(response, b"Last-Modified"),
            digest, page.content_type, None, None, self.walk, int(not gone), page.change,
            # The walk that found it gone, for the report's removed.
            self.walk if gone and before is not None and before[2] else None,
        )
        return None

    def settled(self, number: int, page: Page) -> None:
        """The page of request ``number`` went through the consumers: its row is written, with
        the title and links its reading found (and its change, which :meth:`changes` counts)."""
        pending = self._pending.pop(number, None)
        if pending is None or self.walk is None:
            return
        in_place, row = pending
        if in_place:
            # A 304 for the row it validated: only what a walk changes is written, in place (a
            # third of the time of replacing the row, whose indexes then change too).
            self._db.execute("UPDATE pages SET etag = ?, last_modified = ?, walk = ?, present = 1, change = 'unchanged', "
                             "gone_in = NULL WHERE url = ?", (row.etag, row.last_modified, self.walk, row.url))
        else:
            if page.status != 304:
                row = row._replace(title=page.title, links=json.dumps(page.links) if page.links is not None else None)
            self._db.execute(
                "INSERT OR REPLACE INTO pages (url, final_url, status, etag, last_modified, hash, content_type, title, "
                "links, walk, present, change, gone_in) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
        self._known[row.final_url] = Remembered(row.url, row.status, row.etag, row.last_modified)

    def released(self, number: int) -> None:
        """Request ``number`` ended without a page that counts: nothing is written of it."""
        self._pending.pop(number, None)

    def changes(self, stopped: str | None) -> Changes:
        """What changed since the previous walk (computed once, when the walk ends)."""
        if self._changes is not None:
            return self._changes
        # From the rows this walk wrote: a walk resumed from JOBDIR counts its earlier part too.
        db, walk = self._db, self.walk or 0
        counts = dict(db.execute("SELECT change, COUNT(*) FROM pages WHERE walk = ? GROUP BY change", (walk,)).fetchall())
        changes = Changes(*(counts.get(name, 0) for name in CHANGES))
        for url, final_url, status in db.execute(
                "SELECT url, final_url, status FROM pages WHERE gone_in = ? ORDER BY rowid", (walk,)).fetchall():
            changes.removed.append({"url": url, "why": str(status)})
            changes.removed_final_urls.append(final_url)
        previous = self._db.execute(
            "SELECT id, shape FROM walks WHERE ended IS NOT NULL AND id < ? ORDER BY id DESC LIMIT 1",
            (self.walk or 0,)).fetchone()
        seed = db.execute("SELECT status FROM pages WHERE url = ? AND walk = ?", (self._seed, walk)).fetchone()
        if previous is None:
            changes.unreached = "no earlier walk ended: pages not reached are not compared"
        elif seed is None or seed[0] >= 400:
            # A site down for a moment is not a site whose pages are all gone.
            answer = "was not fetched" if seed is None else f"answered {seed[0]}"
            changes.unreached = f"the seed {answer}: pages not reached are not compared"
        elif stopped not in _COMPARABLE_STOPS:
            changes.unreached = f"this walk was stopped ({stopped}): pages not reached are not compared"
        elif previous[1] != self._shape:
            differs = _differs(json.loads(previous[1]), json.loads(self._shape))
            changes.unreached = f"{differs} differs from the previous walk's: pages not reached are not compared"
        else:
            # The previous walk's pages (and those of a walk killed after it) that this one did not fetch.
            rows = self._db.execute("SELECT url, final_url FROM pages WHERE present = 1 AND walk >= ? AND walk != ? "
                                    "ORDER BY url", (previous[0], self.walk)).fetchall()
            changes.removed.extend({"url": url, "why": "unreached"} for url, _ in rows)
            changes.removed_final_urls.extend(final_url for _, final_url in rows)
        self._changes = changes
        return changes

    def close(self, stopped: str | None) -> None:
        """The walk ended: pages it found gone are marked so, and its row says it ended."""
        if self.walk is not None:
            changes = self.changes(stopped)
            unreached = [entry["url"] for entry in changes.removed if entry["why"] == "unreached"]
            self._db.executemany("UPDATE pages SET present = 0 WHERE url = ?", [(url,) for url in unreached])
            self._db.execute("UPDATE walks SET ended = ?, stopped = ? WHERE id = ?", (time.time(), stopped, self.walk))
        self._db.close()
        self._lock.close()


def _header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None


_COLUMNS = "url, final_url, status, etag, last_modified, hash, content_type, title, links, walk, present"


def _differs(before: dict[str, Any], now: dict[str, Any]) -> str:
    name = next(name for name in _SHAPE if before.get(name) != now.get(name))
    return f"{name} ({now.get(name)!r}, was {before.get(name)!r})"
