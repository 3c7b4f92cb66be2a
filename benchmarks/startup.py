"""Start-up (issue 34): from exec to the first request a one-page walk sends, as the server sees it.

    python benchmarks/startup.py [--runs 7] [--imports] [--write-results]

Each run execs a command against a one-page site that a server in this process serves on
loopback: the clock starts just before the exec and stops when the server reads the first
request's line (robots.txt, for a walk that obeys it). The CPU the process spent until then is read
from /proc/<pid>/stat as that request arrives (Linux's clock ticks, 10 ms); the CPU of the whole
run (one page, then the report and the exit) is getrusage(RUSAGE_CHILDREN) around it. Runs of the
commands alternate; the table gives medians. ``--imports`` also runs the walk once under
``python -X importtime`` and lists its costliest imports. run.py runs it too (``--only startup``,
and in ``--smoke``).
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from experiments import rounds
from sites import HERE

# The target for the sitewalk command: at most this many seconds from exec to the first request.
TARGET_WALL = 0.35
TARGET_CPU = 0.30
TICK = os.sysconf("SC_CLK_TCK")
_ABOUT = ("From the exec of each command to the first request the server read (robots.txt), on loopback, "
          "a one-page site; CPU until then read from /proc as the request arrived; sitewalk's modules compiled "
          "to bytecode first, as installing it does. Commands: `sitewalk URL "
          "--max-pages 1`, `scrapy crawl sitewalk -a seed=URL -a max_pages=1`, and Scrapy alone fetching the page "
          "(`scrapy runspider benchmarks/floor.py`), each allowed loopback, outside any project.")
PAGE = b'<html><head><title>one</title></head><body><a href="/next.html">next</a></body></html>'


@dataclass
class Start:
    """One run of one command: seconds from exec to its first request, CPU seconds until then
    (None where /proc is missing), and for the whole run."""

    tool: str
    first_request: float
    cpu_at_first: float | None
    wall: float
    cpu: float
    status: int


class _Site(ThreadingHTTPServer):
    """A one-page site on 127.0.0.1 that notes when the first request of the current run arrives
    and the CPU its sender had spent by then."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.pid = 0
        self.first: tuple[float, float | None] | None = None
        self.lock = threading.Lock()

    def arrived(self) -> None:
        now = time.perf_counter()
        with self.lock:
            if self.first is None:
                self.first = (now, _cpu_of(self.pid))


class _Handler(BaseHTTPRequestHandler):
    server: _Site

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.server.arrived()
        found = self.path in ("/", "/next.html")
        body = PAGE if found else b"not found"
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "text/html" if found else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's name)
        pass


