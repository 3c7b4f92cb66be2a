"""Feed exporters of the walk: Scrapy's JSON, CSV and XML exporters, with cells a reader can take
back, that continue a feed they append to instead of starting a second one in the same file."""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING, Any

from scrapy import exporters

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy import Field

__all__ = ["CsvItemExporter", "JsonItemExporter", "XmlItemExporter"]

# How much of a feed's end is read to find where its items end.
_TAIL = 4096


class JsonItemExporter(exporters.JsonItemExporter):
    """Scrapy's JSON exporter, except that a feed it appends to (a resumed walk, ``-o`` on an
    existing file) goes on in the file's array: the closing ``]`` is taken off, and the items
    join the ones there, so the file stays one JSON array.

    Only what this exporter writes after the last item is taken off (the closing, or the comma a
    walk killed as it began an item left): a resumed walk has cut the feed back to the end of an
    item already (:func:`sitewalk.jobs.cut_feeds`)."""

    def start_exporting(self) -> None:
        ending = _ending(self.file)
        if ending is None:
            super().start_exporting()
            return
        newline = b"\n" if self.indent is not None else b""
        tail = _without(_without(ending, newline + b"]"), b"," + newline)
        _cut(self.file, ending, tail)
        self.first_item = tail.endswith(b"[" + newline)


class CsvItemExporter(exporters.CsvItemExporter):
    """Scrapy's CSV exporter, except that a list (grep's ``before``/``after``, extract's
    ``values``) is its JSON array, ``["a, b", "c"]``: Scrapy joins the values with commas, so a value
    holding a comma could not be told from two. A missing value is an empty cell (as in Scrapy's).
    A field's own ``serializer`` still wins. A feed it appends to keeps its one header row."""

    def start_exporting(self) -> None:
        super().start_exporting()
        if _ending(self.stream.buffer) is not None:
            self.include_headers_line = False

    def serialize_field(self, field: Mapping[str, Any] | Field, name: str, value: Any) -> Any:
        if isinstance(value, (list, tuple)) and "serializer" not in field:
            return json.dumps(list(value), ensure_ascii=False)
        return super().serialize_field(field, name, value)


class XmlItemExporter(exporters.XmlItemExporter):
    """Scrapy's XML exporter, except that a missing value (None: the seed's ``found_on``, a page
    without a title) is an empty element, not the text ``None``; and a feed it appends to goes on
    in the file's document: the closing root tag is taken off, and no second declaration and
    root element are written."""

    def start_exporting(self) -> None:
        ending = _ending(self.stream.buffer)
        if ending is None:
            super().start_exporting()
            return
        tail = _without(ending, f"</{self.root_element}>".encode())
        # After the root's start tag or an item's end tag (a walk killed as it began an item left a part).
        ends = [tail.rfind(f"<{self.root_element}>".encode()), tail.rfind(f"</{self.item_element}>".encode())]
        last = max(ends)
        if last >= 0:
            end = tail.index(b">", last) + 1
            tail = tail[: end + 1] if tail[end : end + 1] == b"\n" else tail[:end]
        _cut(self.stream.buffer, ending, tail)

    def serialize_field(self, field: Mapping[str, Any] | Field, name: str, value: Any) -> Any:
        if value is None and "serializer" not in field:
            return ""
        return super().serialize_field(field, name, value)


def _ending(file: Any) -> bytes | None:
    """The last bytes of the feed file the exporter appends to; None when it starts a new feed
    (an empty file, a file replaced, a stream such as stdout)."""
    try:
        if not (file.readable() and file.seekable()):
            return None
        end = file.seek(0, io.SEEK_END)
        if end == 0:
            return None
        file.seek(max(end - _TAIL, 0))
        ending: bytes = file.read()
    except (AttributeError, OSError, ValueError):
        return None
    return ending


def _without(data: bytes, end: bytes) -> bytes:
    return data[: -len(end)] if end and data.endswith(end) else data


def _cut(file: Any, ending: bytes, tail: bytes) -> None:
    """Take off the end of ``file`` whose last bytes were ``ending``, so that it ends with ``tail``.
    (The feed is opened to append: what is written next goes at the new end.)"""
    size = file.seek(0, io.SEEK_END)
    file.truncate(size - len(ending) + len(tail))
    file.seek(0, io.SEEK_END)
