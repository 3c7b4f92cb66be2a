"""The HTML report's style and script, inline in the report (its Content-Security-Policy names
their hashes)."""

from __future__ import annotations

__all__ = ["SCRIPT", "STYLE"]

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:75em;padding:0 1em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0;width:100%;table-layout:fixed}th,td{border:1px solid #ddd;padding:.25em .5em;
text-align:left;vertical-align:top}td.n,th.n{text-align:right}th.n{width:7em}th{background:#f4f4f4}
th[data-sortable]{cursor:pointer}th[aria-sort=ascending]::after{content:" \\25B2"}
th[aria-sort=descending]::after{content:" \\25BC"}td{overflow-wrap:anywhere}
.more{color:#666;font-style:italic}ul.from{margin:0;padding-left:1.2em}input.filter{margin:.3em 0;width:20em}
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dt{font-weight:600}
"""

# Sorting (a click on a sortable header) and filtering (a box above each filterable table): the
# tables are whole without them.
SCRIPT = """
document.querySelectorAll("th[data-sortable]").forEach(function (th) {
  th.addEventListener("click", function () {
    var table = th.closest("table"), body = table.tBodies[0], column = th.cellIndex;
    var down = th.getAttribute("aria-sort") !== "descending";
    table.querySelectorAll("th").forEach(function (other) { other.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", down ? "descending" : "ascending");
    var key = function (row) {
      var cell = row.cells[column], value = cell.getAttribute("data-v");
      return value === null ? cell.textContent : parseFloat(value);
    };
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a), y = key(b), order = x < y ? -1 : x > y ? 1 : 0;
      return down ? -order : order;
    });
    var sorted = document.createDocumentFragment();
    rows.forEach(function (row) { sorted.appendChild(row); });
    body.appendChild(sorted);
  });
});
document.querySelectorAll("table[data-filter]").forEach(function (table) {
  var box = document.createElement("input");
  box.className = "filter";
  box.type = "search";
  box.placeholder = "filter rows";
  box.setAttribute("aria-label", "filter the rows of the table below");
  box.addEventListener("input", function () {
    var text = box.value.toLowerCase();
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
      row.hidden = text !== "" && row.textContent.toLowerCase().indexOf(text) < 0;
    });
  });
  table.parentNode.insertBefore(box, table);
});
"""
