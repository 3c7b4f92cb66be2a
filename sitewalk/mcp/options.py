"""What the operator of a sitewalk-mcp server decides: its walks' settings and the tools' maxima."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sitewalk.config import WalkConfig

__all__ = ["LIMITS", "ServerOptions"]

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
    ``cursor_memory`` the characters of cut walk outputs kept for their cursors. ``render``: whether
    the tools' ``render`` parameter may run pages in a browser (``--no-render``: never).
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
