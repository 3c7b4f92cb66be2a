"""A walk's files outside the feed: scrapyd jobs' output paths, and the JOBDIR journal of a resumable walk."""

from __future__ import annotations

import json
import logging
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from w3lib.url import file_uri_to_path

from sitewalk.exceptions import SitewalkError
from sitewalk.items import count

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.settings import BaseSettings

    from sitewalk.config import WalkConfig
    from sitewalk.frontier import Entry

__all__ = ["FSYNC_EVERY", "consumer_of", "JOURNAL", "JobState", "Journal", "check_jobdir", "cut_feeds", "job_feeds", "journal_path", "local_feeds",
           "replay", "report_path"]

logger = logging.getLogger(__name__)

_SPIDER = "sitewalk"
JOURNAL = "sitewalk.journal"
_VERSION = 1
# The file in which sitewalk 0.1 kept a stopped walk's state (a pickle, written at the end only).
_OLD_STATE = "sitewalk.state"
# The arguments that shape a walk's items: a walk resumed with others would mix two walks' items.
_CONSUMER_FIELDS = ["grep", "fixed_strings", "ignore_case", "context", "css", "xpath", "regex", "content",
                    "main_content", "links"]
# Seconds between two fsyncs of the journal.
FSYNC_EVERY = 1.0


def job_feeds(settings: BaseSettings, job: str) -> dict[str, dict[str, Any]] | None:
    """FEEDS for a scrapyd job that has none (scrapyd without ``items_dir``):
    ``<SITEWALK_JOBS_DIR>/sitewalk/<job>.jsonl``. None when the job has its feeds."""
    if settings.getdict("FEEDS"):
        return None
    feed = Path(settings.get("SITEWALK_JOBS_DIR")) / _SPIDER / f"{job}.jsonl"
    feed.parent.mkdir(parents=True, exist_ok=True)
    return {str(feed): {"format": "jsonlines"}}


def report_path(settings: BaseSettings, report: str | None, job: str | None) -> str | None:
    """Where the report goes: the ``report`` argument; for a scrapyd job (``_job``) without one,
    ``<job>.report.json`` beside the job's one local feed, else in ``SITEWALK_JOBS_DIR``."""
    if report is not None or job is None:
        return report
    feeds = settings.getdict("FEEDS")
    path = _local_path(str(next(iter(feeds)))) if len(feeds) == 1 else None
    if path is not None:
        target = path.with_name(f"{job}.report.json")
    else:
        target = Path(settings.get("SITEWALK_JOBS_DIR")) / _SPIDER / f"{job}.report.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    return str(target)


def journal_path(settings: BaseSettings) -> Path | None:
    """Where a walk with JOBDIR keeps its journal; None without JOBDIR."""
    jobdir = settings.get("JOBDIR")
    return Path(jobdir) / JOURNAL if jobdir else None


def local_feeds(settings: BaseSettings) -> dict[str, Path]:
    """The feeds of ``FEEDS`` written to local files, by URI (not those whose URI Scrapy fills
    in when it opens them: their file is not known before)."""
    paths = {}
    for uri in settings.getdict("FEEDS"):
        text = str(uri)
        if "%(" not in text and (path := _local_path(text)) is not None:
            paths[text] = path
    return paths


@dataclass
class JobState:
    """What a journal says of a walk, replayed (:func:`replay`)."""

    queue: list[Entry] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    held: list[tuple[list[str], int, str]] = field(default_factory=list)
    origin: str | None = None
    failures: list[dict[str, Any]] = field(default_factory=list)
    robots_skipped: list[str] = field(default_factory=list)
    consumers: dict[str, int] = field(default_factory=dict)
    out_of_scope: int = 0
    pages: int = 0
    bytes: int = 0
    elapsed: float = 0.0
    # Bytes each local feed held after the last page the journal says is done.
    feeds: dict[str, int] = field(default_factory=dict)
    # The pages done that the journal lost to damage (named by the lines replay dropped, as far
    # as they can be read): the resumed walk fetches them again (the report's ``refetched``).
    lost: set[str] = field(default_factory=set)


def check_jobdir(settings: BaseSettings, config: WalkConfig) -> None:
    """A :class:`SitewalkError` if JOBDIR holds the journal of a walk of another seed, or of one
    whose consumer made other items (another grep pattern, other css/xpath, another content mode),
    or a journal whose header cannot be read (an empty file, a damaged first line)."""
    path = journal_path(settings)
    if path is not None and path.exists():
        with path.open("rb") as file:
            _check_header(_header(file.readline(), settings), config, path)