def _cpu_of(pid: int) -> float | None:
    """User + system seconds ``pid`` has spent so far (with the children it waited for)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    # After the command's name: state is field 3, utime..cstime fields 14-17.
    return sum(int(value) for value in fields[11:15]) / TICK


def _scripts() -> Path:
    return Path(sys.executable).parent


def commands(url: str, floor_paths: Path) -> dict[str, list[str]]:
    """The commands measured: the sitewalk command (the target's), ``scrapy crawl sitewalk``, and
    Scrapy alone fetching the one page (benchmarks/floor.py), all outside any project."""
    sitewalk = _scripts() / "sitewalk"
    walk = [str(sitewalk)] if sitewalk.exists() else [sys.executable, "-m", "sitewalk"]
    origin = url.rstrip("/")
    return {
        "sitewalk": [*walk, url, "--max-pages", "1", "--allow-networks", "127.0.0.1/32"],
        "scrapy crawl sitewalk": [sys.executable, "-m", "scrapy", "crawl", "sitewalk", "-a", f"seed={url}",
                                  "-a", "max_pages=1", "-s", "SITEWALK_GUARD_ALLOW_NETWORKS=127.0.0.1/32"],
        "scrapy floor": [sys.executable, "-m", "scrapy", "runspider", str(HERE / "floor.py"), "-a", f"base={origin}",
                         "-a", f"paths={floor_paths}", "-s", "LOG_LEVEL=WARNING"],
    }


def _env(tool: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    if tool == "scrapy crawl sitewalk":
        env["SCRAPY_SETTINGS_MODULE"] = "sitewalk.settings"
    return env


def run_once(site: _Site, tool: str, argv: list[str], cwd: Path) -> Start:
    site.first = None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, env=_env(tool), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    site.pid = process.pid
    _, err = process.communicate(timeout=120)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if process.returncode != 0 or site.first is None:
        print(f"  {tool}: exit {process.returncode}, {'a' if site.first else 'no'} request: "
              f"{err.decode(errors='replace').strip()[-300:]}", file=sys.stderr)
    first, cpu_at_first = site.first or (float("nan"), None)
    return Start(tool, first - started, cpu_at_first, wall, cpu, process.returncode)


@dataclass
class Summary:
    """The medians of one command's runs."""

    tool: str
    runs: int
    first_request: float
    cpu_at_first: float | None
    wall: float
    cpu: float
    failed: int


def summarise(starts: Sequence[Start]) -> list[Summary]:
    out = []
    for tool in dict.fromkeys(s.tool for s in starts):
        mine = [s for s in starts if s.tool == tool]
        cpus = [s.cpu_at_first for s in mine if s.cpu_at_first is not None]
        out.append(Summary(
            tool, len(mine), statistics.median(s.first_request for s in mine),
            statistics.median(cpus) if cpus else None,
            statistics.median(s.wall for s in mine), statistics.median(s.cpu for s in mine),
            sum(1 for s in mine if s.status != 0),
        ))
    return out


def compile_sitewalk() -> None:
    """Compile sitewalk's modules to bytecode, as installing it from a wheel does. An editable
    install under PYTHONDONTWRITEBYTECODE (as CI's and the development machines' are) would
    otherwise compile all of them from source on every start: 0.1-0.25 s of CPU here, which no
    installed sitewalk spends. The files go to ``__pycache__`` beside the sources (git-ignored)."""
    import sitewalk

    compileall.compile_dir(Path(sitewalk.__file__).parent, quiet=1)


def measure_startup(runs: int, tools: Sequence[str] | None = None) -> list[Summary]:
    """``runs`` rounds of the commands (all, or ``tools``), in an order that rotates between rounds."""
    compile_sitewalk()
    site = _Site()
    threading.Thread(target=site.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{site.server_address[1]}/"
    starts: list[Start] = []
    try:
        with tempfile.TemporaryDirectory(prefix="sitewalk-startup-") as tmp:
            cwd = Path(tmp)
            floor_paths = cwd / "paths.txt"
            floor_paths.write_text("/\n", encoding="utf-8")
            argvs = commands(url, floor_paths)
            chosen = list(tools or argvs)
            print(f"start-up: {', '.join(chosen)}, {runs} round(s), against {url}", flush=True)
            for tool in rounds(chosen, runs):
                start = run_once(site, tool, argvs[tool], cwd)
                at_first = f"{start.cpu_at_first:5.2f} s CPU" if start.cpu_at_first is not None else "  ? s CPU"
                print(f"  {tool:<22} first request {start.first_request:5.2f} s, {at_first};"
                      f" whole run {start.wall:5.2f} s, {start.cpu:5.2f} s CPU", flush=True)
                starts.append(start)
    finally:
        site.shutdown()
        site.server_close()
    return summarise(starts)


def table(summaries: Sequence[Summary]) -> list[str]:
    lines = ["| command | exec → first request | CPU until then | one-page walk, whole | its CPU | runs |",
             "|---|---|---|---|---|---|"]
    for s in summaries:
        cpu = f"{s.cpu_at_first:.2f} s" if s.cpu_at_first is not None else "?"
        failed = f" ({s.failed} failed)" if s.failed else ""
        lines.append(f"| {s.tool} | {s.first_request:.3f} s | {cpu} | {s.wall:.2f} s | {s.cpu:.2f} s | {s.runs}{failed} |")
    return lines


def verdicts(summaries: Sequence[Summary], smoke: bool = False) -> list[str]:
    note = " (smoke run: few runs, not the target's measurement)" if smoke else ""
    lines = []
    for s in summaries:
        if s.tool != "sitewalk":
            continue
        met = s.first_request <= TARGET_WALL
        lines.append(f"- start-up: sitewalk exec → first request = {s.first_request:.3f} s (target ≤ {TARGET_WALL} s): "
                     f"{'**met**' if met else '**not met**'}{note}")
        if s.cpu_at_first is not None:
            met = s.cpu_at_first <= TARGET_CPU
            lines.append(f"- start-up: sitewalk CPU until the first request = {s.cpu_at_first:.2f} s "
                         f"(target ≤ {TARGET_CPU} s): {'**met**' if met else '**not met**'}{note}")
    return lines


def import_profile(top: int = 15) -> list[str]:
    """The walk once under ``python -X importtime``: its ``top`` costliest imports, each with the
    import that first asked for it (cumulative milliseconds; importtime's own overhead included)."""
    compile_sitewalk()
    site = _Site()
    threading.Thread(target=site.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{site.server_address[1]}/"
    try:
        with tempfile.TemporaryDirectory(prefix="sitewalk-startup-") as tmp:
            argv = [sys.executable, "-X", "importtime", "-m", "sitewalk", url, "--max-pages", "1",
                    "--allow-networks", "127.0.0.1/32"]
            done = subprocess.run(argv, cwd=tmp, env=_env("sitewalk"), stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    finally:
        site.shutdown()
        site.server_close()
    rows = list(_importtime_rows(done.stderr))
    total = sum(cumulative for _, cumulative, depth, _ in rows if depth == 0)
    lines = [f"{len(rows)} modules in importtime's list, {total / 1000:.0f} ms in their imports (importtime's own cost "
             "included; it leaves out the modules Scrapy loads with importlib.import_module, whose own imports show at the "
             "top); the costliest imports at the top of their chain:", "", "| ms | module |", "|---|---|"]
    heads = sorted(((cumulative, name) for _, cumulative, depth, name in rows if depth == 0), reverse=True)
    lines += [f"| {cumulative / 1000:.0f} | {name} |" for cumulative, name in heads[:top]]
    return lines


def _importtime_rows(stderr: str) -> Iterator[tuple[int, int, int, str]]:
    """(self µs, cumulative µs, depth, module) of each line ``-X importtime`` wrote."""
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, cumulative, name = line.split(":", 1)[1].split("|", 2)
        stripped = name.lstrip(" ")
        yield int(own), int(cumulative), (len(name) - len(stripped) - 1) // 2, stripped.strip()


def section(runs: int, smoke: bool) -> tuple[list[str], list[str]]:
    """run.py's start-up section (the sitewalk command only in a smoke run) and its targets' lines."""
    summaries = measure_startup(runs, ["sitewalk"] if smoke else None)
    lines = [f"## Start-up (issue 34): medians of {runs} run(s)", "", _ABOUT, "", *table(summaries), ""]
    return lines, verdicts(summaries, smoke)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="rounds of the commands (medians are reported); default 7")
    parser.add_argument("--only", choices=("sitewalk", "scrapy crawl sitewalk", "scrapy floor"), action="append",
                        help="measure only this command (repeatable)")
    parser.add_argument("--imports", action="store_true", help="also list the walk's costliest imports")
    parser.add_argument("--write-results", action="store_true", help="also write its section of benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    summaries = measure_startup(args.runs, args.only)
    out = [f"# Start-up (issue 34): medians of {args.runs} run(s)", "", *_facts(), "", _ABOUT, "",
           *table(summaries), ""]
    if args.imports:
        out += ["## Imports of the sitewalk command", "", *import_profile(), ""]
    out += ["## Targets", "", *verdicts(summaries), ""]
    text = "\n".join(out)
    print("\n" + text)
    if args.write_results:
        from report import write_results

        write_results("startup.py", text)
    return 1 if any(s.failed for s in summaries) else 0


def _facts() -> list[str]:
    from report import head_commit, machine_facts

    # machine_facts ends with the nginx and wget versions, which this script does not use.
    return machine_facts(head_commit())[:-1]


if __name__ == "__main__":
    sys.exit(main())
