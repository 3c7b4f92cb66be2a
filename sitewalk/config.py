"""The walk's configuration: one typed, validated object behind the CLI, the config file and the API."""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import ada_url
from cssselect import SelectorError
from parsel import Selector

from sitewalk import patterns
from sitewalk.content import MODES
from sitewalk.exceptions import SitewalkError
from sitewalk.guard.addresses import parse_networks
from sitewalk.hints import CLI, Surface
from sitewalk.jobs import local_feeds

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["RENDER_MODES", "Argument", "WalkConfig", "argument", "arguments", "check_run", "parse_bool"]

# Arguments scrapyd adds to every job; they are not walk settings.
_SCRAPYD_ARGS = frozenset({"_job", "_version", "setting"})
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
# RFC 9110 token characters; CR, LF and NUL can never be part of a field value.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE_FORBIDDEN = re.compile(r"[\r\n\0]")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
# The arguments only the grep consumer reads.
_GREP_OPTIONS = ("max_matches", "ignore_case", "fixed_strings", "context")
# When a page is run in a browser (sitewalk.render): never, always, or when its HTML is an app shell.
RENDER_MODES = ("never", "always", "auto")


@dataclass(frozen=True)
class Argument:
    """What a walk argument means and the bounds its value must keep (``above``: exclusive)."""

    help: str
    minimum: float | None = None
    above: float | None = None
    maximum: float | None = None

    def check(self, name: str, value: Any) -> None:
        if self.minimum is not None and value < self.minimum:
            raise SitewalkError(f"{name} must be >= {self.minimum:g}, got {value:g}")
        if self.maximum is not None and value > self.maximum:
            raise SitewalkError(f"{name} must be <= {self.maximum:g}, got {value:g}")
        if self.above is not None and value <= self.above:
            raise SitewalkError(f"{name} must be > {self.above:g} seconds, got {value:g}")


def _arg(
    help: str, *, minimum: float | None = None, above: float | None = None, maximum: float | None = None  # noqa: A002
) -> dict[str, Argument]:
    return {"argument": Argument(help, minimum, above, maximum)}


# The argument that is no field: where the others can come from.
_CONFIG = Argument("a TOML file with any of these arguments (and a [headers] table); arguments given with it override the file's")


def argument(name: str) -> Argument:
    """The help and bounds of the walk argument ``name`` (a field of :class:`WalkConfig`)."""
    spec: Argument = _FIELDS[name].metadata["argument"]
    return spec


def arguments() -> list[tuple[str, type, str, Argument]]:
    """Every walk argument in table order, ``config`` last: its name, the type a command line gives
    it, its default as a user would write it, and its help and bounds (for ``--help`` and ``-h``)."""
    table = []
    for name, spec in _FIELDS.items():
        kind = {"int": int, "float": float, "bool": bool}.get(str(spec.type), str)
        table.append((name, kind, _default_text(spec, kind), spec.metadata["argument"]))
    table.append(("config", str, "none", _CONFIG))
    return table


def _default_text(spec: dataclasses.Field[Any], kind: type) -> str:
    if spec.default is dataclasses.MISSING:
        return "required" if spec.default_factory is dataclasses.MISSING else "none"
    if spec.default is None:
        return "none"
    if kind is bool:
        return "true" if spec.default else "false"
    return f"{spec.default:g}" if kind is float else str(spec.default)


def parse_bool(text: str) -> bool | None:
    """``True``/``False`` for the words a command line or environment uses for them, else None."""
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    return None


