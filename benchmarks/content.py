"""Benchmark of issues 22 and 32: main content on seven documentation generators and on news articles, sitewalk beside trafilatura.

    python benchmarks/content.py [--only sphinx,docbook,...] [--articles DATA] [--max-pages N]
                                 [--verbose] [--write-results]

Serves seven documentation sites installed by Debian packages with nginx on loopback (the
pieces of benchmarks/run.py), walks each with ``sitewalk URL --content markdown --main-content``,
reads every HTML page the walk fetched with trafilatura (its defaults: ``trafilatura.extract``,
text), and compares each extractor's content with the page's HTML file, as the generator wrote it:

- **pages with navigation**: the pages whose content still holds any of the site's navigation.
  The navigation of a page is, as ground truth for this measurement only, the blocks its
  generator writes around the article (``nav`` in ``SITES`` below: header and footer bars,
  breadcrumbs, sidebars, prev/next links, search boxes). A block is *held* when one of its runs
  of four consecutive words (the whole block when it has fewer) that the article does not also
  contain appears in the content, in that order. One run is enough: a page either has none of
  its navigation or counts.
- **article words kept**: the words of the article, the generator's article container
  (``article`` in ``SITES``: the first selector that matches) less the navigation blocks in
  it, that the content holds, counted as a multiset (a word twice in the article must be
  there twice), summed over the site's pages.
- **code blocks kept**, **tables kept**: the article's ``<pre>`` blocks and its tables (the
  outermost: a table in a table counts in its own) whose words all appear in the content in
  their order, one after the other; a block's words are its text's as a browser shows it
  (a highlighter's ``<span>6</span><span>e</span>`` is one word).

Words are runs of letters and digits, lower case; the Markdown's link targets and titles
(``](url "title")``), its fences and their languages, the numbers it gives an ordered list's
items ("2. ", which the HTML's text does not hold) and its emphasis and inline code marks
(``*i*th`` is one word, as ``<em>i</em>th`` is) are not words outside code blocks; a code
block's text is taken as it is. sitewalk knows nothing of these selectors: its rules come from
the page's structure (sitewalk/main_content/).

With ``--articles DATA`` (a checkout of the public article extraction benchmark, see
benchmarks/articles.py), the same two extractors are scored on its 181 news and blog pages by
the set's own ``evaluate.py`` (F1, precision, recall), and the table has the set's row too.

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

from articles import SET as ARTICLE_SET
from articles import score as score_articles
from report import head_commit
from selectolax.lexbor import LexborHTMLParser, LexborNode
from server import nginx
from sites import Site, lock_work

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
SITEWALK, TRAFILATURA = "sitewalk", "trafilatura (defaults)"


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
# Inline code and emphasis in a word ("`tsvector`s", "*i*th" for <em>i</em>th) do not split it.
_CODE_SPAN = re.compile(r"`+([^`]*)`+")
_EMPHASIS = re.compile(r"(?<!\\)(\*{1,3})([^*\s](?:[^*]*?[^*\s\\])?)\1")
_FENCE = re.compile(r"^[ \t>]*(```+|~~~+)")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def content_words(content: str) -> list[str]:
    """The words of a page's Markdown, without its link targets, its ordered lists' numbers, its
    fences and their languages; a code block's text is taken as it is."""
    lines = []
    fence = ""  # the open code block's fence, which alone closes it
    for line in content.split("\n"):
        if fence:
            bare = line.strip(" \t>")
            if bare.startswith(fence) and bare == bare[0] * len(bare):
                fence = ""
            else:
                lines.append(line)
        elif opening := _FENCE.match(line):
            fence = opening.group(1)
        else:
            line = _LIST_NUMBER.sub(r"\1", _TARGET.sub("]", line))
            # Inline code as it is (its marks dropped), emphasis marks dropped around the rest.
            spans = iter(_CODE_SPAN.findall(line))
            line = _EMPHASIS.sub(r"\2", _CODE_SPAN.sub("\0", line))
            lines.append("".join(part + next(spans, "") for part in line.split("\0")))
    return words("\n".join(lines))


