"""Checks of what a walk will write (its report, feeds and save directory), before any request."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from sitewalk.exceptions import SitewalkError
from sitewalk.hints import CLI, Surface
from sitewalk.jobs import journal_path, local_feeds

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from sitewalk.config import WalkConfig

__all__ = ["check_run"]



def _unwritable(path: Path) -> str | None:
    """What keeps a file from being written at ``path``, or None. Nothing is created or changed:
    an existing file is opened to append, a new one tried as an unnamed file in its directory.
    A directory that does not exist is not made: a typo must not create directories."""
    directory = path.parent
    if path.is_dir():
        return "is a directory"
    if not directory.is_dir():
        return f"is in a directory that does not exist ({str(directory)!r})"
    try:
        if path.exists():
            path.open("ab").close()
        else:
            tempfile.TemporaryFile(dir=directory).close()
    except OSError as exc:
        return f"cannot be written ({exc.strerror or exc})"
    return None


def _check_outputs(config: WalkConfig, settings: BaseSettings, surface: Surface = CLI) -> None:
    """The feeds (FEEDS: ``-o``/``-O``) and the report are written as the walk goes and when it
    ends: a path that cannot be written fails now, before any request."""
    for uri, path in local_feeds(settings).items():
        problem = _unwritable(path)
        if problem is not None:
            raise SitewalkError(
                f"output {uri!r} {problem}: give a file path in an existing directory, e.g. -o pages.jsonl"
            )
    for name, example in (("report", "report.json"), ("html_report", "walk.html"), ("junit", "links.xml")):
        path = getattr(config, name)
        problem = _unwritable(Path(path)) if path is not None else None
        if problem is not None:
            raise SitewalkError(
                f"{name} {path!r} {problem}: give a file path in an existing directory, "
                f"e.g. {surface.argument(name, example)}"
            )


def _unwritable_directory(directory: str) -> str | None:
    """What keeps files from being written in ``directory`` (made if missing), or None."""
    path = Path(directory)
    existing = next((parent for parent in (path, *path.parents) if parent.exists()), Path("."))
    if not existing.is_dir():
        return f"is or is under a file ({str(existing)!r})"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"cannot be written by this process ({str(existing)!r})"
    return None


def _check_save_dir(directory: str, surface: Surface) -> None:
    """The pages are saved as they arrive: a directory that cannot be made or written fails now."""
    problem = _unwritable_directory(directory)
    if problem is not None:
        raise SitewalkError(
            f"{surface.name('save_dir')} {directory!r} {problem}: give a directory to create or write to, "
            f"e.g. {surface.argument('save_dir', 'site')}"
        )


def _check_jobdir(journal: Path, surface: Surface) -> None:
    """The journal is written as the walk goes (Scrapy keeps its own state there too): a JOBDIR
    that cannot be made or written, or a journal in it that cannot be appended to, fails now."""
    directory = str(journal.parent)
    problem = _unwritable_directory(directory)
    if problem is None and journal.exists():
        problem = _unwritable(journal)
        problem = f"holds a journal that {problem}" if problem else None
    if problem is not None:
        raise SitewalkError(
            f"{surface.setting('JOBDIR', directory)} {problem}: give a directory to create or write to, "
            f"e.g. {surface.setting('JOBDIR', 'job')}"
        )


def check_run(config: WalkConfig, settings: BaseSettings, surface: Surface = CLI) -> None:
    """Check what a walk of ``config`` writes, so that it fails before it starts: the report, the
    feeds, the save directory, JOBDIR. The walk's components check their own settings (the progress
    interval, the guard's networks, the browser ``render`` runs) as Scrapy builds them
    (``from_crawler``), before any request too."""
    _check_outputs(config, settings, surface)
    if config.save_dir is not None:
        _check_save_dir(config.save_dir, surface)
    journal = journal_path(settings)
    if journal is not None:
        _check_jobdir(journal, surface)
