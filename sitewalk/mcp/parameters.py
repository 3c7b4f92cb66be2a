"""The tools' parameters as pydantic fields: each bound is the server's own maximum."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from sitewalk.config import WalkConfig, argument
from sitewalk.mcp.options import ServerOptions
from sitewalk.patterns import MAX_LENGTH

__all__ = ["MAX_CONTEXT", "cursor", "param", "url", "walk_options"]

# Lines of context a web_grep call may ask for around each match.
MAX_CONTEXT = 10
# Parameters take pydantic Field defaults so that each bound is the server's own maximum: the
# schema the model reads is the schema a call is validated against.


def url(required: bool = True) -> Any:
    description = (
        "The http(s) URL to start from. Only pages on its origin (scheme, host, port) are walked; links to "
        "other sites are not followed."
    )
    if required:
        return Field(description=description)
    return Field(default=None, description=description + " Required unless cursor is given.")


def cursor() -> Any:
    return Field(
        default=None,
        description="The cursor a cut output's notice names: returns the next part of that walk's output, "
        "without walking again (the other parameters are then not needed).",
    )


def param(name: str, maximum: float | None = None) -> Any:
    """The walk argument ``name`` as a tool parameter: its default, bounds and help are the
    walk's own (:func:`sitewalk.config.argument`); ``maximum`` is this server's."""
    spec = argument(name)
    default = getattr(WalkConfig, name)
    if maximum is not None:
        default = min(default, maximum)
    description = spec.help[0].upper() + spec.help[1:] + "."
    # A pattern's length is bounded like the walk bounds it (sitewalk.patterns).
    length = MAX_LENGTH if name in ("include", "exclude") else None
    return Field(default=default, description=description, ge=spec.minimum, gt=spec.above, le=maximum, max_length=length)


def walk_options(options: ServerOptions) -> dict[str, Any]:
    """The parameters web_crawl and web_grep share, as pydantic fields with this server's bounds."""
    return {
        "max_depth": param("max_depth", options.max_depth),
        "max_pages": param("max_pages", options.max_pages),
        "deadline": param("deadline", options.max_deadline),
        "max_bytes": param("max_bytes", options.max_bytes),
        "concurrency": param("concurrency", options.max_concurrency),
        "include": param("include"),
        "exclude": param("exclude"),
        "no_parent": param("no_parent"),
        "sitemap": param("sitemap"),
    }