# Elements that start a block (or a table cell, a line): their text does not run into what
# precedes them; inline elements' (a highlighter's spans) does.
_BLOCKS = frozenset({
    "address", "article", "aside", "blockquote", "br", "caption", "dd", "div", "dl", "dt", "figcaption", "figure",
    "footer", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "ol", "p", "pre", "section", "table",
    "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
})


def block_words(node: LexborNode) -> list[str]:
    """The words of ``node`` as a browser shows its text: ``<span>6</span><span>e</span>`` is one word."""
    parts = []
    for child in node.traverse(include_text=True):
        if child.tag == "-text":
            parts.append(child.text_content or "")
        elif child.tag in _BLOCKS:
            parts.append(" ")
    return words("".join(parts))


def node_words(tree: LexborHTMLParser, selector: str) -> list[list[str]]:
    return [block_words(node) for node in tree.css(selector)]


def runs(tokens: list[str], size: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + size]) for i in range(max(len(tokens) - size + 1, 0))}


@dataclass(frozen=True)
class Truth:
    """What a page's main content should hold (ground truth, from the generator's selectors)."""

    article: list[str]
    navigation: list[list[str]]
    # The words of each <pre> block and of each outermost table of the article.
    code: list[list[str]]
    tables: list[list[str]]


def truth(source: Path, generator: Generator) -> Truth | None:
    """The ground truth of the page in ``source``; None when it has no article."""
    tree = LexborHTMLParser(source.read_bytes())
    for node in tree.css("script, style, a.headerlink"):
        node.decompose()
    navigation = node_words(tree, generator.nav)
    for node in tree.css(generator.nav):
        node.decompose()
    for selector in generator.article:
        parts = tree.css(selector)
        article = [word for node in parts for word in block_words(node)]
        if article:
            break
    else:
        return None
    code: list[list[str]] = []
    tables: list[list[str]] = []
    for part in parts:
        for node in part.css("pre, table"):  # part itself too, when it is one
            if node.tag == "pre" and not _inside(node, "pre", part):
                code.append(block_words(node))
            elif node.tag == "table" and not _inside(node, "table", part):
                tables.append(block_words(node))
    return Truth(article, navigation, [block for block in code if block], [block for block in tables if block])


def _inside(node: LexborNode, tag: str, top: LexborNode) -> bool:
    """Whether ``node`` is within another ``tag`` below ``top`` (a nested table counts in its outer one)."""
    ancestor = node.parent
    while ancestor is not None and ancestor != top:
        if ancestor.tag == tag:
            return True
        ancestor = ancestor.parent
    return False


def _holds(tokens: str, block: list[str]) -> bool:
    """Whether the words of ``block`` appear in ``tokens`` (words joined by spaces, one space at
    each end) in their order, one after the other."""
    return f" {' '.join(block)} " in tokens


@dataclass
class Score:
    pages: int = 0
    with_nav: int = 0
    article_words: int = 0
    kept_words: int = 0
    code_blocks: int = 0
    kept_code: int = 0
    tables: int = 0
    kept_tables: int = 0
    examples: list[str] | None = None

    def add(self, page: Truth, kept_tokens: list[str], url: str) -> None:
        """Score the words of one page's content against its truth (see the module)."""
        self.pages += 1
        wanted = Counter(page.article)
        kept = sum((wanted & Counter(kept_tokens)).values())
        self.article_words += len(page.article)
        self.kept_words += kept
        joined = f" {' '.join(kept_tokens)} "
        self.code_blocks += len(page.code)
        self.kept_code += sum(_holds(joined, block) for block in page.code)
        self.tables += len(page.tables)
        self.kept_tables += sum(_holds(joined, block) for block in page.tables)
        if self.examples is not None:
            for block in page.code + page.tables:
                if not _holds(joined, block) and len(self.examples) < 10:
                    self.examples.append(f"{url}: lost {' '.join(block[:12])}")
        in_article = {size: runs(page.article, size) for size in range(1, RUN + 1)}
        in_content = {size: runs(kept_tokens, size) for size in range(1, RUN + 1)}
        for block in page.navigation:
            size = min(len(block), RUN)
            if size and (runs(block, size) - in_article[size]) & in_content[size]:
                self.with_nav += 1
                if self.examples is not None and len(self.examples) < 10:
                    self.examples.append(f"{url}: navigation {' '.join(block[:12])}")
                break


