"""What a walk imports: only what its options use (issue 34). Start-up time itself is measured in
benchmarks/startup.py, not here; which modules load is deterministic, and is what these check."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import LOOPBACK, clean_environment

SITE = {
    "/": {"title": "Home", "links": ["/a"]},
    "/a": {"title": "A"},
}

# Modules of options a plain walk does not use (rendering, MCP, link checking, the HTML report,
# save_dir, sitemaps, the JOBDIR journal, Markdown), test utilities, and pydantic (which
# itemadapter would import: sitewalk.cli._items_without_pydantic).
NOT_IN_A_PLAIN_WALK = (
    "sitewalk.render", "sitewalk.mcp", "sitewalk.linkcheck", "sitewalk.htmlreport", "sitewalk.htmlassets",
    "sitewalk.savedir", "sitewalk.sitemaps", "sitewalk.journal", "sitewalk.main_content",
    "playwright", "mcp", "html_to_markdown", "scrapy.utils.test", "unittest", "twisted.conch", "aiohttp",
    "pydantic",
)


# Runs ``python -m sitewalk ARGS`` and, as the process exits, writes the names in sys.modules to the
# file named first. (``-X importtime`` would miss the modules Scrapy loads with importlib.import_module.)
_WRAPPER = """
import atexit, pathlib, runpy, sys
out = pathlib.Path(sys.argv.pop(1))
atexit.register(lambda: out.write_text("\\n".join(sys.modules)))
sys.argv[0] = "sitewalk"
runpy.run_module("sitewalk", run_name="__main__", alter_sys=True)
"""


def imported(*args: str, cwd: Path) -> tuple[set[str], str]:
    """The modules a ``sitewalk ARGS`` process has imported when it ends, and its stdout; run as a
    process of its own: the tests' fork server has modules loaded already."""
    listing = cwd / "modules.txt"
    command = [sys.executable, "-c", _WRAPPER, str(listing), *args,
               "--allow-networks", LOOPBACK["SITEWALK_GUARD_ALLOW_NETWORKS"]]
    result = subprocess.run(command, cwd=cwd, env=clean_environment(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return set(listing.read_text().split()), result.stdout


def loaded(modules: set[str], name: str) -> bool:
    return any(module == name or module.startswith(name + ".") for module in modules)


def test_a_plain_walk_imports_none_of_the_options_it_does_not_use(make_site, tmp_path):
    site = make_site(SITE)
    modules, stdout = imported(site("/"), "--max-pages", "1", cwd=tmp_path)
    assert site.paths() == ["/"]
    # The walk ran in this process, and its feed exporter wrote its item without pydantic.
    assert [(item["url"], item["title"]) for item in map(json.loads, stdout.splitlines())] == [(site("/"), "Home")]
    assert [name for name in NOT_IN_A_PLAIN_WALK if loaded(modules, name)] == []


def test_a_walk_imports_the_options_it_uses(make_site, tmp_path):
    site = make_site(SITE)
    modules, _ = imported(
        site("/"), "--check-links", "--html-report", "r.html", "--save-dir", "saved", "--sitemap",
        "--jobdir", "job", "--main-content", "--content", "markdown", cwd=tmp_path,
    )
    assert (tmp_path / "r.html").exists() and (tmp_path / "saved").is_dir()
    wanted = ("sitewalk.linkcheck", "sitewalk.htmlreport", "sitewalk.savedir", "sitewalk.sitemaps", "sitewalk.journal")
    assert [name for name in wanted if not loaded(modules, name)] == []
