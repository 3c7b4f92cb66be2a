"""A walk argument's value as its type, from whatever gave it: a command line, a TOML file, Python."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sitewalk.exceptions import SitewalkError

__all__ = ["convert", "headers", "load_toml", "parse_bool"]

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
    if declared is int:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise SitewalkError(f"{shown} must be a whole number, got {value!r}")
        try:
            return int(value)
        except ValueError:
            raise SitewalkError(f"{shown} must be a whole number, got {value!r}") from None
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
