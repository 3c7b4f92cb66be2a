"""A walk's files outside the feed: scrapyd jobs' output paths, and the JOBDIR journal of a resumable walk."""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from w3lib.url import file_uri_to_path

from sitewalk.exceptions import SitewalkError

if TYPE_CHECKING:
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


def check_jobdir(settings: BaseSettings, config: WalkConfig) -> None:
    """A :class:`SitewalkError` if JOBDIR holds the journal of a walk of another seed, or of one
    whose consumer made other items (another grep pattern, other css/xpath, another content mode)."""
    path = journal_path(settings)
    if path is not None and path.exists():
        with path.open("rb") as file:
            _check_header(_header(file.readline()), config, path)


def consumer_of(config: WalkConfig) -> dict[str, Any]:
    """What shapes the items of a walk's feed: a resumed walk must make the same, or its feed would
    mix two walks'."""
    return {name: getattr(config, name) for name in _CONSUMER_FIELDS}


def _header(line: bytes) -> dict[str, Any] | None:
    try:
        header = json.loads(line)
    except ValueError:
        return None
    return header if isinstance(header, dict) and header.get("journal") == _VERSION else None


def _check_header(header: dict[str, Any] | None, config: WalkConfig, path: Path) -> None:
    if header is None:
        return
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
    journal, or one that cannot be resumed: a line says why). A journal of another seed is a
    :class:`SitewalkError`: that JOBDIR belongs to another walk."""
    path = journal_path(settings)
    if path is None:
        return None
    if not path.exists():
        if (path.parent / _OLD_STATE).exists():
            logger.info("JOBDIR %s holds a walk of an older sitewalk, which cannot be resumed: starting over", path.parent)
        return None
    lines = path.read_bytes().split(b"\n")
    header = _header(lines[0])
    _check_header(header, config, path)
    if header is None:
        logger.info("JOBDIR %s: its journal is unreadable or from another sitewalk version: starting over", path.parent)
        return None
    state = JobState()
    done: set[str] = set()
    queued: list[Entry] = []
    # The last line is cut short if the walk died while writing it: it did not happen. A line
    # that cannot be read before others (a damaged disk, an edited file) ends the replay there:
    # the journal is cut back to the lines before it, so each rerun goes on from the same place.
    offset = len(lines[0]) + 1
    for number, line in enumerate(lines[1:], start=2):
        try:
            entry = json.loads(line)
            if not isinstance(entry, dict) or not isinstance(entry["queued"], list):
                raise ValueError(line)
        except (ValueError, KeyError):
            later = sum(1 for rest in lines[number:] if rest.strip())
            if later:
                logger.warning(
                    "JOBDIR %s: line %d of its journal cannot be read; the walk goes on from the line before it, "
                    "and the pages done in the %d lines after it are fetched again (the journal is cut there)",
                    path.parent, number, later + 1,
                )
                os.truncate(path, offset)
            break
        offset += len(line) + 1
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
    if state.origin is None:
        logger.info("JOBDIR %s: the walk's seed was never fetched: starting over", path.parent)
        return None
    state.queue = [item for item in queued if item[0] not in done]
    state.seen.update(url for url, _, _ in queued)
    return state


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
