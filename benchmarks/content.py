"""Benchmark of issue 22: main content without navigation, on seven documentation generators.

    python benchmarks/content.py [--only python,postgres,...] [--max-pages N] [--write-results]

Serves seven documentation sites installed by Debian packages with nginx on loopback (the
pieces of benchmarks/run.py), walks each with ``sitewalk URL --content markdown --main-content``
and compares every page's main content with the page's HTML file, as the generator wrote it:

- **navigation kept**: the share of pages whose main content still holds any of the site's
  navigation. The navigation of a page is, as ground truth for this measurement only, the
  blocks its generator writes around the article (``nav`` in ``SITES`` below: header and
  footer bars, breadcrumbs, sidebars, prev/next links, search boxes). A block is *held* when
  one of its runs of four consecutive words (the whole block when it has fewer) that the
  article does not also contain appears in the content, in that order. One run is enough: a
  page either has none of its navigation or counts.
- **article words kept**: the words of the article, the generator's article container
  (``article`` in ``SITES``: the first selector that matches) less the navigation blocks in
  it, that the content holds, counted as a multiset (a word twice in the article must be
  there twice), summed over the site's pages.

Words are runs of letters and digits, lower case; the content's link targets and titles
(``](url "title")``) are not words, nor are the numbers Markdown gives an ordered list's
items ("2. "), which the HTML's text does not hold. sitewalk knows nothing of these
selectors: its rules come from the page's structure (sitewalk/main_content/).

Run it with the project's Python; nginx (nginx-light) and the seven doc packages must be
installed (``apt-get install nginx-light python3.11-doc python-django-doc postgresql-doc-15
mkdocs-doc doxygen-doc libglib2.0-doc git-doc``). Output of each walk goes to a temporary
directory, deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from selectolax.lexbor import LexborHTMLParser
from server import nginx
from sites import Site, lock_work

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"


@dataclass(frozen=True)
class Generator:
    """A documentation site: where Debian installs it, where the walk starts, and the ground truth."""

    name: str
    package: str
    root: str
    seed: str
    # The navigation blocks (ground truth) and the article container, as CSS selectors.
    nav: str
    article: tuple[str, ...]


SITES = (
    Generator("Sphinx (classic)", "python3.11-doc", "/usr/share/doc/python3.11/html", "/index.html",
              "div.related, div.sphinxsidebar, div.footer, #searchbox", ("div.body",)),
    Generator("Sphinx (Django theme)", "python-django-doc", "/usr/share/doc/python-django-doc/html", "/index.html",
              "#hd, #sidebar, #ft", ("#yui-main",)),
    Generator("DocBook", "postgresql-doc-15", "/usr/share/doc/postgresql-doc-15/html", "/index.html",
              "div.navheader, div.navfooter", ("body > :not(.navheader):not(.navfooter)",)),
    Generator("MkDocs", "mkdocs-doc", "/usr/share/doc/mkdocs/html", "/index.html",
              "div.navbar, div.bs-sidebar, footer, div.modal", ("div[role=main]",)),
    Generator("Doxygen", "doxygen-doc", "/usr/share/doc/doxygen/html", "/index.html",
              "#top, #side-nav, #nav-path, address.footer, div.summary", ("div.header, div.contents",)),
    # gtk-doc's navigation tables are the body's; a book's index page has one more in its title
    # page that holds only the book's title, no link: the page's heading, not navigation.
    Generator("gtk-doc", "libglib2.0-doc", "/usr/share/gtk-doc/html", "/glib/index.html",
              "body > table.navigation, div.footer", ("body > :not(table.navigation):not(.footer)",)),
    Generator("AsciiDoc", "git-doc", "/usr/share/doc/git-doc", "/git.html",
              "#footer", ("#header, #content", "body")),
)
KEYS = {"sphinx": 0, "django": 1, "docbook": 2, "mkdocs": 3, "doxygen": 4, "gtkdoc": 5, "asciidoc": 6}

_WORD = re.compile(r"\w+")
# A link's target and title in Markdown: ](url "title"), the title's quotes escaped inside it.
_TARGET = re.compile(r'\]\((?:<[^>]*>|[^)\s]*)(?:\s+"(?:[^"\\]|\\.)*")?\)')
RUN = 4
# The number of an ordered list's item, which the Markdown writes ("2. ") and the HTML's text does
# not hold (Markdown escapes a paragraph's own "2." as "2\."); code blocks keep theirs.
_LIST_NUMBER = re.compile(r"^([ \t>]*)\d+[.)][ \t]")
_FENCE = re.compile(r"^[ \t>]*(```|~~~)")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def content_words(content: str) -> list[str]:
    """The words of a page's Markdown, without its link targets and its ordered lists' numbers."""
    lines = []
    fenced = False
    for line in _TARGET.sub("]", content).split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            line = _LIST_NUMBER.sub(r"\1", line)
        lines.append(line)
    return words("\n".join(lines))


def node_words(tree: LexborHTMLParser, selector: str) -> list[list[str]]:
    return [words(node.text(separator=" ")) for node in tree.css(selector)]


def runs(tokens: list[str], size: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + size]) for i in range(max(len(tokens) - size + 1, 0))}


@dataclass
class Score:
    pages: int = 0
    with_nav: int = 0
    article_words: int = 0
    kept_words: int = 0
    below: int = 0
    examples: list[str] | None = None


def score_page(source: Path, content: str, generator: Generator, score: Score, url: str) -> None:
    tree = LexborHTMLParser(source.read_bytes())
    for node in tree.css("script, style, a.headerlink"):
        node.decompose()
    navigation = node_words(tree, generator.nav)
    for node in tree.css(generator.nav):
        node.decompose()
    article: list[str] = []
    for selector in generator.article:
        blocks = node_words(tree, selector)
        if blocks:
            article = [word for block in blocks for word in block]
            break
    if not article:
        return
    kept_tokens = content_words(content)
    score.pages += 1
    wanted = Counter(article)
    kept = sum((wanted & Counter(kept_tokens)).values())
    score.article_words += len(article)
    score.kept_words += kept
    if kept < 0.98 * len(article):
        score.below += 1
    in_article = {size: runs(article, size) for size in range(1, RUN + 1)}
    in_content = {size: runs(kept_tokens, size) for size in range(1, RUN + 1)}
    for block in navigation:
        size = min(len(block), RUN)
        if size and (runs(block, size) - in_article[size]) & in_content[size]:
            score.with_nav += 1
            if score.examples is not None and len(score.examples) < 5:
                score.examples.append(f"{url}: {' '.join(block[:12])}")
            break


def walk(generator: Generator, site: Site, max_pages: int, out: Path) -> float:
    argv = [sys.executable, "-m", "sitewalk", site.url, "--content", "markdown", "--main-content",
            "--max-depth", "100", "--max-pages", str(max_pages), "--delay", "0", "--deadline", "3600",
            "--max-bytes", "10000000000", "-s", "ROBOTSTXT_OBEY=false",
            "-s", "SITEWALK_GUARD_ALLOW_NETWORKS=127.0.0.1/32", "-s", "LOG_LEVEL=WARNING", "-o", str(out)]
    started = time.monotonic()
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)
    return time.monotonic() - started


def measure(generator: Generator, site: Site, max_pages: int, work: Path, verbose: bool) -> tuple[Score, float]:
    out = work / f"{KEYS_BY_NAME[generator.name]}.jsonl"
    seconds = walk(generator, site, max_pages, out)
    score = Score(examples=[] if verbose else None)
    root = Path(generator.root)
    for line in out.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        if item["status"] != 200 or item["content_type"] != "text/html" or item["content"] is None:
            continue
        path = unquote(urlsplit(item["final_url"]).path)
        source = (root / path.lstrip("/")).resolve()
        if path.endswith("/"):
            source = source / "index.html"
        if source.is_file():
            score_page(source, item["content"], generator, score, path)
    return score, seconds


KEYS_BY_NAME = {SITES[index].name: key for key, index in KEYS.items()}


def table(rows: list[tuple[Generator, Score, float]]) -> str:
    lines = [
        "| generator | package | pages | pages with navigation | article words kept | pages under 98 % | walk s |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for generator, score, seconds in rows:
        nav = score.with_nav / score.pages if score.pages else 0
        kept = score.kept_words / score.article_words if score.article_words else 0
        lines.append(f"| {generator.name} | {generator.package} | {score.pages} | {score.with_nav} ({nav:.1%}) "
                     f"| {kept:.2%} | {score.below} | {seconds:.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help=f"comma-separated sites among {', '.join(KEYS)}")
    parser.add_argument("--max-pages", type=int, default=5000)
    parser.add_argument("--verbose", action="store_true", help="name up to five pages with navigation per site")
    parser.add_argument("--write-results", action="store_true", help=f"write the table into {RESULTS.name}")
    options = parser.parse_args()
    chosen = [SITES[KEYS[key]] for key in options.only.split(",")] if options.only else list(SITES)
    missing = [g.package for g in chosen if not Path(g.root).is_dir()]
    if missing:
        raise SystemExit(f"install {' '.join(missing)} first (apt-get install {' '.join(missing)})")
    # run.py's lock: both serve from benchmarks/.work/nginx, and each stops an nginx left there.
    lock_work()
    sites = [Site(KEYS_BY_NAME[g.name], Path(g.root), g.seed) for g in chosen]
    rows = []
    with tempfile.TemporaryDirectory() as work, nginx(sites):
        for generator, site in zip(chosen, sites, strict=True):
            score, seconds = measure(generator, site, options.max_pages, Path(work), options.verbose)
            rows.append((generator, score, seconds))
            print(f"{generator.name}: {score.pages} pages, {score.with_nav} with navigation, "
                  f"{score.kept_words}/{score.article_words} article words kept", flush=True)
            for example in score.examples or ():
                print(f"    {example}")
    text = table(rows)
    print(text)
    if options.write_results:
        write_results(text, options)


def write_results(text: str, options: argparse.Namespace) -> None:
    heading = "## Main content on seven documentation generators (issue 22)"
    command = "python benchmarks/content.py" + (f" --only {options.only}" if options.only else "")
    section = (f"{heading}\n\nMeasured {time.strftime('%Y-%m-%d')} with `{command}` (definitions in the "
               f"script's docstring):\n\n{text}\n")
    old = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else ""
    start = old.find(heading)
    table_start = old.find("\n|", start)
    if start < 0 or table_start < 0:
        new = old.rstrip("\n") + "\n\n" + section
    else:
        # The heading, its lead and its table only: what follows the table (notes on the pages
        # counted, the speed subsection) is written by hand and stays.
        end = old.find("\n\n", table_start)
        new = old[:start] + section + (old[end + 1:] if end >= 0 else "")
    RESULTS.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    main()
