"""What the operator of a sitewalk-mcp server decides, and how the server's messages spell it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sitewalk.config import WalkConfig
from sitewalk.hints import Surface

__all__ = ["GUARD_OPTION", "LIMITS", "MCP", "ROBOTS_OPTION", "ServerOptions"]

# The tools' parameters whose maximum is a server option: parameter -> ServerOptions field
# (the option is --FIELD-NAME).
LIMITS = {
    "max_depth": "max_depth",
    "max_pages": "max_pages",
    "deadline": "max_deadline",
    "max_bytes": "max_bytes",
    "max_matches": "max_matches",
    "max_length": "max_output_chars",
    "concurrency": "max_concurrency",
}


@dataclass(frozen=True)
class ServerOptions:
    """What the server's operator decides; a tool call can ask for less, never for more.

    ``max_*`` are the largest budgets a call may request: the tools' input schemas carry them as
    ``maximum``, so a call above one is rejected before anything is fetched. ``delay`` is the
    pause between requests (politeness is the operator's choice, not the model's), and
    ``max_concurrency`` the most requests a call may keep in flight (1 unless the operator allows more).
    ``max_output_chars`` bounds a call's whole result, text and structured content;
    ``cursor_memory`` the characters of cut walk outputs kept for their cursors.
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

    def settings(self) -> dict[str, Any]:
        """The Scrapy settings every walk of this server runs with."""
        settings: dict[str, Any] = {"ROBOTSTXT_OBEY": self.robots}
        if self.allow_networks:
            settings["SITEWALK_GUARD_ALLOW_NETWORKS"] = self.allow_networks
        if self.user_agent:
            settings["USER_AGENT"] = self.user_agent
        return settings

    def limit(self, parameter: str) -> tuple[float, str] | None:
        """This server's maximum of the tools' ``parameter`` and the option that sets it, if one does."""
        field = LIMITS.get(parameter)
        if field is None:
            return None
        return getattr(self, field), "--" + field.replace("_", "-")


GUARD_OPTION = "--allow-networks (env SITEWALK_GUARD_ALLOW_NETWORKS)"
ROBOTS_OPTION = "--no-robots (env ROBOTSTXT_OBEY=false)"


class _Spelling(Surface):
    """The MCP server's spelling: the tools' parameters, and the operator's options for settings."""

    # Walk arguments that the tools name otherwise.
    _PARAMETERS = {"seed": "url", "grep": "pattern"}

    def name(self, argument: str) -> str:
        return self._PARAMETERS.get(argument, argument)

    def argument(self, name: str, value: Any) -> str:
        return f"{self.name(name)}={json.dumps(value)}"

    def setting(self, name: str, value: Any) -> str:
        if name == "SITEWALK_GUARD_ALLOW_NETWORKS":
            return f"--allow-networks {value}"
        if name == "ROBOTSTXT_OBEY":
            return "--robots" if value else "--no-robots"
        return f"{name}={value}"

    def fix(self, name: str, value: Any) -> str:
        return f"this server's operator can fetch it by starting the server with {self.setting(name, value)}"


MCP: Surface = _Spelling()
