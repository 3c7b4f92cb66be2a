"""Pages run in a browser (``render``): Debian's Chromium driven by Playwright, every request it
makes fetched by the walk's own downloader, inside the walk's rules and budgets."""

from __future__ import annotations

from sitewalk.render.downloadermiddlewares import RenderMiddleware
from sitewalk.render.shell import looks_like_shell

__all__ = ["RenderMiddleware", "looks_like_shell"]
