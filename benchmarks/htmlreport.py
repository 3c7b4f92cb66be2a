"""How large the HTML report of a 20,000-page walk is, how long it takes to write, and how long
headless Chromium takes to open it and sort its broken links (issue 23).

Run from the repository root with the project's Python: ``.venv/bin/python benchmarks/htmlreport.py``
(``--pages N``, ``--links N`` per page). The walk is synthetic (no HTTP): a LinkBook filled as the
spider fills it, so only the report's own cost is measured. Needs Debian's ``chromium`` for the
browser part (``.ci/run`` installs it); without it, that part is skipped.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

from sitewalk.config import WalkConfig
from sitewalk.htmlreport import write_html
from sitewalk.items import Report
from sitewalk.linkreport import LinkBook

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]
ORIGIN = "https://site.example"


def synthetic_walk(pages: int, links: int) -> tuple[Report, LinkBook]:
    """A walk of ``pages`` pages, each with ``links`` links (a few to 404s), 5% of them redirects."""
    rng = random.Random(23)
    book = LinkBook()
    broken = [f"{ORIGIN}/gone/{n}" for n in range(max(pages // 100, 1))]
    for number in range(pages):
        url = f"{ORIGIN}/p/{number}"
        status = 404 if number < len(broken) else 200
        final = url + "/" if number % 20 == 0 else url
        meta = {"download_latency": rng.random(), "redirect_urls": [url] if final != url else [],
                "redirect_reasons": [301] if final != url else []}
        page = SimpleNamespace(url=broken[number] if status == 404 else url, final_url=final, status=status,
                               depth=min(number.bit_length() // 3, 6), byte_count=rng.randrange(2_000, 200_000),
                               title=f"Page {number} <of the site>")
        targets = [f"{ORIGIN}/p/{rng.randrange(pages)}" for _ in range(links - 2)] + rng.sample(broken, 1) + [f"https://other.example/{number}"]
        book.page_fetched(page, targets, meta)  # type: ignore[arg-type]  # a Page's fields, without its body
    report = Report(seed=f"{ORIGIN}/", origin=ORIGIN, fetched=pages, stopped="max-pages",
                    unvisited=[f"{ORIGIN}/u/{n}" for n in range(pages // 4)], bytes=pages * 50_000, elapsed_s=900.0)
    report.broken_links = book.broken(book.verdicts(report.failures))
    return report, book


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--links", type=int, default=50)
    options = parser.parse_args()
    started = time.perf_counter()
    synthetic_walk(options.pages, options.links)
    recorded = time.perf_counter() - started
    # Again, to count the memory (tracemalloc slows it down several times).
    tracemalloc.start()
    report, book = synthetic_walk(options.pages, options.links)
    memory = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    print(f"{options.pages} pages x {options.links} links: recorded in {recorded:.2f}s, "
          f"report data {memory / 1e6:.1f} MB, {len(report.broken_links)} broken URLs")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "walk.html"
        started = time.perf_counter()
        write_html(str(path), report, book, WalkConfig(seed=f"{ORIGIN}/"))
        print(f"written in {time.perf_counter() - started:.2f}s: {path.stat().st_size / 1e3:.0f} kB")
        if not CHROMIUM.exists():
            print("no chromium: the browser's time is not measured")
            return 0
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            page = browser.new_page()
            empty = Path(directory) / "empty.html"
            empty.write_text("<!DOCTYPE html><title>empty</title>", encoding="utf-8")
            started = time.perf_counter()
            page.goto(empty.as_uri(), wait_until="load")
            print(f"an empty page opens in {time.perf_counter() - started:.2f}s (this machine's floor)")
            started = time.perf_counter()
            page.goto(path.as_uri(), wait_until="load")
            opened = time.perf_counter() - started
            # Measured in the page: the click's handler, then the layout it causes.
            sorted_in = page.evaluate("""() => {
                const started = performance.now();
                document.querySelectorAll("#broken-links th")[4].click();
                document.body.offsetHeight;
                return (performance.now() - started) / 1000;
            }""")
            browser.close()
        print(f"opened in chromium in {opened:.2f}s; broken links sorted in {sorted_in:.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