@dataclass(frozen=True)
class WalkConfig:
    """Everything a walk needs to know; the defaults here are the only defaults.

    Values arrive as strings (``-a key=value``), as TOML values (``-a config=walk.toml``) or as
    Python values (the API); :meth:`from_mapping` turns each into the declared type or raises
    :class:`SitewalkError` naming the key, and the fix in the words of the ``surface`` the values
    came from (:mod:`sitewalk.hints`).
    """

    seed: str = field(metadata=_arg("the http(s) URL to start from; the walk stays on the origin of its final URL (after redirects)"))
    max_depth: int = field(default=1, metadata=_arg("link hops to follow from the start URL: 0 = that page only, 1 = it and the pages it links to", minimum=0))
    max_pages: int = field(
        default=20, metadata=_arg("most pages to fetch (any HTTP status), the start URL included", minimum=1)
    )
    delay: float = field(
        default=0.25,
        metadata=_arg("seconds between the starts of two requests; robots.txt Crawl-delay can lengthen it", minimum=0),
    )
    concurrency: int = field(
        default=1,
        metadata=_arg(
            "most page requests in flight at once, the walk's order kept; more than 1 only on sites you own or may load",
            minimum=1, maximum=64,
        ),
    )
    deadline: float = field(
        default=60.0, metadata=_arg("seconds the whole walk may take; a page still arriving then is cut off", above=0)
    )
    max_bytes: int = field(
        default=20_000_000, metadata=_arg("most body bytes (after decompression) to download for the whole walk", minimum=1)
    )
    report: str | None = field(default=None, metadata=_arg("path of the report JSON"))
    html_report: str | None = field(
        default=None,
        metadata=_arg("path of an HTML report of the walk, one file that loads nothing (broken links, redirects, "
                      "slowest pages), written when it ends"),
    )
    junit: str | None = field(
        default=None,
        metadata=_arg("path of a JUnit XML file: one testsuite per fetched page, one testcase per link the walk "
                      "checked, broken links as failures"),
    )
    fail_on_broken: bool = field(
        default=False,
        metadata=_arg("exit with status 3 when the report lists any broken link (4xx, 5xx or a failure)"),
    )
    grep: str | None = field(
        default=None,
        metadata=_arg("regular expression (RE2 syntax) searched for in each page's visible text, line by line"),
    )
    max_matches: int = field(
        default=50, metadata=_arg("most matching lines for the whole walk; it stops once this many are found", minimum=1)
    )
    ignore_case: bool = field(default=False, metadata=_arg("match regardless of letter case"))
    fixed_strings: bool = field(default=False, metadata=_arg("search for the pattern as plain text, not as a regular expression"))
    context: int = field(default=2, metadata=_arg("lines of context before and after each match", minimum=0))
    css: str | None = field(default=None, metadata=_arg("CSS selector whose values are extracted from each page"))
    xpath: str | None = field(default=None, metadata=_arg("XPath expression whose values are extracted from each page"))
    regex: str | None = field(default=None, metadata=_arg("regular expression (RE2 syntax) filtering the css/xpath values"))
    headers: dict[str, str] = field(
        default_factory=dict, metadata=_arg("request headers, 'Name: value; Other: value'")
    )
    include: str | None = field(
        default=None,
        metadata=_arg(
            "regular expression (RE2 syntax): only links whose path and query it matches are followed (the start URL always is)"
        ),
    )
    exclude: str | None = field(
        default=None, metadata=_arg("regular expression (RE2 syntax): links whose path and query it matches are not followed")
    )
    no_parent: bool = field(
        default=False, metadata=_arg("follow only links at or below the directory of the start URL (after redirects)")
    )
    content: str | None = field(
        default=None,
        metadata=_arg("add each 2xx page's content to its index item: markdown, text or html (text pages as they are)"),
    )
    main_content: bool = field(
        default=False,
        metadata=_arg("with content: only the page's main content, without navigation, header, footer and sidebars"),
    )
    links: bool = field(
        default=False,
        metadata=_arg("add to each index item the page's followable links (resolved, in document order, any origin)"),
    )
    sitemap: bool = field(
        default=False,
        metadata=_arg("also walk the URLs of the site's sitemaps (robots.txt's Sitemap: lines, else /sitemap.xml), at depth 1"),
    )
    save_dir: str | None = field(
        default=None,
        metadata=_arg("save each 2xx page's content (markdown unless content says text or html) as a file in this "
                      "directory, its path mirroring the URL's, and the llms.txt files at the end"),
    )

    render: str = field(
        default="never",
        metadata=_arg("run each page in a browser (Chromium) and read what its scripts made of it: never, always, "
                      "or auto (only pages whose HTML is an app shell)"),
    )

    @property
    def link_report(self) -> bool:
        """Whether an output lists every page's links (``html_report``, ``junit``, ``fail_on_broken``):
        the walk then reads the links of the pages at ``max_depth`` too."""
        return self.html_report is not None or self.junit is not None or self.fail_on_broken

    @property
    def consumer(self) -> str:
        """Which consumer receives the pages: ``index``, ``grep`` or ``extract``."""
        if self.grep is not None:
            return "grep"
        if self.css is not None or self.xpath is not None:
            return "extract"
        return "index"

    @property
    def read_content(self) -> str | None:
        """The content the walk reads of each page: ``content``'s, or Markdown for ``save_dir``."""
        return self.content or ("markdown" if self.save_dir is not None else None)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], surface: Surface = CLI) -> WalkConfig:
        """Build from ``values``; a ``config`` key (a TOML file path, or a mapping) gives values
        that the other keys override."""
        merged: dict[str, Any] = {}
        config = values.get("config")
        if isinstance(config, Mapping):
            merged.update(config)
        elif config is not None:
            merged.update(_load_toml(str(config)))
        if "config" in merged:
            raise SitewalkError(f"config {_name(config)} names another config: give its values here instead")
        for key, value in values.items():
            if key == "config" or key in _SCRAPYD_ARGS or value is None:
                continue
            if key == "headers" and isinstance(merged.get("headers"), dict):
                merged["headers"] = {**merged["headers"], **_headers(value)}
            else:
                merged[key] = value
        return cls._validated(merged, surface)

    @classmethod
    def _validated(cls, values: dict[str, Any], surface: Surface) -> WalkConfig:
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - set(fields))
        if unknown:
            close = difflib.get_close_matches(unknown[0], [*fields, "config"], n=1)
            known = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(sorted(fields))}, config"
            raise SitewalkError(f"unknown argument {unknown[0]!r} ({known})")
        if values.get("grep") is None:
            # Given without grep they would change nothing: say so rather than ignore them.
            for name in _GREP_OPTIONS:
                if name in values:
                    raise SitewalkError(
                        f"{surface.name(name)} is an option of grep: give a grep pattern too, or leave {surface.name(name)} out"
                    )
        if "seed" not in values:
            raise SitewalkError(
                f"missing {surface.name('seed')}: give the URL to walk, e.g. {surface.argument('seed', _EXAMPLE_SEED)}"
            )
        typed: dict[str, Any] = {}
        for name, value in values.items():
            typed[name] = _convert(name, fields[name].type, value, surface.name(name))
        config = cls(**typed)
        config._check(surface)
        return config

    def _check(self, surface: Surface) -> None:
        _check_seed(self.seed, surface)
        for spec in dataclasses.fields(self):
            bounds: Argument = spec.metadata["argument"]
            bounds.check(surface.name(spec.name), getattr(self, spec.name))
        if self.grep == "":
            raise SitewalkError("grep is empty: give the text or regular expression to search for")
        if self.grep is not None and (self.css is not None or self.xpath is not None):
            raise SitewalkError("grep and css/xpath are different consumers: give one of them")
        if self.css is not None and self.xpath is not None:
            raise SitewalkError("give css or xpath, not both")
        for name in ("links", "content", "main_content", "save_dir"):
            if getattr(self, name) and self.consumer != "index":
                raise SitewalkError(f"{name} is a field of index items: give it without {self.consumer}'s arguments")
        if self.content is not None and self.content not in MODES:
            raise SitewalkError(f"content must be one of {', '.join(MODES)}, got {self.content!r}")
        if self.render not in RENDER_MODES:
            raise SitewalkError(f"{surface.name('render')} must be one of {', '.join(RENDER_MODES)}, got {self.render!r}")
        if self.main_content and self.content is None and self.save_dir is None:
            raise SitewalkError("main_content chooses what content holds: give content=markdown (or text, html) too")
        if self.regex is not None and self.css is None and self.xpath is None:
            raise SitewalkError(
                f"regex filters css/xpath values: give {surface.argument('css', '...')} "
                f"or {surface.argument('xpath', '...')} too"
            )
        if self.css is not None:
            _check_query("css", self.css)
        if self.xpath is not None:
            _check_query("xpath", self.xpath)
        for name in ("grep", "regex", "include", "exclude"):
            pattern = getattr(self, name)
            if pattern is not None:
                grep = name == "grep"
                literally = grep and self.fixed_strings
                fix = f" (use {surface.argument('fixed_strings', True)} to search for it literally)" if grep else ""
                patterns.compile(pattern, name=surface.name(name), literal=literally, fix=fix)


