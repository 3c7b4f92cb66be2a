"""The listings the model reads first: web_crawl's line per page, web_grep's matching lines."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from sitewalk.items import Match, human_bytes

__all__ = ["grep_lines", "index_lines"]

# What separates a page's own title from the site's name after it.
_TITLE_SEPARATORS = (" — ", " – ", " | ", " - ", " · ", " :: ")


def index_lines(pages: Sequence[tuple[str, int, int, str | None]]) -> tuple[list[str], str | None]:
    """One line per page, ``URL STATUS SIZE — TITLE`` (SIZE as ``13 kB``), and the title suffix
    most pages repeat (the site's name: `` — Python 3.11 documentation``), left out of the lines
    it ends."""
    titles = [" ".join(title.split()) if title else "" for _, _, _, title in pages]
    suffix = _common_suffix(titles)
    lines = []
    for (final_url, status, byte_count, _), title in zip(pages, titles, strict=True):
        if suffix and title.endswith(suffix) and len(title) > len(suffix):
            title = title[: -len(suffix)]
        line = f"{final_url} {status} {human_bytes(byte_count)}"
        lines.append(f"{line} — {title}" if title else line)
    return lines, suffix


def _common_suffix(titles: list[str]) -> str | None:
    """The last separated part of the titles that at least half of them (two or more) end with."""
    endings: Counter[str] = Counter()
    for title in titles:
        cuts = [title.rfind(separator) for separator in _TITLE_SEPARATORS]
        at = max(cuts)
        if at > 0:
            endings[title[at:]] += 1
    if not endings:
        return None
    suffix, times = endings.most_common(1)[0]
    return suffix if times >= 2 and times * 2 >= len([title for title in titles if title]) else None


def grep_lines(matches: list[Match]) -> list[str]:
    """Matches grouped by page, grep style: ``N: text`` for a match, ``N- text`` for context,
    ``--`` between separate runs of lines; overlapping context is shown once."""
    by_page: dict[str, dict[int, tuple[str, bool]]] = {}
    for match in matches:
        shown = by_page.setdefault(match.url, {})
        for offset, text in enumerate(match.before):
            shown.setdefault(match.line - len(match.before) + offset, (text, False))
        for offset, text in enumerate(match.after, start=1):
            shown.setdefault(match.line + offset, (text, False))
        shown[match.line] = (match.text, True)
    lines: list[str] = []
    for url, shown in by_page.items():
        lines.append(url)
        previous = None
        for number in sorted(shown):
            if previous is not None and number > previous + 1:
                lines.append("  --")
            text, is_match = shown[number]
            lines.append(f"  {number}{':' if is_match else '-'} {text}")
            previous = number
    return lines
