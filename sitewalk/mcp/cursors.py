"""Long outputs: a walk's output cut at the output cap into parts, the rest kept for the cursor that continues it."""

from __future__ import annotations

import json
import secrets
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp.types import CallToolResult, TextContent

from sitewalk.exceptions import SitewalkError
from sitewalk.mcp.options import OPTIONS

if TYPE_CHECKING:
    from collections.abc import Callable

    from sitewalk.mcp.options import ServerOptions

__all__ = ["Cursors", "Output", "part", "size"]


@dataclass(frozen=True)
class Output:
    """What one call's walk gives the model: its listing, then the summary and notices that
    follow it, and the structured result; ``unit`` names what a line of the listing is,
    ``narrow`` how to ask for less."""

    tool: str
    lines: list[str]
    summary: str
    notices: list[str]
    structured: dict[str, Any]
    unit: str
    narrow: str

    @property
    def size(self) -> int:
        return sum(len(line) + 1 for line in self.lines)


class Cursors:
    """Cut outputs by key, the oldest dropped when they would hold more than ``memory``
    characters of listing. A cursor is ``KEY-LINE``: the output and the line it continues at."""

    def __init__(self, memory: int) -> None:
        self.memory = memory
        self._outputs: OrderedDict[str, Output] = OrderedDict()
        self._size = 0

    def keep(self, output: Output) -> str | None:
        """The key ``output`` is kept under; None when it alone is larger than the memory."""
        if output.size > self.memory:
            return None
        while self._size + output.size > self.memory:
            _, dropped = self._outputs.popitem(last=False)
            self._size -= dropped.size
        key = secrets.token_hex(4)
        self._outputs[key] = output
        self._size += output.size
        return key

    def get(self, tool: str, cursor: str) -> tuple[str, Output, int]:
        """The key, the output and the line ``cursor`` (given to ``tool``) continues at."""
        key, _, line = cursor.strip().partition("-")
        output = self._outputs.get(key)
        if output is None or not line.isdigit() or int(line) >= len(output.lines):
            raise SitewalkError(
                f"cursor {cursor!r} is unknown or expired (this server keeps the cut outputs of its recent walks "
                f"up to sitewalk-mcp {OPTIONS['cursor_memory'].spelled(self.memory)} characters): call {tool} again "
                "without cursor to walk again"
            )
        if output.tool != tool:
            raise SitewalkError(f"cursor {cursor!r} continues a {output.tool} output: call {output.tool} with it")
        self._outputs.move_to_end(key)
        return key, output, int(line)


def size(structured: dict[str, Any]) -> int:
    """The characters of a structured result as the output cap counts them (its JSON)."""
    return len(json.dumps(structured, ensure_ascii=False))


def part(output: Output, options: ServerOptions, cursors: Cursors, *, start: int = 0, key: str | None = None
         ) -> CallToolResult:
    """The part of ``output`` from line ``start`` that fits the output cap, with its structured
    content: the listing, then the summary and (in the first part) the notices; a listing cut at the
    cap ends with a notice naming the cursor of the next part (``key``: the output's, once kept)."""
    budget = options.max_output_chars - size(output.structured)
    lines = output.lines
    notices = output.notices if start == 0 else []
    tail = "\n".join(["", "", output.summary, *(f"Note: {notice}" for notice in notices)])
    shown = lines[start:]
    header = []
    if start and shown[0].startswith(" "):
        # A page's matches continue here: name the page again.
        header = [next(line for line in reversed(lines[:start]) if not line.startswith(" ")) + " (continued)"]
    end = len(lines)
    if len("\n".join(header + shown)) + len(tail) > budget:
        if key is None:
            key = cursors.keep(output)
        cut = _cut_notice(output, options, key, start)
        room = budget - len(tail) - len(cut(len(lines), len(lines))) - 1 - sum(len(line) + 1 for line in header)
        used = 0
        kept = []
        for line in shown:
            used += len(line) + 1
            if used > room:
                break
            kept.append(line)
        # At least one line of the listing per part, so that a cursor always moves on: a line
        # longer than the room is cut, not the notice after it.
        shown = kept or [_shortened(shown[0], room)]
        end = start + len(shown)
        tail = f"{tail}\n{cut(end, len(lines))}"
    text = "\n".join(header + shown) + tail if header or shown else tail.lstrip("\n")
    return CallToolResult(content=[TextContent(type="text", text=text[:budget])], structured_content=output.structured)


def _shortened(line: str, room: int) -> str:
    marker = " […line cut]"
    return line if len(line) <= room else line[: max(room - len(marker), 0)] + marker


def _cut_notice(output: Output, options: ServerOptions, key: str | None, start: int) -> Callable[[int, int], str]:
    cap = options.max_output_chars
    narrow = f"narrow the request ({output.narrow})"

    def notice(end: int, total: int) -> str:
        shown = f"showing {output.unit} {start + 1}-{end} of {total}"
        head = f"Note: output cut at this server's limit of {cap} characters: {shown}."
        if key is None:
            return f"{head} The rest is too large to keep for a cursor: {narrow} to see it."
        return (f"{head} For the next part, call {output.tool} with cursor=\"{key}-{end}\" (no other arguments "
                f"needed); or {narrow}.")

    return notice
