"""A walk saved as files (``save_dir``): one file per page, its path mirroring its URL, and llms.txt.

A page's file is its URL's path under the directory, the last segment taking the extension of
the content (``/library/os.html`` -> ``library/os.md``, ``/guide/`` -> ``guide/index.md``; a
text page keeps a name that has an extension). The path stays as the URL spells it, percent
escapes included, so nothing in it is decoded into a ``/``, a ``..`` or a NUL: no URL writes
outside the directory. A query joins the name after a ``?`` (which a path never holds as it
is), its ``/`` and ``%`` escaped. A segment that is empty becomes ``{}`` and one too long for a
file name is cut and marked with its hash (braces never stand unescaped in a URL's path), and
where two URLs would still share a file (``/`` and ``/index.html``; ``/a`` and ``/a.html``) the
later one's name gets ``{hash}`` of its URL before the extension.

``.sitewalk-pages.jsonl`` in the directory records each file as it is written (URL, file,
title, description), and each file removed (``{"url": ..., "removed": true}``: a walk with a
state removes the files of pages gone), so a resumed walk keeps the names already given and
rewrites no page it had saved; a page's file is written whole (a temporary file renamed) before
its line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit

__all__ = ["MANIFEST", "SavedPage", "SaveDir", "file_name", "llms_full_txt", "llms_txt"]

MANIFEST = ".sitewalk-pages.jsonl"
EXTENSIONS = {"markdown": ".md", "text": ".txt", "html": ".html"}
_PAGE_SUFFIXES = (".html", ".htm", ".xhtml")
# File names are at most 255 bytes on common file systems; room is left for {hash} and .md.
_MAX_NAME = 200
_DESCRIPTION_CHARS = 200
_NOT_PROSE = re.compile(r"^(?:#|```|\||-|\*|>|!\[|\d+\.\s|<)")


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]


def _segment(segment: str) -> str:
    if not segment:
        return "{}"
    if len(segment.encode()) > _MAX_NAME:
        return segment[: _MAX_NAME // 4] + "{" + _hash(segment) + "}"
    return segment


def file_name(url: str, mode: str, *, html: bool) -> str:
    """The file (a relative POSIX path) the content of the page at ``url`` is saved in, before
    any clash with another URL's is settled; ``mode`` is the content's (``markdown``, ``text``,
    ``html``), ``html`` whether the content was made from the page (HTML, or a PDF:
    ``report.pdf`` -> ``report.pdf.md``; a text page keeps its own extension)."""
    parts = urlsplit(url)
    segments = parts.path.split("/")[1:] or [""]
    *directories, last = segments
    extension = EXTENSIONS[mode] if html else ""
    if html and not last:
        last = "index"
    elif html and last.lower().endswith(_PAGE_SUFFIXES):
        last = last[: last.rindex(".")]
    elif not html and "." not in last.strip("."):
        extension = ".txt"
    if parts.query:
        last += "?" + parts.query.replace("%", "%25").replace("/", "%2F")
    names = [_segment(name) for name in directories]
    names.append(_segment(last) + extension if last else "{}" + extension)
    # "." and ".." never reach here from a parsed URL; kept out whatever the input.
    return "/".join(name if name not in (".", "..") else "{" + name + "}" for name in names)


def _with_hash(name: str, url: str) -> str:
    stem, dot, extension = name.rpartition(".")
    if not dot or "/" in extension:
        return f"{name}{{{_hash(url)}}}"
    return f"{stem}{{{_hash(url)}}}.{extension}"


@dataclass
class SavedPage:
    """A line of the directory's record: a page and the file its content is in."""

    url: str
    file: str
    title: str | None
    description: str | None
    # The URL the page names as its original (<link rel=canonical>), when it names one.
    canonical: str | None = None