def _check_seed(seed: str, surface: Surface) -> None:
    """The seed must be an http(s) URL by the parser the walk resolves links with (WHATWG, ada)."""
    example = surface.argument("seed", _EXAMPLE_SEED)
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
    """Check what a walk of ``config`` reads only once it runs, so that it fails before it starts:
    the paths it writes to (the report, the feeds, the save directory), the browser ``render``
    runs and the sitewalk settings."""
    _check_outputs(config, settings, surface)
    if config.save_dir is not None:
        _check_save_dir(config.save_dir, surface)
    if config.render != "never":
        from sitewalk.render.browser import chromium_path

        chromium_path(settings, surface)
    name = "SITEWALK_GUARD_ALLOW_NETWORKS"
    networks = settings.get(name)
    parse_networks(networks, given_as=surface.setting(name, networks))
    name = "SITEWALK_PROGRESS_INTERVAL"
    interval = settings.get(name)
    try:
        float(interval)
    except (TypeError, ValueError):
        raise SitewalkError(
            f"{surface.setting(name, interval)} is not a number of seconds (give e.g. {surface.setting(name, 10)}; "
            "0 = a progress line at each new depth only)"
        ) from None


_EXAMPLE_SEED = "https://docs.example.com/"


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


def _convert(name: str, declared: Any, value: Any, shown: str) -> Any:
    """``value`` as the type ``declared`` for argument ``name``; errors call it ``shown``."""
    kind = str(declared)
    if name == "headers":
        return _headers(value)
    if kind.startswith("str"):
        if not isinstance(value, str):
            raise SitewalkError(f"{shown} must be a string, got {value!r}")
        return value
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and (word := parse_bool(value)) is not None:
            return word
        raise SitewalkError(f"{shown} must be true or false, got {value!r}")
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise SitewalkError(f"{shown} must be a whole number, got {value!r}")
        try:
            return int(value)
        except ValueError:
            raise SitewalkError(f"{shown} must be a whole number, got {value!r}") from None
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise SitewalkError(f"{shown} must be a number of seconds, got {value!r}")
        try:
            number = float(value)
        except ValueError:
            raise SitewalkError(f"{shown} must be a number of seconds, got {value!r}") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise SitewalkError(f"{shown} must be a finite number, got {value!r}")
        return number
    raise AssertionError(f"unhandled field type {kind} for {name}")


