"""How each front end spells the input a message tells its user to give: arguments and settings.

A message names the argument or setting that changes the outcome, in the words of the surface
where it is read: ``-a fixed_strings=true`` and ``-s ROBOTSTXT_OBEY=false`` for ``scrapy crawl``,
``--fixed-strings`` for the ``sitewalk`` command, ``fixed_strings=true`` and
``setting=ROBOTSTXT_OBEY=false`` for a scrapyd job, ``fixed_strings=True`` and
``settings={"ROBOTSTXT_OBEY": False}`` in Python. (The MCP server's spelling is
:data:`sitewalk.mcp.options.MCP`.)
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["API", "CLI", "COMMAND", "SCRAPYD", "Surface", "option"]


class Surface:
    """One front end's spelling; this base spells them as ``scrapy crawl sitewalk`` takes them."""

    def name(self, argument: str) -> str:
        """What this front end calls the walk argument ``argument``."""
        return argument

    def argument(self, name: str, value: Any) -> str:
        """How to give the walk argument ``name`` the value ``value``."""
        return f"-a {name}={_word(value)}"

    def option(self, name: str) -> str:
        """The walk argument ``name`` as a message names it for its user to change (``raise ...``)."""
        return f"-a {name}"

    def setting(self, name: str, value: Any) -> str:
        """How to give the Scrapy setting ``name`` the value ``value``."""
        return f"-s {name}={_word(value)}"

    def fix(self, name: str, value: Any) -> str:
        """What to do to fetch a page that the setting ``name`` kept from being fetched."""
        return f"set {self.setting(name, value)} to fetch it anyway"


class _Python(Surface):
    """The Python API: keyword arguments, and Scrapy settings in ``settings=``."""

    def name(self, argument: str) -> str:
        # grep() and grep_async() take the grep argument as their ``pattern``.
        return "pattern" if argument == "grep" else argument

    def argument(self, name: str, value: Any) -> str:
        return f"{name}={_python(value)}"

    def option(self, name: str) -> str:
        return self.name(name)

    def setting(self, name: str, value: Any) -> str:
        return f"settings={{{_python(name)}: {_python(value)}}}"


class _Command(Surface):
    """The ``sitewalk`` command: the seed is its URL argument, the others ``--max-pages 50``."""

    def name(self, argument: str) -> str:
        return "seed URL" if argument == "seed" else option(argument)

    def argument(self, name: str, value: Any) -> str:
        if name == "seed":
            return str(value)
        if isinstance(value, bool):
            return option(name) if value else option(f"no_{name}")
        return f"{option(name)} {_word(value)}"

    def option(self, name: str) -> str:
        return self.name(name)


class _Scrapyd(Surface):
    """A scrapyd job: the walk's arguments and ``setting=NAME=VALUE`` are parameters of
    ``schedule.json``."""

    def argument(self, name: str, value: Any) -> str:
        return f"{name}={_word(value)}"

    def option(self, name: str) -> str:
        return name

    def setting(self, name: str, value: Any) -> str:
        return f"setting={name}={_word(value)}"


def option(name: str) -> str:
    """The ``sitewalk`` command's option for the walk argument ``name``."""
    return "--" + name.replace("_", "-")


def _word(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _python(value: Any) -> str:
    # Double quotes, as code is usually written; repr() for everything but text.
    return json.dumps(value) if isinstance(value, str) else repr(value)


CLI = Surface()
COMMAND: Surface = _Command()
API: Surface = _Python()
SCRAPYD: Surface = _Scrapyd()
