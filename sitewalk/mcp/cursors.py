"""The outputs of recent walks that were cut at the output cap, kept for their cursors."""

from __future__ import annotations

import secrets
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from sitewalk.exceptions import SitewalkError

__all__ = ["Cursors", "Output"]


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
                f"up to sitewalk-mcp --cursor-memory {self.memory} characters): call {tool} again without "
                "cursor to walk again"
            )
        if output.tool != tool:
            raise SitewalkError(f"cursor {cursor!r} continues a {output.tool} output: call {output.tool} with it")
        self._outputs.move_to_end(key)
        return key, output, int(line)