def consumer_of(config: WalkConfig) -> dict[str, Any]:
    """What shapes the items of a walk's feed: a resumed walk must make the same, or its feed would
    mix two walks'."""
    return {name: getattr(config, name) for name in _CONSUMER_FIELDS}


def _header(line: bytes, settings: BaseSettings) -> dict[str, Any]:
    """The journal's header (its first line, ``line``); a :class:`SitewalkError` when it cannot be
    read: nothing in such a journal can be resumed, and starting over would replace it."""
    jobdir = settings.get("JOBDIR")
    if not line:
        why = "is empty"
    elif not line.endswith(b"\n"):
        why = "has only its first line, cut short"
    else:
        header = _object(line)
        if isinstance(header, dict) and header.get("journal") == _VERSION and isinstance(header.get("seed"), str):
            return header
        version = header.get("journal") if isinstance(header, dict) else None
        if isinstance(version, int) and not isinstance(version, bool):
            why = f"is of another sitewalk (journal version {version}, this one reads {_VERSION})"
        else:
            why = f"does not start with a sitewalk journal's header (line 1 is {header if isinstance(header, str) else 'another JSON object'})"
    raise SitewalkError(
        f"JOBDIR {jobdir}: its journal ({JOURNAL}) {why}: nothing in it can be resumed; "
        f"delete {jobdir} to start the walk over, or give the walk another JOBDIR"
    )


def _check_header(header: dict[str, Any], config: WalkConfig, path: Path) -> None:
    seed = config.seed
    if header.get("seed") != seed:
        raise SitewalkError(
            f"JOBDIR {path.parent} holds the walk of {header.get('seed')}, not of {seed}: "
            "give the walk another JOBDIR (or delete that one to start over)"
        )
    recorded = header.get("consumer")
    given = consumer_of(config)
    if recorded is not None and recorded != given:
        differs = sorted(set(recorded) | set(given), key=_CONSUMER_FIELDS.index)
        name = next(name for name in differs if recorded.get(name) != given.get(name))
        raise SitewalkError(
            f"JOBDIR {path.parent} holds a walk with {name}={recorded.get(name)!r}, not {name}={given.get(name)!r}: "
            "its feed would mix the two; give the walk another JOBDIR (or delete that one to start over)"
        )


def replay(settings: BaseSettings, config: WalkConfig) -> JobState | None:
    """The walk that JOBDIR's journal records, to go on from; None to start the walk (no
    journal, or one whose walk never fetched its seed). A :class:`SitewalkError` when that JOBDIR
    belongs to another walk, or when its journal is too damaged to resume anything.

    A journal damaged after its header (:func:`_entry` says what a readable line is) goes on
    from the last line before the damage: the lines after it are dropped, the journal cut there,
    and the pages they name as done are :attr:`JobState.lost`. A last line cut short (the walk
    died as it wrote it, as a ``kill -9`` may leave it) is said at INFO, any other damage in one
    WARNING line."""
    path = journal_path(settings)
    if path is None:
        return None
    if not path.exists():
        if (path.parent / _OLD_STATE).exists():
            logger.info("JOBDIR %s holds a walk of an older sitewalk, which cannot be resumed: starting over", path.parent)
        return None
    jobdir = settings.get("JOBDIR")
    lines = path.read_bytes().split(b"\n")
    # What follows the last newline: nothing, or a line cut short.
    cut = lines.pop()
    _check_header(_header(lines[0] + b"\n" if lines else cut, settings), config, path)
    entries: list[dict[str, Any]] = []
    damaged: list[tuple[int, str]] = []
    for number, line in enumerate(lines[1:], start=2):
        entry = _entry(line)
        if isinstance(entry, str):
            damaged.append((number, entry))
        elif not damaged:
            entries.append(entry)
    kept = 1 + len(entries)
    state, done = _state(entries)
    # The pages done that the lines dropped name, as far as each can be read.
    for line in [*lines[kept:], cut]:
        state.lost.update(_named_done(line))
    state.lost -= done
    total = len(lines) + (1 if cut else 0)
    if state.origin is None:
        if damaged:
            number, why = damaged[0]
            raise SitewalkError(
                f"JOBDIR {jobdir}: its journal cannot be read at line {number} ({why}), before the walk's first "
                f"page is recorded: nothing in it can be resumed; delete {jobdir} to start the walk over"
            )
        logger.info("JOBDIR %s: the walk's seed was never fetched: starting over", path.parent)
        return None
    if damaged:
        logger.warning(
            "JOBDIR %s: its journal cannot be read at %s; resuming from line %d of %d: %s done, %d queued; "
            "the pages done after it are fetched again (the report's refetched counts them), and the journal is cut there",
            jobdir, _damage(damaged), kept, total, count(state.pages, "page"), len(state.queue),
        )
        # Cut there, so that this walk's lines follow the last line read and the next rerun reads them.
        os.truncate(path, sum(len(line) + 1 for line in lines[:kept]))
    elif cut:
        logger.info(
            "JOBDIR %s: its journal's last line (line %d) was cut short as the walk ended; resuming from line %d of %d: "
            "%s done, %d queued; the pages done after it are fetched again",
            jobdir, total, kept, total, count(state.pages, "page"), len(state.queue),
        )
    return state


