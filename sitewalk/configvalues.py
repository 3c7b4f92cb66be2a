"""A walk argument's value: its bounds, its type from whatever gave it (a command line, a TOML
file, Python), and the checks of a value by the parser that will read it (the seed's URL, a css or
xpath query)."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import ada_url
from cssselect import SelectorError
from parsel import Selector

from sitewalk.exceptions import SitewalkError
from sitewalk.hints import Surface

__all__ = ["EXAMPLE_SEED", "Argument", "arg", "check_query", "check_seed", "convert", "headers", "load_toml", "parse_bool"]

EXAMPLE_SEED = "https://docs.example.com/"
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")

# A size or a duration with its unit: 500M, 2G, 1.5GB, 90s, 30m, 2h (a plain number: bytes, seconds).
_QUANTITY = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]*)\s*")
_BYTE_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
               "kib": 2**10, "mib": 2**20, "gib": 2**30}
_SECOND_UNITS = {"": 1, "s": 1, "m": 60, "min": 60, "h": 3600}
_UNITS = {"bytes": (_BYTE_UNITS, "500M, 2G"), "seconds": (_SECOND_UNITS, "90s, 30m, 2h")}
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
# RFC 9110 token characters; CR, LF and NUL can never be part of a field value.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE_FORBIDDEN = re.compile(r"[\r\n\0]")


def parse_bool(text: str) -> bool | None:
    """``True``/``False`` for the words a command line or environment uses for them, else None."""
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    return None


def convert(declared: Any, value: Any, shown: str, unit: str = "") -> Any:
    """``value`` as the type ``declared`` (``bool``, ``int``, ``float``, ``str``, ``str | None`` or
    ``dict[str, str]``: the headers); errors call it ``shown``, and a number its ``unit``."""
    if declared == dict[str, str]:
        return headers(value)
    if declared is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and (word := parse_bool(value)) is not None:
            return word
        raise SitewalkError(f"{shown} must be true or false, got {value!r}")
    if isinstance(value, str) and unit in _UNITS and _QUANTITY.fullmatch(value):
        value = _quantity(value, shown, unit, whole=declared is int)
    if declared is int:
        whole = f"a whole number of {unit}, with a unit or not (e.g. {_UNITS[unit][1]})" if unit in _UNITS else (
            "a whole number")
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise SitewalkError(f"{shown} must be {whole}, got {value!r}")
        try:
            return int(value)
        except ValueError:
            raise SitewalkError(f"{shown} must be {whole}, got {value!r}") from None
    if declared is float:
        number_of = f"a number of {unit}" if unit else "a number"
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise SitewalkError(f"{shown} must be {number_of}, got {value!r}")
        try:
            number = float(value)
        except ValueError:
            raise SitewalkError(f"{shown} must be {number_of}, got {value!r}") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise SitewalkError(f"{shown} must be a finite number, got {value!r}")
        return number
    if declared in (str, str | None):
        if not isinstance(value, str):
            raise SitewalkError(f"{shown} must be a string, got {value!r}")
        return value
    raise TypeError(f"no conversion to {declared!r} for {shown}")


def _quantity(text: str, shown: str, unit: str, *, whole: bool) -> int | float:
    """``text`` (``500M``, ``30m``, ``90``) as a number of ``unit`` (bytes or seconds)."""
    factors, examples = _UNITS[unit]
    found = _QUANTITY.fullmatch(text)
    assert found is not None
    number, suffix = found.groups()
    factor = factors.get(suffix.lower() if unit == "bytes" else suffix)
    if factor is None:
        raise SitewalkError(f"{shown} must be a number of {unit}, with a unit or not (e.g. {examples}), got {text!r}")
    amount = float(number) * factor
    if whole:
        if amount != int(amount):
            raise SitewalkError(f"{shown} must be a whole number of {unit}, got {text!r}")
        return int(amount)
    return amount


def headers(value: Any) -> dict[str, str]:
    """Request headers from ``"Name: value; Other: value"`` or a table of strings, checked."""
    if isinstance(value, str):
        # -a headers="Name: value; Other: value"
        pairs = [item.split(":", 1) for item in value.split(";") if item.strip()]
        if any(len(pair) != 2 for pair in pairs):
            raise SitewalkError(f"headers must look like 'Name: value; Other: value', got {value!r}")
        given = {name.strip(): text.strip() for name, text in pairs}
    elif isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        given = dict(value)
    else:
        raise SitewalkError(f"headers must be a table of name = \"value\" strings, got {value!r}")
    # Caught here, a bad header is bad input; at request time it would look like a failed seed.
    for name, text in given.items():
        if not _HEADER_NAME.fullmatch(name):
            raise SitewalkError(f"header name {name!r} is not a valid HTTP header name")
        if _HEADER_VALUE_FORBIDDEN.search(text):
            raise SitewalkError(f"header {name!r} has a line break or NUL in its value {text!r}")
    return given


def load_toml(path: str) -> dict[str, Any]:
    """The table a config file holds; one line naming the file and what is wrong with it otherwise."""
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


@dataclass(frozen=True)
class Argument:
    """What a walk argument means and the bounds its value must keep (``above``: exclusive)."""

    help: str
    minimum: float | None = None
    above: float | None = None
    maximum: float | None = None
    # What a number counts ("seconds"), for the messages.
    unit: str = ""

    def check(self, name: str, value: Any) -> None:
        unit = f" {self.unit}" if self.unit else ""
        if self.minimum is not None and value < self.minimum:
            raise SitewalkError(f"{name} must be >= {self.minimum:g}{unit}, got {value:g}")
        if self.maximum is not None and value > self.maximum:
            raise SitewalkError(f"{name} must be <= {self.maximum:g}{unit}, got {value:g}")
        if self.above is not None and value <= self.above:
            raise SitewalkError(f"{name} must be > {self.above:g}{unit}, got {value:g}")


def arg(
    help: str, *, minimum: float | None = None, above: float | None = None, maximum: float | None = None,  # noqa: A002
    unit: str = "",
) -> dict[str, Argument]:
    return {"argument": Argument(help, minimum, above, maximum, unit)}


def check_seed(seed: str, surface: Surface) -> None:
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


def check_query(name: str, query: str) -> None:
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