def walk(generator: Generator, site: Site, max_pages: int, out: Path) -> float:
    argv = [sys.executable, "-m", "sitewalk", site.url, "--content", "markdown", "--main-content",
            "--max-depth", "100", "--max-pages", str(max_pages), "--delay", "0", "--deadline", "3600",
            "--max-bytes", "10000000000", "-s", "ROBOTSTXT_OBEY=false",
            "-s", "SITEWALK_GUARD_ALLOW_NETWORKS=127.0.0.1/32", "-s", "LOG_LEVEL=WARNING", "-o", str(out)]
    started = time.monotonic()
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)
    return time.monotonic() - started


def measure(generator: Generator, site: Site, max_pages: int, work: Path,
            verbose: bool) -> tuple[Score, Score, float, float]:
    """Walk the site with sitewalk, then read each page it fetched with trafilatura; score both.
    Returns sitewalk's score, trafilatura's, the walk's seconds and trafilatura's."""
    import trafilatura

    out = work / f"{KEYS_BY_NAME[generator.name]}.jsonl"
    seconds = walk(generator, site, max_pages, out)
    ours, theirs = Score(examples=[] if verbose else None), Score()
    spent = 0.0
    root = Path(generator.root)
    for line in out.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        if item["status"] != 200 or item["content_type"] != "text/html" or item["content"] is None:
            continue
        path = unquote(urlsplit(item["final_url"]).path)
        source = (root / path.lstrip("/")).resolve()
        if path.endswith("/"):
            source = source / "index.html"
        if not source.is_file():
            continue
        page = truth(source, generator)
        if page is None:
            continue
        ours.add(page, content_words(item["content"]), path)
        started = time.perf_counter()
        # trafilatura with its defaults (text), on the file the walk fetched.
        extracted = trafilatura.extract(source.read_bytes()) or ""
        spent += time.perf_counter() - started
        theirs.add(page, words(extracted), path)
    return ours, theirs, seconds, spent


KEYS_BY_NAME = {SITES[index].name: key for key, index in KEYS.items()}


def _share(part: int, whole: int, digits: int = 1) -> str:
    return f"{part / whole:.{digits}%}" if whole else "–"


