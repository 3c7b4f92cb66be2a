"""The walk's configuration: one typed, validated object behind the CLI, the config file and the API.

What each argument means and its bounds live here, with the object, and so do the checks of the
arguments together; how a value becomes its type, and the checks of one value, are
:mod:`sitewalk.configvalues`; the checks of what a walk will write, before it runs, are
:mod:`sitewalk.configchecks`.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sitewalk import patterns
from sitewalk.configvalues import (
    EXAMPLE_SEED,
    Argument,
    arg,
    check_query,
    check_seed,
    convert,
    headers,
    load_toml,
)
from sitewalk.content import MODES
from sitewalk.exceptions import SitewalkError
from sitewalk.guard.addresses import parse_networks
from sitewalk.hints import CLI, Surface

__all__ = ["SETTINGS", "Argument", "WalkConfig", "argument", "arguments", "check_config"]

# When a page is run in a browser (sitewalk.render): never, always, or when its HTML is an app shell.
RENDER_MODES = ("never", "always", "auto")

# Arguments scrapyd adds to every job; they are not walk settings.
_SCRAPYD_ARGS = frozenset({"_job", "_version", "setting"})
# The arguments only the grep consumer reads.
_GREP_OPTIONS = ("max_matches", "ignore_case", "fixed_strings", "context")
# The Scrapy settings a config file may hold besides the walk arguments, by the names of the sitewalk
# command's options and sitewalk-mcp's (--allow-networks, --robots/--no-robots, --user-agent):
# key -> (setting, type).
SETTINGS: dict[str, tuple[str, type]] = {
    "allow_networks": ("SITEWALK_GUARD_ALLOW_NETWORKS", str),
    "robots": ("ROBOTSTXT_OBEY", bool),
    "user_agent": ("USER_AGENT", str),
}


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
        kind = _TYPES[name] if _TYPES[name] in (int, float, bool) else str
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


@dataclass(frozen=True)
class WalkConfig:
    """Everything a walk needs to know; the defaults here are the only defaults.

    Values arrive as strings (``-a key=value``), as TOML values (``-a config=walk.toml``) or as
    Python values (the API); :meth:`from_mapping` turns each into the declared type or raises
    :class:`SitewalkError` naming the key, and the fix in the words of the ``surface`` the values
    came from (:mod:`sitewalk.hints`).
    """

    seed: str = field(metadata=arg("the http(s) URL to start from; the walk stays on the origin of its final URL (after redirects)"))
    max_depth: int = field(default=1, metadata=arg("link hops to follow from the start URL: 0 = that page only, 1 = it and the pages it links to", minimum=0))
    max_pages: int = field(
        default=20, metadata=arg("most pages to fetch (any HTTP status), the start URL included", minimum=1)
    )
    delay: float = field(
        default=0.25,
        metadata=arg("seconds between the starts of two requests; robots.txt Crawl-delay can lengthen it", minimum=0,
                      unit="seconds"),
    )
    concurrency: int = field(
        default=1,
        metadata=arg(
            "most page requests in flight at once, the walk's order kept; more than 1 only on sites you own or may load",
            minimum=1, maximum=64,
        ),
    )
    deadline: float = field(
        default=60.0, metadata=arg("seconds the whole walk may take (or 90s, 30m, 2h); a page still arriving then "
                                   "is cut off", above=0, unit="seconds")
    )
    max_bytes: int = field(
        default=20_000_000, metadata=arg("most bytes the site may send for the whole walk, headers included (or 500M, "
                                         "2G: powers of 1000)", minimum=1, unit="bytes")
    )
    report: str | None = field(default=None, metadata=arg("path of the report JSON"))
    html_report: str | None = field(
        default=None,
        metadata=arg("path of an HTML report of the walk, one file that loads nothing (broken links, redirects, "
                      "slowest pages), written when it ends"),
    )
    junit: str | None = field(
        default=None,
        metadata=arg("path of a JUnit XML file: one testsuite per fetched page, one testcase per link the walk "
                      "checked, broken links as failures"),
    )
    fail_on_broken: bool = field(
        default=False,
        metadata=arg("exit with status 3 when the report lists any broken link (4xx, 5xx or a failure), and with "
                      "status 4 (incomplete) when a budget (max_pages, max_bytes, deadline, the link checks) stopped "
                      "the check before it covered the site"),
    )
    allow_incomplete: bool = field(
        default=False,
        metadata=arg("with fail_on_broken: accept a check that a budget stopped early (a bounded sample): no exit "
                      "status 4, and the JUnit file's incomplete testcase is skipped, not failed"),
    )
    check_links: bool = field(
        default=False,
        metadata=arg("also check, once each, the links to other sites and the images, scripts and stylesheets pages "
                      "embed (HEAD, not followed), and the #fragments of links to pages fetched"),
    )
    grep: str | None = field(
        default=None,
        metadata=arg("regular expression (RE2 syntax) searched for in each page's visible text, line by line"),
    )
    max_matches: int = field(
        default=50, metadata=arg("most matching lines for the whole walk; it stops once this many are found", minimum=1)
    )
    ignore_case: bool = field(default=False, metadata=arg("match regardless of letter case"))
    fixed_strings: bool = field(default=False, metadata=arg("search for the pattern as plain text, not as a regular expression"))
    context: int = field(default=2, metadata=arg("lines of context before and after each match", minimum=0))
    css: str | None = field(default=None, metadata=arg("CSS selector whose values are extracted from each page"))
    xpath: str | None = field(default=None, metadata=arg("XPath expression whose values are extracted from each page"))
    regex: str | None = field(default=None, metadata=arg("regular expression (RE2 syntax) filtering the css/xpath values"))
    headers: dict[str, str] = field(
        default_factory=dict, metadata=arg("request headers, 'Name: value; Other: value'")
    )
    include: str | None = field(
        default=None,
        metadata=arg(
            "regular expression (RE2 syntax): only links whose path and query it matches are followed (the start URL always is)"
        ),
    )
    exclude: str | None = field(
        default=None, metadata=arg("regular expression (RE2 syntax): links whose path and query it matches are not followed")
    )
    no_parent: bool = field(
        default=False, metadata=arg("follow only links at or below the directory of the start URL (after redirects)")
    )
    content: str | None = field(
        default=None,
        metadata=arg("add each 2xx page's content to its index item: markdown, text or html (text pages as they are)"),
    )
    main_content: bool = field(
        default=False,
        metadata=arg("with content: only the page's main content, without navigation, header, footer and sidebars"),
    )
    links: bool = field(
        default=False,
        metadata=arg("add to each index item the page's followable links (resolved, in document order, any origin)"),
    )
    sitemap: bool = field(
        default=False,
        metadata=arg("also walk the URLs of the site's sitemaps (robots.txt's Sitemap: lines, else /sitemap.xml), at depth 1"),
    )
    save_dir: str | None = field(
        default=None,
        metadata=arg("save each 2xx page's content (markdown unless content says text or html) as a file in this "
                      "directory, its path mirroring the URL's, and the llms.txt files at the end"),
    )
    index_noindex: bool = field(
        default=False,
        metadata=arg("with save_dir: save (and list in llms.txt) the pages that ask not to be indexed too "
                      "(<meta name=robots content=noindex>, X-Robots-Tag: noindex)"),
    )

    # The walk's memory across walks (sitewalk.memory).
    state: str | None = field(
        default=None,
        metadata=arg("a directory where the walk remembers the site between walks: pages it knows are asked for "
                      "only if changed (ETag, Last-Modified), and each item says whether its page is new, changed "
                      "or unchanged"),
    )
    changed_only: bool = field(
        default=False,
        metadata=arg("with state: hand the consumers only new and changed pages (the walk still follows the "
                      "links of unchanged ones)"),
    )

    render: str = field(
        default="never",
        metadata=arg("run each page in a browser (Chromium) and read what its scripts made of it: never, always, "
                      "or auto (only pages whose HTML is an app shell)"),
    )

    # Not an argument: the Scrapy settings the config file gave (SETTINGS), which the spider applies
    # below the command line's (-s, --user-agent...) and the API's settings.
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def link_report(self) -> bool:
        """Whether an output lists or acts on the broken links (``report``, ``html_report``, ``junit``,
        ``fail_on_broken``, ``check_links``): the walk's last lines then say how many there are and where."""
        return (self.report is not None or self.html_report is not None or self.junit is not None
                or self.fail_on_broken or self.check_links)

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
        that the other keys override, and may give the Scrapy settings :data:`SETTINGS` names."""
        merged: dict[str, Any] = {}
        config = values.get("config")
        if isinstance(config, Mapping):
            merged.update(config)
        elif config is not None:
            merged.update(load_toml(str(config)))
        if "config" in merged:
            raise SitewalkError(f"config {_name(config)} names another config: give its values here instead")
        settings = _settings({key: merged.pop(key) for key in SETTINGS if key in merged}, config)
        for key, value in values.items():
            if key == "config" or key in _SCRAPYD_ARGS or value is None:
                continue
            if key == "headers" and isinstance(merged.get("headers"), dict):
                merged["headers"] = {**merged["headers"], **headers(value)}
            else:
                merged[key] = value
        return cls._validated(merged, surface, settings)

    @classmethod
    def _validated(cls, values: dict[str, Any], surface: Surface, settings: dict[str, Any]) -> WalkConfig:
        fields = _FIELDS
        unknown = sorted(set(values) - set(fields))
        if unknown and unknown[0] in SETTINGS:
            setting = SETTINGS[unknown[0]][0]
            raise SitewalkError(f"{unknown[0]} is a setting, not a walk argument: give "
                                f"{surface.setting(setting, values[unknown[0]])}, or {unknown[0]} in a config file")
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
                f"missing {surface.name('seed')}: give the URL to walk, e.g. {surface.argument('seed', EXAMPLE_SEED)}"
            )
        typed: dict[str, Any] = {}
        for name, value in values.items():
            typed[name] = convert(_TYPES[name], value, surface.name(name), fields[name].metadata["argument"].unit)
        config = cls(**typed, settings=settings)
        check_config(config, surface)
        return config


def check_config(config: WalkConfig, surface: Surface) -> None:
    """Each argument within its bounds, and the arguments consistent with each other: one line
    naming what is wrong and what to give instead."""
    check_seed(config.seed, surface)
    for spec in _FIELDS.values():
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
    if config.index_noindex and config.save_dir is None:
        raise SitewalkError(f"{surface.name('index_noindex')} chooses what save_dir keeps: give "
                            f"{surface.argument('save_dir', 'site')} too")
    if config.changed_only and config.state is None:
        raise SitewalkError(
            f"{surface.name('changed_only')} tells pages from the previous walk's: give {surface.argument('state', 'state')} too"
        )
    if config.render not in RENDER_MODES:
        raise SitewalkError(f"{surface.name('render')} must be one of {', '.join(RENDER_MODES)}, got {config.render!r}")
    if config.regex is not None and config.css is None and config.xpath is None:
        raise SitewalkError(
            f"regex filters css/xpath values: give {surface.argument('css', '...')} "
            f"or {surface.argument('xpath', '...')} too"
        )
    if config.css is not None:
        check_query("css", config.css)
    if config.xpath is not None:
        check_query("xpath", config.xpath)
    for name in ("grep", "regex", "include", "exclude"):
        pattern = getattr(config, name)
        if pattern is not None:
            grep = name == "grep"
            literally = grep and config.fixed_strings
            fix = f" (use {surface.argument('fixed_strings', True)} to search for it literally)" if grep else ""
            patterns.compile(pattern, name=surface.name(name), literal=literally, fix=fix)


def _settings(given: dict[str, Any], config: Any) -> dict[str, Any]:
    """The Scrapy settings of the keys of :data:`SETTINGS` that ``config`` gave, each checked."""
    settings = {}
    for key, value in given.items():
        setting, kind = SETTINGS[key]
        shown = f"{key} in config {_name(config)}"
        settings[setting] = convert(kind, value, shown)
        if key == "allow_networks":
            parse_networks(value, given_as=shown)
    return settings


def _name(config: Any) -> str:
    return "mapping" if isinstance(config, Mapping) else repr(str(config))


# The walk arguments: every field but settings.
_FIELDS = {spec.name: spec for spec in dataclasses.fields(WalkConfig) if "argument" in spec.metadata}
# Each field's type as a type (the annotations are strings here).
_TYPES = typing.get_type_hints(WalkConfig)
