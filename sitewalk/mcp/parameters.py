"""The tools' parameters, each declared once: its type, its field with this server's bounds, the tools that take it."""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BeforeValidator, Field

from sitewalk.config import WalkConfig, argument
from sitewalk.configvalues import convert
from sitewalk.exceptions import SitewalkError
from sitewalk.mcp.options import ServerOptions
from sitewalk.patterns import MAX_LENGTH

__all__ = ["CRAWL", "FETCH", "GREP", "PARAMETERS", "Parameter", "since_arguments", "tool", "walk_arguments"]

FETCH, CRAWL, GREP = "web_fetch", "web_crawl", "web_grep"
_WALKS = (CRAWL, GREP)
_ALL = (FETCH, CRAWL, GREP)
# Lines of context a web_grep call may ask for around each match.
_MAX_CONTEXT = 10
# The most characters a web_fetch call returns unless it asks for more (up to the output cap).
_FETCH_LENGTH = 10_000
_TYPES = typing.get_type_hints(WalkConfig)


@dataclass(frozen=True)
class Parameter:
    """A tool parameter: its type, its pydantic field (default, bounds, description) on a server
    with given options, the tools that take it, and the walk argument it gives (None: the tool
    reads it itself)."""

    name: str
    type: Any
    field: Callable[[ServerOptions], Any]
    tools: tuple[str, ...]
    walk: str | None = None
    # Whether a server with given options offers it (since: only with a state directory).
    offered: Callable[[ServerOptions], bool] = lambda _: True
    # Its type on a server with given options, where that depends on them (a number with units).
    typed: Callable[[ServerOptions], Any] | None = None

    def annotation(self, options: ServerOptions) -> Any:
        return self.type if self.typed is None else self.typed(options)


