"""Feed exporters of the walk: Scrapy's CSV and XML exporters, with cells a reader can take back."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from scrapy import exporters

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy import Field

__all__ = ["CsvItemExporter", "XmlItemExporter"]


class CsvItemExporter(exporters.CsvItemExporter):
    """Scrapy's CSV exporter, except that a list (grep's ``before``/``after``, extract's
    ``values``) is its JSON array, ``["a, b", "c"]``: Scrapy joins the values with commas, so a value
    holding a comma could not be told from two. A missing value is an empty cell (as in Scrapy's).
    A field's own ``serializer`` still wins."""

    def serialize_field(self, field: Mapping[str, Any] | Field, name: str, value: Any) -> Any:
        if isinstance(value, (list, tuple)) and "serializer" not in field:
            return json.dumps(list(value), ensure_ascii=False)
        return super().serialize_field(field, name, value)


class XmlItemExporter(exporters.XmlItemExporter):
    """Scrapy's XML exporter, except that a missing value (None: the seed's ``found_on``, a page
    without a title) is an empty element, not the text ``None``."""

    def serialize_field(self, field: Mapping[str, Any] | Field, name: str, value: Any) -> Any:
        if value is None and "serializer" not in field:
            return ""
        return super().serialize_field(field, name, value)
