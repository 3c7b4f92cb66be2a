"""Benchmark of issue 32: main content on news and blog articles, sitewalk beside trafilatura, on the same pages.

    python benchmarks/articles.py DATA [--out DIR]

DATA is a checkout of the public article extraction benchmark
https://github.com/scrapinghub/article-extraction-benchmark (its ``html/*.html.gz`` pages,
``ground-truth.json`` article bodies and ``evaluate.py``; none of it is in this repository).
Each page is read as sitewalk's ``--content text --main-content`` reads it
(:func:`sitewalk.content.html_content`), as sitewalk's structural rules alone read it (the
main content before articles were told apart), and by trafilatura with its defaults; each
is scored by the set's own ``evaluate.py`` (token 4-gram F1 against the true article body,
averaged over pages), so the numbers compare with those the set publishes. ``--out DIR``
writes each extractor's predictions in the set's format (``DIR/<name>.json``).
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

from selectolax.lexbor import LexborHTMLParser
from w3lib.encoding import html_to_unicode

from sitewalk.content import html_content
from sitewalk.main_content.articles import is_article
from sitewalk.text import visible_lines

SET = "scrapinghub/article-extraction-benchmark"


def _sitewalk(html: str) -> str:
    return html_content(LexborHTMLParser(html), html, "text", main=True)


def _structure_only(html: str) -> str:
    from sitewalk.main_content import main_part

    part = main_part(LexborHTMLParser(html))
    return "\n".join(visible_lines(LexborHTMLParser(part.html or ""))) if part is not None else ""


def _trafilatura(html: str) -> str:
    import trafilatura

    return trafilatura.extract(html, output_format="txt") or ""


EXTRACTORS = {"sitewalk": _sitewalk, "sitewalk rules only": _structure_only, "trafilatura (defaults)": _trafilatura}


def load(data: Path) -> tuple[Any, dict[str, Any], dict[str, str]]:
    """The set's ``evaluate`` module, its ground truth and its pages (decoded as a browser would)."""
    spec = importlib.util.spec_from_file_location("evaluate", data / "evaluate.py")
    if spec is None or spec.loader is None:
        sys.exit(f"no evaluate.py in {data}")
    evaluate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(evaluate)
    truth = json.loads((data / "ground-truth.json").read_text(encoding="utf-8"))
    pages = {}
    for key in truth:
        raw = gzip.decompress((data / "html" / f"{key}.html.gz").read_bytes())
        pages[key] = html_to_unicode(None, raw)[1]
    return evaluate, truth, pages


def score(data: Path, names: tuple[str, ...] = tuple(EXTRACTORS), out: Path | None = None) -> dict[str, dict[str, float]]:
    """Each extractor's F1, precision, recall (by the set's ``evaluate.py``) and ms per page on the set in ``data``."""
    evaluate, truth, pages = load(data)
    results = {}
    for name in names:
        extract = EXTRACTORS[name]
        extract(next(iter(pages.values())))  # imports out of the timing
        started = time.perf_counter()
        predicted: dict[str, Any] = {key: {"articleBody": extract(html)} for key, html in pages.items()}
        elapsed = (time.perf_counter() - started) / len(pages) * 1000
        results[name] = {**evaluate.evaluate(truth, predicted, 1000), "ms": elapsed, "pages": len(pages)}
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / f"{name.split()[0]}{'-rules' if 'rules' in name else ''}.json").write_text(
                json.dumps(predicted, ensure_ascii=False), encoding="utf-8")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="a checkout of scrapinghub/article-extraction-benchmark")
    parser.add_argument("--out", type=Path, help="write each extractor's predictions here")
    options = parser.parse_args()
    _, _, pages = load(options.data)
    articles = sum(is_article(LexborHTMLParser(html)) for html in pages.values())
    print(f"{len(pages)} pages, {articles} of them told apart as articles\n")
    print("| extractor | F1 | precision | recall | ms per page |\n|---|---|---|---|---|")
    for name, scores in score(options.data, out=options.out).items():
        print(f"| {name} | {scores['f1']:.3f} | {scores['precision']:.3f} | {scores['recall']:.3f} | {scores['ms']:.0f} |")


if __name__ == "__main__":
    main()