def _with_unit(declared: Any, unit: str, bounds: dict[str, Any]) -> Any:
    """``declared`` (int or float) within ``bounds``, which a call may also give as a string with
    its unit (``500M``, ``30m``), read as the walk reads it (:func:`sitewalk.configvalues.convert`);
    the schema shows both, the bounds on the number."""

    def read(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return convert(declared, value, "value", unit)
        except SitewalkError as exc:
            # A ValueError is pydantic's "value_error", which the tool error gives as it is (sitewalk.mcp.errors).
            raise ValueError(str(exc).removeprefix("value ")) from None

    shown = typing.Annotated[declared, Field(**bounds)] | str
    return typing.Annotated[declared, BeforeValidator(read, json_schema_input_type=shown)]


def _walk(name: str, tools: tuple[str, ...], description: str | None = None, maximum: int | None = None,
          default: Any = None) -> Parameter:
    """The walk argument ``name`` as a parameter of ``tools``: its type, default, bounds and help
    are the walk's own (:func:`sitewalk.config.argument`) unless given here; its maximum is this
    server's option that caps it, if one does. A size or a duration takes units, as the walk's."""
    spec = argument(name)
    text = description or spec.help[0].upper() + spec.help[1:] + "."
    # A pattern's length is bounded like the walk bounds it (sitewalk.patterns).
    length = MAX_LENGTH if _TYPES[name] == str | None else None

    def bounds(options: ServerOptions) -> dict[str, Any]:
        limit = options.limit(name)
        return {"ge": spec.minimum, "gt": spec.above, "le": limit[0] if limit is not None else maximum}

    def field(options: ServerOptions) -> Any:
        value = getattr(WalkConfig, name) if default is None else default
        most = bounds(options)["le"]
        if most is not None:
            value = min(value, most)
        return Field(default=value, description=text, max_length=length, **bounds(options))

    def typed(options: ServerOptions) -> Any:
        return _with_unit(_TYPES[name], spec.unit, bounds(options))

    units = spec.unit in ("bytes", "seconds")
    return Parameter(name, _TYPES[name], field, tools, walk=name, typed=typed if units else None)


# Every parameter of every tool, in the order the schemas list them, each described in the
# words a model needs. A walk argument the tools pass on is one _walk() line here.
PARAMETERS = (
    Parameter("url", str, lambda _: Field(description="The http(s) URL of the page."), (FETCH,), walk="seed"),
    Parameter("url", str | None, lambda _: Field(
        default=None, description="The http(s) URL to start from; required without cursor.",
    ), _WALKS, walk="seed"),
    Parameter("pattern", str | None, lambda _: Field(
        default=None, min_length=1, max_length=MAX_LENGTH,
        description="RE2 regex (no look-around or backreferences), or plain text with fixed_strings, matched per "
        "line of visible text; required without cursor.",
    ), (GREP,), walk="grep"),
    Parameter("cursor", str | None, lambda _: Field(
        default=None, description="From a cut output's notice, for its next part.",
    ), _WALKS),
    Parameter("start_index", int, lambda _: Field(
        default=0, ge=0, description="Character of the content to start at.",
    ), (FETCH,)),
    Parameter("max_length", int, lambda options: Field(
        default=min(_FETCH_LENGTH, options.max_output_chars), ge=1, le=options.max_output_chars,
        description="Most characters of content to return.",
    ), (FETCH,)),
    _walk("main_content", (FETCH,), "Main content only: no navigation, header, footer, sidebars.",
          default=True),
    _walk("max_matches", (GREP,), "Stop after this many matching lines."),
    _walk("ignore_case", (GREP,), "Match regardless of case."),
    _walk("context", (GREP,), "Lines shown before and after each match.", maximum=_MAX_CONTEXT),
    _walk("fixed_strings", (GREP,), "pattern is plain text, not a regex."),
    _walk("max_depth", _WALKS, "Link hops from url: 0 = url only."),
    _walk("max_pages", _WALKS, "Most pages to fetch, url included."),
    _walk("deadline", _WALKS, "Seconds the walk may take, or 90s, 5m."),
    _walk("max_bytes", _WALKS, "Most bytes the site may send, or 20M."),
    _walk("concurrency", _WALKS, "Requests in flight; >1 only on sites you own."),
    _walk("include", _WALKS, "Follow only links whose path+query match this RE2 regex."),
    _walk("exclude", _WALKS, "Skip links whose path+query match this RE2 regex."),
    _walk("no_parent", _WALKS, "Follow only links under url's directory."),
    _walk("sitemap", _WALKS, "Also walk the site's sitemap URLs."),
    Parameter("since", bool, lambda _: Field(
        default=False, description="List only pages new or changed since the last call with since on url's "
        "origin, and those removed.",
    ), _WALKS, offered=lambda options: options.state_dir is not None),
    Parameter("render", str, lambda options: Field(
        default="never", pattern="^(never|always|auto)$" if options.render else "^never$",
        description="Run in a browser; auto: app shells only." if options.render
        else "never: this server runs no browser.",
    ), _ALL, walk="render"),
)


def _of(tool: str) -> list[Parameter]:
    return [parameter for parameter in PARAMETERS if tool in parameter.tools]


def walk_arguments(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The walk arguments that a call of ``tool`` with ``arguments`` gives, by the walk's names."""
    return {parameter.walk: arguments[parameter.name] for parameter in _of(tool) if parameter.walk is not None}


def since_arguments(arguments: dict[str, Any], options: ServerOptions) -> dict[str, Any]:
    """The walk arguments of a call with ``since``: the state this server keeps for the origin of
    ``url``, and only the pages that changed handed on; none without ``since``."""
    if not arguments.get("since"):
        return {}
    # Offered only with a state directory: a call without one has no since (an unknown parameter).
    assert options.state_dir is not None
    return {"state": str(Path(options.state_dir) / _origin_key(arguments["url"])), "changed_only": True}


def _origin_key(url: str) -> str:
    """A directory name for the origin of ``url``: only letters, digits, dots, dashes and
    underscores, so that no URL names a path outside the state directory."""
    try:
        parts = urlsplit(url)
        text = f"{parts.scheme}_{parts.hostname or ''}_{parts.port or ''}"
    except ValueError:
        text = "invalid"  # the walk refuses the URL itself, naming the parameter
    return re.sub(r"[^A-Za-z0-9.-]", "_", text)[:200].lstrip(".") or "_"


Run = Callable[[Context, dict[str, Any]], Awaitable[CallToolResult]]


def tool(name: str, options: ServerOptions, run: Run, returns: type,
         description: str) -> Callable[..., Awaitable[CallToolResult]]:
    """``run(ctx, arguments)`` as the SDK reads a tool: a signature of the parameters ``name``
    takes, each with this server's bounds (a call is validated against the bounds the model
    reads), ``returns`` as the model of its structured result, ``description`` as its docstring."""

    async def call(ctx: Context, **arguments: Any) -> CallToolResult:
        return await run(ctx, arguments)

    parameters = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
    parameters += [inspect.Parameter(parameter.name, inspect.Parameter.KEYWORD_ONLY,
                                     annotation=parameter.annotation(options),
                                     default=parameter.field(options)) for parameter in _of(name)
                   if parameter.offered(options)]
    # The SDK reads a tool's parameters with inspect.signature, which honours __signature__.
    call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        parameters, return_annotation=typing.Annotated[CallToolResult, returns]
    )
    call.__name__, call.__doc__ = name, description
    return call