def _headers(value: Any) -> dict[str, str]:
    if isinstance(value, str):
        # -a headers="Name: value; Other: value"
        pairs = [item.split(":", 1) for item in value.split(";") if item.strip()]
        if any(len(pair) != 2 for pair in pairs):
            raise SitewalkError(f"headers must look like 'Name: value; Other: value', got {value!r}")
        headers = {name.strip(): text.strip() for name, text in pairs}
    elif isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        headers = dict(value)
    else:
        raise SitewalkError(f"headers must be a table of name = \"value\" strings, got {value!r}")
    # Caught here, a bad header is bad input; at request time it would look like a failed seed.
    for name, text in headers.items():
        if not _HEADER_NAME.fullmatch(name):
            raise SitewalkError(f"header name {name!r} is not a valid HTTP header name")
        if _HEADER_VALUE_FORBIDDEN.search(text):
            raise SitewalkError(f"header {name!r} has a line break or NUL in its value {text!r}")
    return headers


def _load_toml(path: str) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SitewalkError(f"config {path!r} cannot be read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise SitewalkError(f"config {path!r} is not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SitewalkError(f"config {path!r} is not valid TOML: {exc}") from None


def _name(config: Any) -> str:
    return "mapping" if isinstance(config, Mapping) else repr(str(config))


_FIELDS = {spec.name: spec for spec in dataclasses.fields(WalkConfig)}
