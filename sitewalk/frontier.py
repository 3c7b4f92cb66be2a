"""The pages a walk has yet to fetch, breadth first; every URL it knows; the origin it stays on."""

from __future__ import annotations

from collections import deque
from typing import Any

import ada_url

from sitewalk.links import normalize

__all__ = ["Frontier"]


class Frontier:
    """A FIFO of ``(url, depth, found_on)`` and the set of URLs the walk has queued, requested or
    been redirected to (fragments dropped).

    Links join in the order pages list them, each URL once: a page reachable by two paths, or
    through a redirect, is fetched once. Only links on the walk's origin (scheme, host and
    effective port of the seed's final URL, as a browser serialises it) are admitted. URLs are
    kept as strings, not Request objects: a link-heavy site knows many times more URLs than it
    has pages.
    """

    def __init__(self) -> None:
        self._queue: deque[tuple[str, int, str | None]] = deque()
        self._seen: set[str] = set()
        self.origin: str | None = None
        self._prefix = ""

    def __len__(self) -> int:
        return len(self._queue)

    def add_seed(self, url: str) -> None:
        seed = normalize(url)
        self._seen.add(seed)
        self._queue.append((seed, 0, None))

    def set_origin(self, final_url: str) -> None:
        """The walk stays on the origin of ``final_url`` (the seed's, after its redirects)."""
        self.origin = ada_url.URL(final_url).origin
        # What every same-origin URL in normalised (WHATWG) form starts with.
        self._prefix = f"{self.origin}/"

    def same_origin(self, url: str) -> bool:
        return self.origin is not None and ada_url.URL(url).origin == self.origin

    def record(self, url: str) -> bool:
        """Remember ``url`` (a redirect target, normalised); True when it was not known before."""
        key = url.partition("#")[0]
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def admit(self, links: list[str], depth: int, found_on: str) -> int:
        """Queue the same-origin ``links`` not seen before, at ``depth``; returns how many were
        off the origin. Links are normalised and have no fragment (:func:`sitewalk.links.page_links`)."""
        prefix, seen, queue = self._prefix, self._seen, self._queue
        offsite = 0
        for link in links:
            if not link.startswith(prefix):
                offsite += 1
            elif link not in seen:
                seen.add(link)
                queue.append((link, depth, found_on))
        return offsite

    def pop(self) -> tuple[str, int, str | None]:
        return self._queue.popleft()

    def unvisited(self) -> list[str]:
        return [url for url, _, _ in self._queue]

    def snapshot(self) -> dict[str, Any]:
        """What a resumed walk needs to go on (see :meth:`restore`)."""
        # Pickled at once: the set itself, not a copy of it (a large walk knows many URLs).
        return {"queue": list(self._queue), "seen": self._seen, "origin": self.origin}

    def restore(self, snapshot: dict[str, Any]) -> None:
        self._queue.extend(snapshot["queue"])
        self._seen.update(snapshot["seen"])
        if snapshot["origin"] is not None:
            self.set_origin(snapshot["origin"])