class SaveDir:
    """The directory a walk saves its pages in, with its record of what it holds."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.root = Path(directory)
        self.root.mkdir(parents=True, exist_ok=True)
        self._root_resolved = self.root.resolve()
        self.pages: dict[str, SavedPage] = {}
        self._files: dict[str, str] = {}
        record = self.root / MANIFEST
        if record.exists():
            for line in record.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                    if isinstance(entry, dict) and entry.get("removed"):
                        gone = self.pages.pop(entry["url"], None)
                        if gone is not None:
                            self._files.pop(gone.file, None)
                        continue
                    saved = SavedPage(**entry)
                except (ValueError, TypeError, KeyError):
                    continue  # a line cut short by a crash: its page is saved again
                self.pages[saved.url] = saved
                self._files[saved.file] = saved.url
        self._record = record.open("a", encoding="utf-8")

    def save(self, url: str, content: str, mode: str, *, html: bool, title: str | None,
             rewrite: bool = True, canonical: str | None = None) -> SavedPage | None:
        """Write ``content`` to the page's file; None when the page is saved already and not
        ``rewrite`` (a resumed walk). ``html``: the content was made from the page (HTML or a
        PDF), not its body as it is; ``canonical``: the URL the page names as its original."""
        known = self.pages.get(url)
        if known is not None and not rewrite:
            return None
        name = known.file if known is not None else self._free_name(file_name(url, mode, html=html), url)
        path = self.root / name
        if not path.resolve().is_relative_to(self._root_resolved):
            raise ValueError(f"{url} would be saved outside the directory")
        try:
            self._write(path, content)
        except (IsADirectoryError, NotADirectoryError, FileExistsError):
            # A name that is another URL's directory, or a directory that is another's file.
            name = _with_hash("{}" + EXTENSIONS.get(mode, ".txt"), url)
            path = self.root / name
            self._write(path, content)
        saved = SavedPage(url, name, title, description(content) if mode == "markdown" and html else None, canonical)
        self.pages[url] = saved
        self._files[name] = url
        self._record.write(json.dumps(asdict(saved), ensure_ascii=False) + "\n")
        self._record.flush()
        return saved

    def remove(self, url: str) -> bool:
        """Delete the file of the page at ``url`` (a page gone from the site); whether there was one."""
        saved = self.pages.pop(url, None)
        if saved is None:
            return False
        self._files.pop(saved.file, None)
        (self.root / saved.file).unlink(missing_ok=True)
        self._record.write(json.dumps({"url": url, "removed": True}) + "\n")
        self._record.flush()
        return True

    def _free_name(self, name: str, url: str) -> str:
        owner = self._files.get(name)
        return name if owner is None or owner == url else _with_hash(name, url)

    @staticmethod
    def _write(path: Path, content: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            raise IsADirectoryError(str(path))
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".sitewalk-")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(content)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def write_llms_txt(self, site_url: str) -> None:
        """Write ``llms.txt`` and ``llms-full.txt`` of the pages saved, in walk order, each once:
        a page that names another saved page as its original (its canonical URL) is that page's
        copy, left out."""
        pages = [page for page in self.pages.values()
                 if page.canonical is None or page.canonical == page.url or page.canonical not in self.pages]
        (self.root / "llms.txt").write_text(llms_txt(site_url, pages), encoding="utf-8")
        with (self.root / "llms-full.txt").open("w", encoding="utf-8") as full:
            llms_full_txt(self.root, pages, full)

    def close(self) -> None:
        self._record.close()


def description(markdown: str) -> str | None:
    """The first paragraph of prose in ``markdown``, cut at a sentence's end within 200 characters."""
    paragraph: list[str] = []
    in_code = False
    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        if not stripped:
            if paragraph:
                break
            continue
        if _NOT_PROSE.match(stripped) and not paragraph:
            continue
        paragraph.append(stripped)
    if not paragraph:
        return None
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", " ".join(paragraph))
    text = re.sub(r"[*_`]", "", text)
    if len(text) <= _DESCRIPTION_CHARS:
        return text
    cut = text.rfind(". ", 0, _DESCRIPTION_CHARS)
    return text[: cut + 1] if cut > 0 else text[: _DESCRIPTION_CHARS - 1].rstrip() + "…"


def _section(url: str, site_url: str) -> str:
    path = urlsplit(url).path
    base = urlsplit(site_url).path.rsplit("/", 1)[0]
    relative = path[len(base):] if path.startswith(base) else path
    segments = relative.lstrip("/").split("/")
    return segments[0] if len(segments) > 1 and segments[0] else "Pages"


def llms_txt(site_url: str, pages: list[SavedPage]) -> str:
    """llms.txt (llmstxt.org): the site's title (the first page's), its summary (the first
    page's description), then one section per top directory of ``- [title](URL): description``
    lines, pages in walk order."""
    first = pages[0] if pages else None
    title = (first.title if first is not None else None) or urlsplit(site_url).netloc
    lines = [f"# {_one_line(title)}", ""]
    if first is not None and first.description:
        lines += [f"> {_one_line(first.description)}", ""]
    sections: dict[str, list[SavedPage]] = {}
    for page in pages:
        sections.setdefault(_section(page.url, site_url), []).append(page)
    for name, members in sections.items():
        lines += [f"## {name}", ""]
        for page in members:
            text = _one_line(page.title or page.url).replace("[", "\\[").replace("]", "\\]")
            entry = f"- [{text}]({page.url})"
            if page.description:
                entry += f": {_one_line(page.description)}"
            lines.append(entry)
        lines.append("")
    return "\n".join(lines)


def llms_full_txt(root: Path, pages: list[SavedPage], out: TextIO) -> None:
    """llms-full.txt: every saved page's content in walk order, each under its title and URL."""
    write = out.write
    for page in pages:
        try:
            content = (root / page.file).read_text(encoding="utf-8")
        except OSError:
            continue
        write(f"# {_one_line(page.title or page.url)}\n\nSource: {page.url}\n\n{content.strip()}\n\n")


def _one_line(text: str) -> str:
    return " ".join(text.split())
