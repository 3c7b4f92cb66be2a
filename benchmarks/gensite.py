"""A deterministic link-heavy static site: N small HTML pages, ~25 links each, from a seeded RNG.

Page 0 is ``index.html``; page i is ``p<i // 100>/<i>.html`` (three-digit directory). Every page
links to its parent and its four children in a 4-ary tree (so every page is reachable from the
index), to the index, and to random pages until it has ``links`` links. Hrefs are relative
(``../p012/1234.html``, ``1234.html``) or root-relative (``/p012/1234.html``), some with a
``#fragment``, and a page may link to the same target twice, as real pages do. The same
arguments always give the same bytes.

    python benchmarks/gensite.py OUT_DIR [--pages 20000] [--links 25] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from pathlib import Path

__all__ = ["generate", "page_path"]

_WORDS = ["walk", "site", "page", "link", "frontier", "breadth", "first", "origin", "budget", "depth", "crawl", "index", "grep", "extract", "request", "response", "header", "body", "title", "anchor", "fragment", "relative", "absolute", "parent", "child", "tree", "random", "seed", "queue", "scheduler", "parser", "lxml", "twisted", "download", "handler", "middleware", "pipeline", "consumer", "report", "deadline", "bytes", "pages", "limit", "robots", "delay", "loopback", "nginx", "static", "html"]
_STAMP = ".generated.json"


def page_path(i: int) -> str:
    """The site path of page ``i``, without the leading slash."""
    return "index.html" if i == 0 else f"p{i // 100:03d}/{i}.html"


def _href(rng: random.Random, source: int, target: int) -> str:
    path = page_path(target)
    roll = rng.random()
    if roll < 0.2:
        href = "/" + path
    else:
        source_dir = page_path(source).rpartition("/")[0]
        target_dir, _, name = path.rpartition("/")
        if source_dir == target_dir:
            href = name
        elif not source_dir:
            href = path
        else:
            href = "../" + path
    if rng.random() < 0.1:
        href += f"#s{rng.randrange(5)}"
    return href


def _page(rng: random.Random, i: int, pages: int, links: int) -> str:
    targets = [c for c in range(4 * i + 1, 4 * i + 5) if c < pages]
    if i:
        targets += [(i - 1) // 4, 0]
    while len(targets) < links:
        targets.append(rng.randrange(pages))
    rng.shuffle(targets)
    text = " ".join(rng.choice(_WORDS) for _ in range(60))
    items = "\n".join(
        f'<li><a href="{_href(rng, i, t)}">{rng.choice(_WORDS)} {t}</a></li>' for t in targets
    )
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>Page {i}</title>\n</head>\n<body>\n<h1>Page {i}</h1>\n<p>{text}</p>\n"
        f"<ul>\n{items}\n</ul>\n</body>\n</html>\n"
    )


def generate(root: Path, pages: int, links: int = 25, seed: int = 7) -> bool:
    """Write the site under ``root`` unless the same site is already there; True if written."""
    params = {"pages": pages, "links": links, "seed": seed, "version": 1}
    stamp = root / _STAMP
    if stamp.exists() and json.loads(stamp.read_text(encoding="utf-8")) == params:
        return False
    if root.exists():
        shutil.rmtree(root)
    rng = random.Random(seed)
    for i in range(pages):
        path = root / page_path(i)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_page(rng, i, pages, links), encoding="utf-8")
    stamp.write_text(json.dumps(params), encoding="utf-8")
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--links", type=int, default=25)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    written = generate(args.out, args.pages, args.links, args.seed)
    print(f"{args.out}: {args.pages} pages {'written' if written else 'already there'}")


if __name__ == "__main__":
    main()
