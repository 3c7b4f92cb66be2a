"""Checks of a walk's settings and of what it will write (its report, feeds, save directory and
JOBDIR), before any request."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.settings import default_settings

from sitewalk import settings as sitewalk_settings
from sitewalk.exceptions import SitewalkError
from sitewalk.hints import CLI, Surface
from sitewalk.jobs import journal_path, local_feeds
from sitewalk.memory import check_state

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from sitewalk.config import WalkConfig

__all__ = ["check_run", "check_settings", "setting_types"]

# Settings whose component checks them as it is built, with a message of its own (sitewalk.progress).
_CHECKED_BY_THEIR_COMPONENT = frozenset({"SITEWALK_PROGRESS_INTERVAL"})
_LOG_LEVELS = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG")
# Settings Scrapy reads as numbers of seconds (getfloat), though their defaults are whole.
_READ_AS_FLOAT = frozenset({"DNS_TIMEOUT", "DOWNLOAD_DELAY", "DOWNLOAD_TIMEOUT"})


def setting_types() -> dict[str, Any]:
    """The type of each setting whose type is known: that of its default, sitewalk's
    (:mod:`sitewalk.settings`) over Scrapy's (``scrapy.settings.default_settings``); ``list[int]``
    for a list of numbers; ``LOG_LEVEL`` as ``logging``."""
    types: dict[str, Any] = {}
    for module in (default_settings, sitewalk_settings):
        for name in dir(module):
            value = getattr(module, name)
            if not name.isupper() or value is None:
                continue
            kind: Any = type(value)
            if kind is list and value and all(isinstance(item, int) for item in value):
                kind = list[int]
            elif kind is int and name in _READ_AS_FLOAT:
                kind = float
            if kind in (bool, int, float, dict, list[int]):
                types[name] = kind
    types["LOG_LEVEL"] = logging
    return types


def _accepts(kind: Any, settings: BaseSettings, name: str) -> str | None:
    """What the setting ``name`` of type ``kind`` takes, if its value in ``settings`` is not that."""
    value = settings.get(name)
    try:
        if kind is bool:
            settings.getbool(name)
        elif kind is int:
            settings.getint(name)
        elif kind is float and (isinstance(value, bool) or settings.getfloat(name) != settings.getfloat(name)):
            raise ValueError  # NaN
        elif kind is dict:
            settings.getdict(name)
        elif kind == list[int]:
            for item in settings.getlist(name):
                int(item)
        elif kind is logging and not (isinstance(value, int) or str(value).upper() in _LOG_LEVELS):
            raise ValueError
    except (TypeError, ValueError, json.JSONDecodeError):
        return {
            bool: "true or false", int: "a whole number", float: "a number", dict: "a JSON object",
            list[int]: "comma-separated whole numbers", logging: f"a log level ({', '.join(_LOG_LEVELS)})",
        }[kind]
    return None


def check_settings(settings: BaseSettings, surface: Surface = CLI) -> None:
    """Each setting whose type is known (:func:`setting_types`) has a value of that type, whether or
    not this walk reads it: one line naming it, what it takes and an example (its default)."""
    types = setting_types()
    for name in settings:
        kind = types.get(name)
        if kind is None or name in _CHECKED_BY_THEIR_COMPONENT:
            continue
        takes = _accepts(kind, settings, name)
        if takes is not None:
            default: Any = getattr(sitewalk_settings, name, getattr(default_settings, name, None))
            example = json.dumps(default) if kind is dict else ",".join(map(str, default)) if kind == list[int] else default
            raise SitewalkError(
                f"{surface.setting(name, settings.get(name))}: {name} takes {takes} (e.g. {surface.setting(name, example)})"
            )



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


def _check_distinct(config: WalkConfig, settings: BaseSettings, surface: Surface) -> None:
    """Each output its own file: two outputs that resolve to the same file (through ``..``, a
    symbolic link, another spelling) would overwrite each other, and an output inside the save
    directory or JOBDIR would be overwritten by the walk's own files there."""
    files = [(f"output {uri!r}", path) for uri, path in local_feeds(settings).items()]
    files += [(f"{surface.option(name)} {getattr(config, name)!r}", Path(getattr(config, name)))
              for name in ("report", "html_report", "junit") if getattr(config, name) is not None]
    directories = []
    if config.save_dir is not None:
        directories.append((f"{surface.option('save_dir')} {config.save_dir!r}", Path(config.save_dir).resolve()))
    jobdir = settings.get("JOBDIR")
    if jobdir:
        directories.append((surface.setting("JOBDIR", jobdir), Path(jobdir).resolve()))
    seen: dict[Path, str] = {}
    for shown, path in files:
        resolved = path.resolve()
        if resolved in seen:
            raise SitewalkError(
                f"{seen[resolved]} and {shown} are the same file ({str(resolved)!r}): give each output its own file"
            )
        seen[resolved] = shown
        for named, directory in directories:
            if resolved == directory or resolved.is_relative_to(directory):
                raise SitewalkError(
                    f"{shown} is inside {named}, where the walk writes files of its own: give a path outside it"
                )
    if len(directories) == 2 and (directories[0][1].is_relative_to(directories[1][1])
                                  or directories[1][1].is_relative_to(directories[0][1])):
        raise SitewalkError(f"{directories[0][0]} and {directories[1][0]} overlap: give each its own directory")


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
    feeds, the save directory, JOBDIR, the state (damaged, or of another origin). The walk's components check their own settings (the progress
    interval, the guard's networks, the browser ``render`` runs) as Scrapy builds them
    (``from_crawler``), before any request too."""
    check_settings(settings, surface)
    _check_distinct(config, settings, surface)
    _check_outputs(config, settings, surface)
    if config.save_dir is not None:
        _check_save_dir(config.save_dir, surface)
    journal = journal_path(settings)
    if journal is not None:
        _check_jobdir(journal, surface)
    check_state(config, surface)
