"""A walk's files outside the feed: scrapyd jobs' output paths, and the JOBDIR state of a resumable walk."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import TYPE_CHECKING, Any

from w3lib.url import file_uri_to_path

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["job_feeds", "keeps_state", "load_state", "report_path", "save_state"]

_SPIDER = "sitewalk"
_STATE_VERSION = 2


def job_feeds(settings: BaseSettings, job: str) -> dict[str, dict[str, Any]] | None:
    """FEEDS for a scrapyd job that has none (scrapyd without ``items_dir``):
    ``<SITEWALK_JOBS_DIR>/sitewalk/<job>.jsonl``. None when the job has its feeds."""
    if settings.getdict("FEEDS"):
        return None
    feed = Path(settings.get("SITEWALK_JOBS_DIR")) / _SPIDER / f"{job}.jsonl"
    return {str(feed): {"format": "jsonlines"}}


def report_path(settings: BaseSettings, report: str | None, job: str | None) -> str | None:
    """Where the report goes: the ``report`` argument; for a scrapyd job (``_job``) without one,
    ``<job>.report.json`` beside the job's one local feed, else in ``SITEWALK_JOBS_DIR``."""
    if report is not None or job is None:
        return report
    feeds = settings.getdict("FEEDS")
    uri = str(next(iter(feeds))) if len(feeds) == 1 else ""
    if uri.startswith("file://") or (uri and "://" not in uri):
        path = Path(file_uri_to_path(uri)) if uri.startswith("file://") else Path(uri)
        target = path.with_name(f"{job}.report.json")
    else:
        target = Path(settings.get("SITEWALK_JOBS_DIR")) / _SPIDER / f"{job}.report.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    return str(target)


def _state_path(settings: BaseSettings) -> Path | None:
    jobdir = settings.get("JOBDIR")
    return Path(jobdir) / "sitewalk.state" if jobdir else None


def keeps_state(settings: BaseSettings) -> bool:
    """Whether the walk keeps its state for a resumed run (JOBDIR is set)."""
    return _state_path(settings) is not None


def load_state(settings: BaseSettings, seed: str) -> dict[str, Any] | None:
    """The state an unfinished walk of ``seed`` left in JOBDIR, if any."""
    path = _state_path(settings)
    if path is None or not path.exists():
        return None
    state: dict[str, Any] = pickle.loads(path.read_bytes())
    if state.get("version") != _STATE_VERSION or state.get("finished") or state.get("seed") != seed:
        return None
    return state


def save_state(settings: BaseSettings, state: dict[str, Any], *, finished: bool) -> None:
    """With JOBDIR, keep ``state`` (see :meth:`sitewalk.state.Walk.snapshot`) for the next run."""
    path = _state_path(settings)
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_bytes(pickle.dumps({**state, "version": _STATE_VERSION, "finished": finished}))
    partial.replace(path)
