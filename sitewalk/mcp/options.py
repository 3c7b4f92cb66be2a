"""What the operator of a sitewalk-mcp server decides, and how the server's messages spell it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sitewalk.config import WalkConfig
from sitewalk.hints import Surface, option

__all__ = ["MCP", "OPTIONS", "Option", "ServerOptions"]


@dataclass(frozen=True)
class ServerOptions:
    """What the server's operator decides; a tool call can ask for less, never for more.

    ``max_*`` are the largest budgets a call may request: the tools' input schemas carry them as
    ``maximum``, so a call above one is rejected before anything is fetched. ``delay`` is the
    pause between requests (politeness is the operator's choice, not the model's), and
    ``max_concurrency`` the most requests a call may keep in flight (1 unless the operator allows more).
    ``max_output_chars`` bounds a call's whole result, text and structured content;
    ``cursor_memory`` the characters of cut walk outputs kept for their cursors. ``render``: whether
    the tools' ``render`` parameter may run pages in a browser (``--no-render``: never).
    ``state_dir``: where the walks' states are kept, one directory per origin, for the tools'
    ``since`` parameter (None: ``since`` is refused).
    """

    allow_networks: str | None = None
    robots: bool = True
    user_agent: str | None = None
    delay: float = WalkConfig.delay
    max_depth: int = 5
    max_pages: int = 200
    max_deadline: float = 300.0
    max_bytes: int = 50_000_000
    max_matches: int = 500
    max_concurrency: int = 1
    max_output_chars: int = 20_000
    cursor_memory: int = 5_000_000
    render: bool = True
    # Where web_crawl and web_grep keep a state per origin for their since parameter; None: since is off.
    state_dir: str | None = None

    def settings(self) -> dict[str, Any]:
        """The Scrapy settings every walk of this server runs with."""
        values = {spec.setting: getattr(self, name) for name, spec in OPTIONS.items() if spec.setting is not None}
        return {setting: value for setting, value in values.items() if value not in (None, "")}

    def limit(self, parameter: str) -> tuple[float, str] | None:
        """This server's maximum of the tools' ``parameter`` and the option that sets it, if one does."""
        spec = next((spec for spec in OPTIONS.values() if spec.caps == parameter), None)
        return None if spec is None else (getattr(self, spec.field), spec.flag)


@dataclass(frozen=True)
class Option:
    """One of the operator's options: the :class:`ServerOptions` field ``field``, given as the flag
    ``--FIELD-NAME`` or in the environment variable ``env``. ``setting`` is the Scrapy setting it
    gives every walk; ``bounds`` the walk argument whose bounds its value keeps (else ``minimum``);
    ``caps`` the tool parameter whose maximum it is."""

    field: str
    env: str
    help: str
    metavar: str | None = None
    setting: str | None = None
    bounds: str | None = None
    minimum: int | None = None
    caps: str | None = None

    @property
    def flag(self) -> str:
        return option(self.field)

    def spelled(self, value: Any = None) -> str:
        """The flag that gives the option ``value`` (``--no-robots`` for robots=false)."""
        if isinstance(value, bool):
            return self.flag if value else option(f"no_{self.field}")
        return self.flag if value is None else f"{self.flag} {value}"

    def given(self, value: Any = None) -> str:
        """The option as a message names it: ``--no-robots (env ROBOTSTXT_OBEY=false)``."""
        if value is None:
            return f"{self.spelled()} (env {self.env})"
        word = json.dumps(value) if isinstance(value, bool) else value
        return f"{self.spelled(value)} (env {self.env}={word})"


# Every option, in the order --help lists them. An option that bounds no walk argument has a
# minimum: an output cap with room for the summary and the notices; a cursor memory of 0 keeps
# nothing (a cut output then has no cursor).
OPTIONS = {spec.field: spec for spec in (
    Option("allow_networks", "SITEWALK_GUARD_ALLOW_NETWORKS",
           "comma-separated networks the address guard lets walks reach besides public addresses, "
           "e.g. 127.0.0.1/32,::1/128; default: public addresses only", "CIDRS",
           setting="SITEWALK_GUARD_ALLOW_NETWORKS"),
    Option("robots", "ROBOTSTXT_OBEY", "obey robots.txt; default: true; --no-robots fetches pages it disallows",
           setting="ROBOTSTXT_OBEY"),
    Option("user_agent", "USER_AGENT", "User-Agent header", setting="USER_AGENT"),
    Option("delay", "SITEWALK_MCP_DELAY", "seconds between the requests of a walk", bounds="delay"),
    Option("max_depth", "SITEWALK_MCP_MAX_DEPTH", "largest max_depth a call may ask for", bounds="max_depth",
           caps="max_depth"),
    Option("max_pages", "SITEWALK_MCP_MAX_PAGES", "largest max_pages a call may ask for", bounds="max_pages",
           caps="max_pages"),
    Option("max_deadline", "SITEWALK_MCP_MAX_DEADLINE", "largest deadline (seconds) a call may ask for",
           bounds="deadline", caps="deadline"),
    Option("max_bytes", "SITEWALK_MCP_MAX_BYTES", "largest max_bytes a call may ask for", bounds="max_bytes",
           caps="max_bytes"),
    Option("max_matches", "SITEWALK_MCP_MAX_MATCHES", "largest max_matches a web_grep call may ask for",
           bounds="max_matches", caps="max_matches"),
    Option("max_concurrency", "SITEWALK_MCP_MAX_CONCURRENCY",
           "largest concurrency (requests in flight) a call may ask for", bounds="concurrency", caps="concurrency"),
    Option("max_output_chars", "SITEWALK_MCP_MAX_OUTPUT_CHARS",
           "most characters a call returns, text and structured content", minimum=1000, caps="max_length"),
    Option("cursor_memory", "SITEWALK_MCP_CURSOR_MEMORY",
           "most characters of cut outputs the server keeps for their cursors", minimum=0),
    Option("render", "SITEWALK_MCP_RENDER",
           "let the tools' render parameter run pages in Chromium; default: true; --no-render: never"),
    Option("state_dir", "SITEWALK_MCP_STATE_DIR",
           "directory where web_crawl and web_grep keep what they saw of each origin, for their since "
           "parameter; default: none (since is off)", "DIR"),
)}


class _Spelling(Surface):
    """The MCP server's spelling: the tools' parameters, and the operator's options for settings."""

    # Walk arguments that the tools name otherwise.
    _PARAMETERS = {"seed": "url", "grep": "pattern"}

    def name(self, argument: str) -> str:
        return self._PARAMETERS.get(argument, argument)

    def argument(self, name: str, value: Any) -> str:
        return f"{self.name(name)}={json.dumps(value)}"

    def setting(self, name: str, value: Any) -> str:
        spec = next((spec for spec in OPTIONS.values() if spec.setting == name), None)
        return f"{name}={value}" if spec is None else spec.spelled(value)

    def fix(self, name: str, value: Any) -> str:
        return f"this server's operator can fetch it by starting the server with {self.setting(name, value)}"


MCP: Surface = _Spelling()