def table(rows: list[tuple[Generator, Score, Score]], articles: dict[str, dict[str, float]] | None) -> str:
    """One Markdown table: each documentation site, then the article set; each cell sitewalk / trafilatura."""
    lines = [
        "| site | pages | code blocks | tables | pages with navigation | article words kept | code blocks kept "
        "| tables kept | F1 | precision | recall |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for generator, ours, theirs in rows:
        cells = [
            f"{ours.with_nav} / {theirs.with_nav}",
            f"{_share(ours.kept_words, ours.article_words, 2)} / {_share(theirs.kept_words, theirs.article_words, 2)}",
            f"{_share(ours.kept_code, ours.code_blocks)} / {_share(theirs.kept_code, theirs.code_blocks)}",
            f"{_share(ours.kept_tables, ours.tables)} / {_share(theirs.kept_tables, theirs.tables)}",
        ]
        lines.append(f"| {generator.name}, {generator.package} | {ours.pages} | {ours.code_blocks} | {ours.tables} "
                     f"| {' | '.join(cells)} | – | – | – |")
    if articles is not None:
        ours_a, theirs_a = articles[SITEWALK], articles[TRAFILATURA]
        scores = " | ".join(f"{ours_a[key]:.3f} / {theirs_a[key]:.3f}" for key in ("f1", "precision", "recall"))
        lines.append(f"| news and blog articles, {ARTICLE_SET} | {ours_a['pages']:.0f} | – | – | – | – | – | – "
                     f"| {scores} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help=f"comma-separated sites among {', '.join(KEYS)}")
    parser.add_argument("--articles", type=Path, metavar="DATA",
                        help=f"also score a checkout of {ARTICLE_SET} (benchmarks/articles.py)")
    parser.add_argument("--max-pages", type=int, default=5000)
    parser.add_argument("--verbose", action="store_true",
                        help="name up to ten pages per site with navigation or a code block or table lost")
    parser.add_argument("--write-results", action="store_true", help=f"write the table into {RESULTS.name}")
    options = parser.parse_args()
    chosen = [SITES[KEYS[key]] for key in options.only.split(",")] if options.only else list(SITES)
    missing = [g.package for g in chosen if not Path(g.root).is_dir()]
    if missing:
        raise SystemExit(f"install {' '.join(missing)} first (apt-get install {' '.join(missing)})")
    if options.articles is not None and not (options.articles / "evaluate.py").is_file():
        raise SystemExit(f"--articles {options.articles}: not a checkout of {ARTICLE_SET} (no evaluate.py)")
    # run.py's lock: both serve from benchmarks/.work/nginx, and each stops an nginx left there.
    lock_work()
    sites = [Site(KEYS_BY_NAME[g.name], Path(g.root), g.seed) for g in chosen]
    rows = []
    with tempfile.TemporaryDirectory() as work, nginx(sites):
        for generator, site in zip(chosen, sites, strict=True):
            ours, theirs, seconds, spent = measure(generator, site, options.max_pages, Path(work), options.verbose)
            rows.append((generator, ours, theirs))
            for name, score, time_taken in ((SITEWALK, ours, f"walk {seconds:.0f} s"),
                                            (TRAFILATURA, theirs, f"{spent:.0f} s")):
                print(f"{generator.name}, {name}: {score.pages} pages, {score.with_nav} with navigation, "
                      f"{score.kept_words}/{score.article_words} article words, {score.kept_code}/{score.code_blocks} "
                      f"code blocks, {score.kept_tables}/{score.tables} tables kept; {time_taken}", flush=True)
            for example in ours.examples or ():
                print(f"    {example}")
    articles = None
    if options.articles is not None:
        articles = score_articles(options.articles, (SITEWALK, TRAFILATURA))
    text = table(rows, articles)
    print(text)
    if options.write_results:
        write_results(text, options)


def write_results(text: str, options: argparse.Namespace) -> None:
    """Write the table into RESULTS.md, between its markers (replacing what they held), or at the end."""
    import trafilatura

    begin, end = "<!-- content.py: begin -->", "<!-- content.py: end -->"
    command = "python benchmarks/content.py" + (f" --only {options.only}" if options.only else "")
    if options.articles is not None:
        command += " --articles DATA"
    section = (f"{begin}\n## Main content: documentation and articles, sitewalk / trafilatura (issues 22, 32)\n\n"
               f"Measured {time.strftime('%Y-%m-%d')} with `{command}` at {head_commit()} (DATA: a checkout of "
               f"{ARTICLE_SET}; definitions in the script's docstring). Each cell is sitewalk / trafilatura "
               f"{trafilatura.__version__} with its defaults, on the same pages:\n\n{text}\n{end}")
    old = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else ""
    start, stop = old.find(begin), old.find(end)
    if start >= 0 and stop > start:
        new = old[:start] + section + old[stop + len(end):]
    else:
        new = old.rstrip("\n") + "\n\n" + section + "\n"
    RESULTS.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    main()
