"""Checks of a walk's arguments together, and of what a walk of them will write, before any request."""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import ada_url
from cssselect import SelectorError
from parsel import Selector

from sitewalk import patterns
from sitewalk.content import MODES
from sitewalk.exceptions import SitewalkError
from sitewalk.hints import CLI, Surface
from sitewalk.jobs import local_feeds

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from sitewalk.config import WalkConfig

__all__ = ["EXAMPLE_SEED", "RENDER_MODES", "check_config", "check_run"]

EXAMPLE_SEED = "https://docs.example.com/"
# When a page is run in a browser (sitewalk.render): never, always, or when its HTML is an app shell.
RENDER_MODES = ("never", "always", "auto")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


def check_config(config: WalkConfig, surface: Surface) -> None:
    """Each argument within its bounds, and the arguments consistent with each other: one line
    naming what is wrong and what to give instead."""
    _check_seed(config.seed, surface)
    for spec in dataclasses.fields(config):
        bounds = spec.metadata["argument"]
        bounds.check(surface.name(spec.name), getattr(config, spec.name))
    if config.grep == "":
        raise SitewalkError("grep is empty: give the text or regular expression to search for")
    if config.grep is not None and (config.css is not None or config.xpath is not None):
        raise SitewalkError("grep and css/xpath are different consumers: give one of them")
    if config.css is not None and config.xpath is not None:
        raise SitewalkError("give css or xpath, not both")
    for name in ("links", "content", "main_content", "save_dir"):
        if getattr(config, name) and config.consumer != "index":
            raise SitewalkError(f"{name} is a field of index items: give it without {config.consumer}'s arguments")
    if config.content is not None and config.content not in MODES:
        raise SitewalkError(f"content must be one of {', '.join(MODES)}, got {config.content!r}")
    if config.main_content and config.content is None and config.save_dir is None:
        raise SitewalkError("main_content chooses what content holds: give content=markdown (or text, html) too")
    if config.render not in RENDER_MODES:
        raise SitewalkError(f"{surface.name('render')} must be one of {', '.join(RENDER_MODES)}, got {config.render!r}")
    if config.regex is not None and config.css is None and config.xpath is None:
        raise SitewalkError(
            f"regex filters css/xpath values: give {surface.argument('css', '...')} "
            f"or {surface.argument('xpath', '...')} too"
        )
    if config.css is not None:
        _check_query("css", config.css)
    if config.xpath is not None:
        _check_query("xpath", config.xpath)
    for name in ("grep", "regex", "include", "exclude"):
        pattern = getattr(config, name)
        if pattern is not None:
            grep = name == "grep"
            literally = grep and config.fixed_strings
            fix = f" (use {surface.argument('fixed_strings', True)} to search for it literally)" if grep else ""
            patterns.compile(pattern, name=surface.name(name), literal=literally, fix=fix)


def _check_seed(seed: str, surface: Surface) -> None:
    """The seed must be an http(s) URL by the parser the walk resolves links with (WHATWG, ada)."""
    example = surface.argument("seed", EXAMPLE_SEED)
    valid = ada_url.check_url(seed)
    scheme = ada_url.parse_url(seed, attributes=("protocol",))["protocol"][:-1] if valid else _scheme(seed)
    if scheme.lower() not in ("http", "https"):
        raise SitewalkError(f"{surface.name('seed')} {seed!r} is not an http(s) URL (give e.g. {example})")
    if not valid:
        raise SitewalkError(f"{surface.name('seed')} {seed!r} is not a valid URL{_url_problem(seed)} (give e.g. {example})")


def _scheme(url: str) -> str:
    found = _SCHEME.match(url.strip())
    return found.group(1) if found else ""


def _url_problem(url: str) -> str:
    """What is wrong with a URL ada refuses, when the usual suspects tell."""
    try:
        netloc = urlsplit(url).netloc
        urlsplit(url).port  # noqa: B018 - reading it checks it
    except ValueError as exc:
        return f": {str(exc)[0].lower()}{str(exc)[1:]}"
    if any(character.isspace() for character in netloc):
        return ": its host has a space in it"
    return ""


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


def _check_save_dir(directory: str, surface: Surface) -> None:
    """The pages are saved as they arrive: a directory that cannot be made or written fails now."""
    path = Path(directory)
    existing = next((parent for parent in (path, *path.parents) if parent.exists()), Path("."))
    problem = None
    if not existing.is_dir():
        problem = f"is or is under a file ({str(existing)!r})"
    elif not os.access(existing, os.W_OK | os.X_OK):
        problem = f"cannot be written by this process ({str(existing)!r})"
    if problem is not None:
        raise SitewalkError(
            f"{surface.name('save_dir')} {directory!r} {problem}: give a directory to create or write to, "
            f"e.g. {surface.argument('save_dir', 'site')}"
        )


def check_run(config: WalkConfig, settings: BaseSettings, surface: Surface = CLI) -> None:
    """Check what a walk of ``config`` writes, so that it fails before it starts: the report, the
    feeds, the save directory. The walk's components check their own settings (the progress
    interval, the guard's networks, the browser ``render`` runs) as Scrapy builds them
    (``from_crawler``), before any request too."""
    _check_outputs(config, settings, surface)
    if config.save_dir is not None:
        _check_save_dir(config.save_dir, surface)


def _check_query(name: str, query: str) -> None:
    """Run the css or xpath query on an empty page, so a bad one fails before any request."""
    probe = Selector(text="<html></html>")
    try:
        if name == "css":
            probe.css(query)
        else:
            probe.xpath(query)
    except (SelectorError, ValueError) as exc:
        kind = "CSS selector" if name == "css" else "XPath expression"
        raise SitewalkError(f"{name} {query!r} is not a valid {kind}: {exc}") from None
