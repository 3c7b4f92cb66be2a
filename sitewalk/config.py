"""The walk's configuration: one typed, validated object behind the CLI, the config file and the API."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cssselect import SelectorError
from parsel import Selector

from sitewalk.exceptions import SitewalkError

__all__ = ["WalkConfig"]

# Arguments scrapyd adds to every job; they are not walk settings.
_SCRAPYD_ARGS = frozenset({"_job", "_version", "setting"})
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
# RFC 9110 token characters; CR, LF and NUL can never be part of a field value.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE_FORBIDDEN = re.compile(r"[\r\n\0]")


@dataclass(frozen=True)
class WalkConfig:
    """Everything a walk needs to know; the defaults here are the only defaults.

    Values arrive as strings (``-a key=value``), as TOML values (``-a config=walk.toml``) or as
    Python values (the API); :meth:`from_mapping` turns each into the declared type or raises
    :class:`SitewalkError` naming the key.
    """

    seed: str
    max_depth: int = 1
    max_pages: int = 20
    delay: float = 0.25
    deadline: float = 60.0
    max_bytes: int = 20_000_000
    report: str | None = None
    grep: str | None = None
    max_matches: int = 50
    ignore_case: bool = False
    fixed_strings: bool = False
    context: int = 2
    css: str | None = None
    xpath: str | None = None
    regex: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def consumer(self) -> str:
        """Which consumer receives the pages: ``index``, ``grep`` or ``extract``."""
        if self.grep is not None:
            return "grep"
        if self.css is not None or self.xpath is not None:
            return "extract"
        return "index"

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> WalkConfig:
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
        return cls._validated(merged)

    @classmethod
    def _validated(cls, values: dict[str, Any]) -> WalkConfig:
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - set(fields))
        if unknown:
            raise SitewalkError(
                f"unknown argument {unknown[0]!r} (known: {', '.join(sorted(fields))}, config)"
            )
        if "seed" not in values:
            raise SitewalkError(
                "missing seed: give the URL to walk, e.g. -a seed=https://docs.example.com/"
            )
        typed: dict[str, Any] = {}
        for name, value in values.items():
            typed[name] = _convert(name, fields[name].type, value)
        config = cls(**typed)
        config._check()
        return config

    def _check(self) -> None:
        parts = urlsplit(self.seed)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SitewalkError(
                f"seed {self.seed!r} is not an http(s) URL (give e.g. -a seed=https://docs.example.com/)"
            )
        _at_least("max_depth", self.max_depth, 0)
        _at_least("max_pages", self.max_pages, 1)
        _at_least("delay", self.delay, 0)
        _at_least("max_bytes", self.max_bytes, 1)
        _at_least("max_matches", self.max_matches, 1)
        _at_least("context", self.context, 0)
        if self.deadline <= 0:
            raise SitewalkError(f"deadline must be > 0 seconds, got {self.deadline:g}")
        if self.grep is not None and (self.css is not None or self.xpath is not None):
            raise SitewalkError("grep and css/xpath are different consumers: give one of them")
        if self.css is not None and self.xpath is not None:
            raise SitewalkError("give css or xpath, not both")
        if self.regex is not None and self.css is None and self.xpath is None:
            raise SitewalkError("regex filters css/xpath values: give -a css=... or -a xpath=... too")
        if self.css is not None:
            _check_query("css", self.css)
        if self.xpath is not None:
            _check_query("xpath", self.xpath)
        for name in ("grep", "regex"):
            pattern = getattr(self, name)
            if pattern is not None and not (name == "grep" and self.fixed_strings):
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise SitewalkError(
                        f"{name} {pattern!r} is not a valid regular expression: {exc}"
                        + (" (use -a fixed_strings=true to search for it literally)" if name == "grep" else "")
                    ) from None


def _at_least(name: str, value: float, minimum: float) -> None:
    if value < minimum:
        raise SitewalkError(f"{name} must be >= {minimum}, got {value:g}")


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


def _convert(name: str, declared: Any, value: Any) -> Any:
    kind = str(declared)
    if name == "headers":
        return _headers(value)
    if kind.startswith("str"):
        if not isinstance(value, str):
            raise SitewalkError(f"{name} must be a string, got {value!r}")
        return value
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
            return value.lower() in _TRUE
        raise SitewalkError(f"{name} must be true or false, got {value!r}")
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise SitewalkError(f"{name} must be a whole number, got {value!r}")
        try:
            return int(value)
        except ValueError:
            raise SitewalkError(f"{name} must be a whole number, got {value!r}") from None
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise SitewalkError(f"{name} must be a number of seconds, got {value!r}")
        try:
            number = float(value)
        except ValueError:
            raise SitewalkError(f"{name} must be a number of seconds, got {value!r}") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise SitewalkError(f"{name} must be a finite number, got {value!r}")
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