def _state(entries: list[dict[str, Any]]) -> tuple[JobState, set[str]]:
    """The walk that the journal's ``entries`` (its lines after the header, read) record, and
    the pages they say are done."""
    state = JobState()
    done: set[str] = set()
    queued: list[Entry] = []
    for entry in entries:
        queued.extend((url, depth, found_on) for url, depth, found_on in entry["queued"])
        state.seen.update(entry["seen"])
        state.held.extend((links, depth, found_on) for links, depth, found_on in entry["held"])
        done.update(entry["done"])
        state.origin = entry.get("origin") or state.origin
        state.failures.extend(entry["failures"])
        state.robots_skipped.extend(entry["robots_skipped"])
        state.consumers = entry["consumers"]
        state.out_of_scope = entry.get("out_of_scope", 0)
        state.pages, state.bytes, state.elapsed = entry["pages"], entry["bytes"], entry["elapsed"]
        state.feeds = entry["feeds"]
    state.queue = [item for item in queued if item[0] not in done]
    state.seen.update(url for url, _, _ in queued)
    return state, done


def _damage(damaged: list[tuple[int, str]]) -> str:
    """Where a journal is damaged, for its WARNING line: ``line 7 (not JSON)``, then any other
    damaged lines after it (the first few)."""
    (number, why), others = damaged[0], [str(number) for number, _ in damaged[1:]]
    said = f"line {number} ({why})"
    if others:
        shown = ", ".join(others[:_LINES_SAID]) + (f" and {len(others) - _LINES_SAID} more" if len(others) > _LINES_SAID else "")
        said += f"; lines {shown} after it are damaged too" if len(others) > 1 else f"; line {shown} after it is damaged too"
    return said


def _object(line: bytes) -> dict[str, Any] | str:
    """The JSON object on one line of a journal, or what it is instead."""
    try:
        text = line.decode()
    except UnicodeDecodeError:
        return "not UTF-8"
    try:
        value = json.loads(text)
    except ValueError:
        return "empty" if not text.strip() else "not JSON"
    return value if isinstance(value, dict) else "not a JSON object"


def _entry(line: bytes) -> dict[str, Any] | str:
    """The entry a line after the journal's header holds, each field of the type replaying it
    takes; else what is wrong with the line."""
    entry = _object(line)
    if isinstance(entry, str):
        return entry
    for name, valid in _FIELDS.items():
        if name not in entry and name in _SINCE_VERSION_1:
            continue
        if name not in entry:
            return f"no {name!r}"
        if not valid(entry[name]):
            return f"{name!r} is not {_FIELD_TYPES[name]}"
    return entry


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _string(value: object) -> bool:
    return isinstance(value, str)


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _triples(value: object, first: Callable[[object], bool], last: Callable[[object], bool]) -> bool:
    return isinstance(value, list) and all(
        isinstance(item, list) and len(item) == 3 and first(item[0]) and _count(item[1]) and last(item[2]) for item in value
    )


def _failure(value: object) -> bool:
    return (isinstance(value, dict) and all(isinstance(value.get(key), str) for key in ("url", "kind", "reason"))
            and isinstance(value.get("found_on"), (str, type(None))))


