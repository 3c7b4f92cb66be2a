"""The pages a walk has yet to fetch, breadth first; every URL it knows; the origin it stays on."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import ada_url

from sitewalk.links import normalize

if TYPE_CHECKING:
    from sitewalk.patterns import Pattern

__all__ = ["Changes", "Frontier", "Scope"]

Entry = tuple[str, int, "str | None"]


@dataclass
class Changes:
    """What the frontier learnt since the journal last took its changes (JOBDIR only): entries
    queued, redirect targets recorded, URLs popped, the origin once set, and ``held`` links
    (the links of pages at ``max_depth``, kept so that a resumed walk with a larger ``max_depth``
    need not fetch those pages again)."""

    queued: list[Entry] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)
    popped: list[str] = field(default_factory=list)
    held: list[tuple[list[str], int, str]] = field(default_factory=list)
    origin: str | None = None


@dataclass(frozen=True)
class Scope:
    """Where on its origin the walk may go: ``include`` and ``exclude`` are searched in a URL's
    path and query; with ``no_parent``, only URLs at or below the directory of the seed's final
    URL (wget's ``--no-parent``)."""

    include: Pattern | None = None
    exclude: Pattern | None = None
    no_parent: bool = False

    def __bool__(self) -> bool:
        return self.include is not None or self.exclude is not None or self.no_parent

    def admits(self, path_and_query: str) -> bool:
        if self.include is not None and not self.include.search(path_and_query):
            return False
        return self.exclude is None or not self.exclude.search(path_and_query)


class Frontier:
    """A FIFO of ``(url, depth, found_on)`` and the set of URLs the walk has queued, requested or
    been redirected to (fragments dropped).

    Links join in the order pages list them, each URL once: a page reachable by two paths, or
    through a redirect, is fetched once. Only links on the walk's origin (scheme, host and
    effective port of the seed's final URL, as a browser serialises it) are admitted. URLs are
    kept as strings, not Request objects: a link-heavy site knows many times more URLs than it
    has pages. Links outside the :class:`Scope` are left out, counted once each
    (:attr:`out_of_scope`); the seed is always fetched.
    """

    def __init__(self, scope: Scope | None = None) -> None:
        self._queue: deque[Entry] = deque()
        self._seen: set[str] = set()
        self.origin: str | None = None
        self._prefix = ""
        self._scope = scope or Scope()
        # With no_parent: what every URL in scope starts with (the seed's final directory).
        self._parent = ""
        self._left_out: set[str] = set()
        self.out_of_scope = 0
        self._changes: Changes | None = None

    def keep_changes(self) -> None:
        """From now on, remember what changes, for :meth:`take_changes` (a walk with JOBDIR)."""
        self._changes = Changes()

    def take_changes(self) -> Changes:
        changes, self._changes = self._changes or Changes(), Changes()
        return changes

    def __len__(self) -> int:
        return len(self._queue)

    def add_seed(self, url: str) -> None:
        seed = normalize(url)
        self._seen.add(seed)
        self._queue.append((seed, 0, None))
        if self._changes is not None:
            self._changes.queued.append((seed, 0, None))

    def set_origin(self, final_url: str) -> None:
        """The walk stays on the origin of ``final_url`` (the seed's, after its redirects)."""
        self.origin = ada_url.URL(final_url).origin
        # What every same-origin URL in normalised (WHATWG) form starts with.
        self._prefix = f"{self.origin}/"
        if self._scope.no_parent:
            path = ada_url.URL(final_url).pathname
            self._parent = self.origin + path[: path.rfind("/") + 1]
        if self._changes is not None:
            self._changes.origin = self.origin

    def same_origin(self, url: str) -> bool:
        return self.origin is not None and ada_url.URL(url).origin == self.origin

    def known(self, url: str) -> bool:
        """Whether the walk knows ``url`` (normalised, no fragment) as a page: queued or fetched."""
        return url in self._seen

    def record(self, url: str) -> bool:
        """Remember ``url`` (a redirect target, normalised); True when it was not known before."""
        key = url.partition("#")[0]
        if key in self._seen:
            return False
        self._seen.add(key)
        if self._changes is not None:
            self._changes.seen.append(key)
        return True

    def admit(self, links: list[str], depth: int, found_on: str) -> int:
        """Queue the same-origin ``links`` not seen before, at ``depth``; returns how many were
        off the origin. Links are normalised and have no fragment (:func:`sitewalk.links.page_links`)."""
        prefix, seen, queue = self._prefix, self._seen, self._queue
        scoped = bool(self._scope)
        offsite = queued = 0
        for link in links:
            if not link.startswith(prefix):
                offsite += 1
            elif link not in seen:
                if scoped and not self._in_scope(link):
                    continue
                seen.add(link)
                queue.append((link, depth, found_on))
                queued += 1
        if self._changes is not None and queued:
            self._changes.queued.extend(queue[i] for i in range(-queued, 0))
        return offsite

    def _in_scope(self, link: str) -> bool:
        if link in self._left_out:
            return False
        if link.startswith(self._parent) and self._scope.admits(link[len(self.origin or ""):]):
            return True
        self._left_out.add(link)
        self.out_of_scope += 1
        return False

    def hold(self, links: list[str], depth: int, found_on: str) -> None:
        """Links beyond ``max_depth`` (at ``depth``): not queued, only kept in the journal."""
        if self._changes is not None and links:
            self._changes.held.append((links, depth, found_on))

    def pop(self) -> Entry:
        entry = self._queue.popleft()
        if self._changes is not None:
            self._changes.popped.append(entry[0])
        return entry

    def unvisited(self) -> list[str]:
        return [url for url, _, _ in self._queue]

    def restore(self, queue: list[Entry], seen: set[str], origin: str | None, out_of_scope: int = 0) -> None:
        """Go on from a journal's replay (:func:`sitewalk.jobs.replay`): its unfinished queue in
        order, every URL it knew and how many links it left out."""
        self.out_of_scope = out_of_scope
        self._queue.extend(queue)
        self._seen.update(seen)
        if origin is not None:
            self.set_origin(origin)