# Each field of a journal entry, with the test its value passes and the type that test wants.
_FIELDS: dict[str, Callable[[object], bool]] = {
    "queued": lambda value: _triples(value, _string, lambda found_on: found_on is None or isinstance(found_on, str)),
    "seen": _strings,
    "held": lambda value: _triples(value, _strings, _string),
    "done": _strings,
    "origin": lambda value: value is None or isinstance(value, str),
    "failures": lambda value: isinstance(value, list) and all(_failure(item) for item in value),
    "robots_skipped": _strings,
    "consumers": lambda value: isinstance(value, dict) and all(_count(item) for item in value.values()),
    "out_of_scope": _count,
    "pages": _count,
    "bytes": _count,
    "elapsed": lambda value: isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < math.inf,
    "feeds": lambda value: isinstance(value, dict) and all(_count(item) for item in value.values()),
}
_FIELD_TYPES = {
    "queued": "a list of [url, depth, found_on]", "seen": "a list of URLs", "held": "a list of [links, depth, found_on]",
    "done": "a list of URLs", "origin": "a URL or null", "failures": "a list of failure records",
    "robots_skipped": "a list of URLs", "consumers": "an object of counts", "out_of_scope": "a count",
    "pages": "a count", "bytes": "a count", "elapsed": "a number of seconds", "feeds": "an object of sizes",
}
# Fields a line of sitewalk's first journals may lack.
_SINCE_VERSION_1 = frozenset({"origin", "out_of_scope"})
# How many damaged lines after the first a WARNING names.
_LINES_SAID = 5
# Where a line of the journal lists the pages done (written compact, by Journal).
_DONE = '"done":['


def _named_done(line: bytes) -> list[str]:
    """The URLs a line dropped from a journal names as done, as far as it can be read: a line cut
    short names those before the cut, one too damaged to find its list none."""
    entry = _object(line)
    if isinstance(entry, dict) and _strings(entry.get("done")):
        return list(entry["done"])
    text = line.decode(errors="replace")
    index = text.find(_DONE)
    if index < 0:
        return []
    index += len(_DONE)
    urls = []
    decoder = json.JSONDecoder()
    while text.startswith('"', index):
        try:
            url, index = decoder.raw_decode(text, index)
        except ValueError:
            break
        urls.append(url)
        if text.startswith(",", index):
            index += 1
    return urls


def cut_feeds(feeds: dict[str, Path], sizes: dict[str, int]) -> None:
    """Before a resumed walk appends to its feeds: cut each back to what it held after the last
    page the journal says is done (lines written after it belong to pages fetched again)."""
    for uri, path in feeds.items():
        size = sizes.get(uri)
        if size is None or not path.exists():
            continue
        actual = path.stat().st_size
        if actual > size:
            os.truncate(path, size)
        elif actual < size:
            logger.warning("feed %s is shorter than the walk's journal says (%d < %d bytes): appending to it", uri, actual, size)


class Journal:
    """JOBDIR's record of a walk as it goes: a header naming the seed, then one JSON line per
    change of its state (the frontier's changes, the pages done, failures, budget spent, the
    feeds' sizes). Each line is written as it happens, so a killed walk loses at most the pages
    in flight; the file is fsync'd at most every :data:`FSYNC_EVERY` seconds (and at the end), so
    a power cut loses at most those seconds."""

    def __init__(self, path: Path, config: WalkConfig, *, resume: bool) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if resume:
            _drop_cut_line(path)
        self._file = path.open("ab" if resume else "wb", buffering=0)
        self._synced = time.monotonic()
        if not resume:
            self._write({"journal": _VERSION, "seed": config.seed, "consumer": consumer_of(config)})
            self.sync()

    def append(self, entry: dict[str, Any]) -> None:
        self._write(entry)
        if time.monotonic() - self._synced >= FSYNC_EVERY:
            self.sync()

    def sync(self) -> None:
        os.fsync(self._file.fileno())
        self._synced = time.monotonic()

    @property
    def closed(self) -> bool:
        return self._file.closed

    def close(self) -> None:
        self.sync()
        self._file.close()

    def _write(self, entry: dict[str, Any]) -> None:
        self._file.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")


def _drop_cut_line(path: Path) -> None:
    """Remove a last line cut short by a crash, so that the next line starts on a line of its own."""
    if not path.exists():
        return
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        os.truncate(path, end)


def _local_path(uri: str) -> Path | None:
    if uri.startswith("file://"):
        return Path(file_uri_to_path(uri))
    if "://" not in uri and uri not in ("-", "stdout:"):
        return Path(uri)
    return None
