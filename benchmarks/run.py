"""Benchmark of issue 7: sitewalk against wget -r and a plain-Scrapy CrawlSpider, on nginx on loopback.

    python benchmarks/run.py [--smoke] [--runs 3] [--only docs|gen20k|grep|memory] [--write-results]
                             [--profile]

Run it with the project's Python (the one that imports sitewalk and Scrapy), as root or with sudo
available: it installs nginx-light, python3.11-doc, wget and time with apt-get when they are
missing. Sites and nginx files live in benchmarks/.work/ (kept between runs; the generated sites
are rebuilt only when their parameters change); each run's output goes to a temporary directory
outside the repository, deleted at the end. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import fcntl
import json
import os
import platform
import pstats
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import gensite

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORK = HERE / ".work"
DOCS_SOURCE = Path("/usr/share/doc/python3.11/html")
TIME = Path("/usr/bin/time")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
# Each program the benchmark runs, and the Debian package that provides it.
PACKAGES = {"nginx": "nginx-light", "wget": "wget", str(TIME): "time"}
DOCS_PACKAGE = "python3.11-doc"

EXPERIMENTS = ("docs", "gen20k", "grep", "memory")
TOOLS = ("wget", "baseline", "sitewalk")
RUN_TIMEOUT = 3600.0
MB = 1024 * 1024


# -- sites and the server


@dataclass
class Site:
    """A directory served by nginx on its own loopback port; ``seed`` is the walk's start path."""

    name: str
    root: Path
    seed: str = "/index.html"
    port: int = 0

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return self.origin + self.seed

    @property
    def access_log(self) -> Path:
        return WORK / "nginx" / f"access-{self.name}.log"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def nginx_config(sites: Sequence[Site]) -> str:
    base = WORK / "nginx"
    temp = "\n".join(
        f"    {kind}_temp_path {base / 'tmp' / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    servers = "\n".join(
        f"""    server {{
        listen 127.0.0.1:{site.port};
        root {site.root};
        access_log {site.access_log} bench;
    }}"""
        for site in sites
    )
    return f"""daemon off;
worker_processes 1;
pid {base / 'nginx.pid'};
error_log {base / 'error.log'} warn;
events {{ worker_connections 256; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    log_format bench '$request_method $request_uri $status $body_bytes_sent $http_user_agent';
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 65;
    keepalive_requests 1000000;
{temp}
{servers}
}}
"""


def _stop_stale_nginx() -> None:
    """A previous run killed hard may have left its nginx (and its ports) behind: stop that one.
    Called with the work directory's lock held, so no running benchmark owns that nginx."""
    pid_file = WORK / "nginx" / "nginx.pid"
    try:
        pid = int(pid_file.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except (OSError, ValueError):
        return
    if "nginx" in cmdline and str(WORK / "nginx" / "nginx.conf") in cmdline:
        os.kill(pid, signal.SIGTERM)
        for _ in range(50):
            if not Path(f"/proc/{pid}").exists():
                break
            time.sleep(0.1)


@contextmanager
def nginx(sites: Sequence[Site]) -> Iterator[None]:
    """Serve ``sites`` (each on a free port) for the duration of the block; stop nginx after it."""
    base = WORK / "nginx"
    _stop_stale_nginx()
    for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (base / "tmp" / kind).mkdir(parents=True, exist_ok=True)
    for site in sites:
        site.port = free_port()
        site.access_log.write_text("")
    conf = base / "nginx.conf"
    conf.write_text(nginx_config(sites))
    error_log = base / "error.log"
    process = subprocess.Popen(
        ["nginx", "-p", str(base), "-e", str(error_log), "-c", str(conf)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # Ctrl-C reaches this script, which then stops nginx itself
    )
    try:
        deadline = time.monotonic() + 10
        for site in sites:
            while True:
                if process.poll() is not None:
                    raise SystemExit(f"nginx did not start; its error log says:\n{error_log.read_text()}")
                try:
                    socket.create_connection(("127.0.0.1", site.port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise SystemExit(f"nginx is not listening on port {site.port} after 10 s") from None
                    time.sleep(0.05)
        yield
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGQUIT)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# -- setup


def _run_as_root(argv: list[str]) -> None:
    if os.geteuid() != 0:
        if shutil.which("sudo") is None:
            raise SystemExit(f"need root to run: {' '.join(argv)}")
        argv = ["sudo", *argv]
    print("+", " ".join(argv), flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(argv, check=True, env=env)


def install(need_docs: bool, packages: dict[str, str] | None = None) -> None:
    """apt-get install what is missing (the programs of PACKAGES, or of ``packages``: program to
    Debian package); apt-get update only if the install fails without it."""
    missing = [package for program, package in (packages or PACKAGES).items() if shutil.which(program) is None]
    if need_docs and not (DOCS_SOURCE / "index.html").exists():
        missing.append(DOCS_PACKAGE)
    if not missing:
        return
    command = ["apt-get", "install", "-y", "--no-install-recommends", *missing]
    try:
        _run_as_root(command)
    except subprocess.CalledProcessError:
        _run_as_root(["apt-get", "update"])
        _run_as_root(command)


def check_python() -> None:
    try:
        import scrapy  # noqa: F401

        import sitewalk  # noqa: F401
    except ImportError as exc:
        raise SystemExit(
            f"{sys.executable} cannot import {exc.name}: run this script with the project's Python, "
            "e.g. .venv/bin/python benchmarks/run.py"
        ) from None


def lock_work() -> None:
    """Take the work directory's lock until this process exits: one benchmark at a time uses its
    nginx files and ports."""
    WORK.mkdir(parents=True, exist_ok=True)
    lock = open(WORK / "lock", "w")  # noqa: SIM115 - held (and locked) until the process exits
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SystemExit(f"another benchmark is running (it holds {WORK / 'lock'})") from None
    _LOCKS.append(lock)


# The open lock files (a lock is released when its file is closed).
_LOCKS: list[object] = []


def prepare_docs() -> Path:
    target = WORK / "sites" / "docs"
    if not (target / "index.html").exists():
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        print(f"copying {DOCS_SOURCE} (symlinks dereferenced)", flush=True)
        subprocess.run(["cp", "-rL", str(DOCS_SOURCE), str(target)], check=True)
    return target


def prepare_generated(name: str, pages: int) -> Path:
    target = WORK / "sites" / name
    if gensite.generate(target, pages):
        print(f"generated {name}: {pages} pages", flush=True)
    return target


# -- one measured run


@dataclass
class Run:
    """One tool's run over one site, as the server and /usr/bin/time saw it."""

    work: str
    tool: str
    wall: float
    rss_kb: int
    paths: list[str]
    exit_status: int
    report: dict | None = None  # sitewalk's report JSON
    cpu: float = 0.0  # user + system seconds of the tool and the processes it waited for

    @property
    def pages(self) -> int:
        return len(self.paths)


def parse_time_v(text: str) -> tuple[int, int, float]:
    """(peak RSS in kB, exit status, CPU seconds: user + system) from /usr/bin/time -v output."""
    rss = status = -1
    cpu = 0.0
    for line in text.splitlines():
        key, _, value = line.strip().rpartition(": ")
        if key == "Maximum resident set size (kbytes)":
            rss = int(value)
        elif key == "Exit status":
            status = int(value)
        elif key in ("User time (seconds)", "System time (seconds)"):
            cpu += float(value)
    return rss, status, cpu


def tree_rss_kb(root: int) -> int:
    """Resident memory of ``root``'s descendants (not ``root``: /usr/bin/time), in kB."""
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            if pid != root:
                total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_KB
        except (OSError, ValueError, IndexError):
            continue
        stack.extend(int(child) for child in children)
    return total


def wait_sampling_rss(process: subprocess.Popen[bytes], timeout: float) -> int:
    """Wait for ``process`` (/usr/bin/time running a tool), sampling the resident memory of the
    tool's whole process tree every 20 ms; return the largest sum seen, in kB."""
    deadline = time.monotonic() + timeout
    peak = 0
    while process.poll() is None:
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(process.args, timeout)
        peak = max(peak, tree_rss_kb(process.pid))
        time.sleep(0.02)
    return peak


def measure(work: str, tool: str, site: Site, argv: list[str], run_dir: Path, agent: str,
            env: dict[str, str], ok_status: Sequence[int] = (0,)) -> Run:
    """Run ``argv`` and count the requests it sent: those of the access log with its User-Agent
    (anything else that walks the same nginx meanwhile is not counted)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    time_file = run_dir / "time.txt"
    offset = site.access_log.stat().st_size
    with open(run_dir / "stdout.txt", "wb") as out, open(run_dir / "stderr.txt", "wb") as err:
        started = time.perf_counter()
        # A session of its own, so that an interrupt can end the tool as well as /usr/bin/time.
        process = subprocess.Popen([str(TIME), "-v", "-o", str(time_file), *argv], cwd=run_dir, env=env,
                                   stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
        try:
            tree_kb = wait_sampling_rss(process, RUN_TIMEOUT)
        except BaseException:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
        wall = time.perf_counter() - started
    rss_kb, status, cpu = parse_time_v(time_file.read_text())
    # /usr/bin/time reports the largest process; a tool with helper processes is their sum.
    rss_kb = max(rss_kb, tree_kb)
    with open(site.access_log, "rb") as log:
        log.seek(offset)
        lines = log.read().decode("utf-8", "replace").splitlines()
    fields = [line.split(" ", 4) for line in lines]
    paths = [f[1] for f in fields if len(f) == 5 and f[4] == agent]
    if not paths and fields:
        # The tool did not send the User-Agent it was given: count every request of the run.
        print(f"  ({tool} did not send User-Agent {agent!r}: counting all {len(fields)} requests)")
        paths = [f[1] for f in fields if len(f) >= 2]
    report_file = run_dir / "report.json"
    report = json.loads(report_file.read_text()) if report_file.exists() else None
    run = Run(work, tool, wall, rss_kb, paths, status, report, cpu)
    flag = "" if status in ok_status else f"  FAILED (exit {status}): {_tail(run_dir / 'stderr.txt')}"
    if report is not None and report.get("fetched") != run.pages:
        flag += f"  (its report says {report.get('fetched')} pages, stopped: {report.get('stopped')})"
    print(f"  {work:<14} {tool:<16} {wall:8.2f} s  {cpu:7.2f} s CPU  {run.pages:6d} requests  {rss_kb / 1024:7.1f} MB{flag}",
          flush=True)
    return run


def _tail(path: Path, lines: int = 5) -> str:
    return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])


class Tools:
    """The command lines of the three tools; every run gets a fresh directory under ``tmp``."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self._count = 0
        base_env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
        self.plain_env = base_env
        self.sitewalk_env = {**base_env, "SCRAPY_SETTINGS_MODULE": "sitewalk.settings"}

    def next_run(self, tool: str) -> tuple[Path, str]:
        """A fresh directory and a User-Agent of its own for the next run."""
        self._count += 1
        return self.tmp / f"{self._count:03d}-{tool}", f"sitewalk-bench/{self._count} ({tool})"

    def wget(self, work: str, site: Site) -> Run:
        run_dir, agent = self.next_run("wget")
        argv = ["wget", "-r", "-l", "inf", "-nd", "-np", "--delete-after", "-q", "-e", "robots=off",
                "-U", agent, site.url]
        # wget exits 8 when the server answered some request with an error (a broken link).
        return measure(work, "wget", site, argv, run_dir, agent, self.plain_env, ok_status=(0, 8))

    def wget2(self, work: str, site: Site, threads: int, tool: str = "wget2") -> Run:
        """wget2 with the options of :meth:`wget`, ``threads`` downloads at once."""
        run_dir, agent = self.next_run("wget2")
        argv = ["wget2", "-r", "-l", "inf", "-nd", "-np", "--delete-after", "-q", "--no-robots",
                f"--max-threads={threads}", "-U", agent, site.url]
        return measure(work, tool, site, argv, run_dir, agent, self.plain_env, ok_status=(0, 8))

    def baseline(self, work: str, site: Site) -> Run:
        run_dir, agent = self.next_run("baseline")
        argv = [sys.executable, "-m", "scrapy", "runspider", str(HERE / "baseline.py"), "-a", f"url={site.url}",
                "-s", "LOG_LEVEL=WARNING", "-s", f"USER_AGENT={agent}", "-O", "out.jsonl"]
        return measure(work, "baseline", site, argv, run_dir, agent, self.plain_env)

    def sitewalk_argv(self, site: Site, agent: str, max_pages: int = 100_000, extra: Sequence[str] = ()) -> list[str]:
        return [
            "-m", "scrapy", "crawl", "sitewalk", "-a", f"seed={site.url}", "-a", "max_depth=100",
            "-a", f"max_pages={max_pages}", "-a", "delay=0", "-a", "deadline=3600",
            "-a", "max_bytes=10000000000", "-a", "report=report.json", *extra,
            "-s", "ROBOTSTXT_OBEY=false", "-s", "SITEWALK_GUARD_ALLOW_NETWORKS=127.0.0.1/32",
            "-s", "LOG_LEVEL=WARNING", "-s", f"USER_AGENT={agent}", "-O", "out.jsonl",
        ]

    def sitewalk(self, work: str, site: Site, tool: str = "sitewalk", max_pages: int = 100_000,
                 extra: Sequence[str] = ()) -> Run:
        run_dir, agent = self.next_run("sitewalk")
        argv = [sys.executable, *self.sitewalk_argv(site, agent, max_pages, extra)]
        return measure(work, tool, site, argv, run_dir, agent, self.sitewalk_env)


# -- experiments


@dataclass
class Results:
    runs: list[Run] = field(default_factory=list)

    def of(self, work: str, tool: str) -> list[Run]:
        return [r for r in self.runs if r.work == work and r.tool == tool]

    def median(self, work: str, tool: str, attr: str) -> float | None:
        runs = self.of(work, tool)
        if not runs:
            return None
        return float(statistics.median(getattr(r, attr) for r in runs))


def rounds(tools: Sequence[str], runs: int) -> Iterator[str]:
    """Each round runs every tool once; the order rotates so that no tool always goes first."""
    for round_ in range(runs):
        shift = round_ % len(tools)
        yield from (*tools[shift:], *tools[:shift])


def compare(results: Results, tools: Tools, work: str, site: Site, runs: int) -> None:
    print(f"{work}: wget, baseline, sitewalk from {site.url}", flush=True)
    for tool in rounds(TOOLS, runs):
        if tool == "wget":
            results.runs.append(tools.wget(work, site))
        elif tool == "baseline":
            results.runs.append(tools.baseline(work, site))
        else:
            results.runs.append(tools.sitewalk(work, site))


def grep_vs_index(results: Results, tools: Tools, work: str, site: Site, pattern: str, runs: int) -> None:
    """Index mode against grep mode at the default max_matches, with ``pattern`` (plain text, which
    it never reaches) and the same pattern as a regular expression (its first letter as a class)."""
    regex = f"[{pattern[0]}]{pattern[1:]}"
    print(f"{work}: sitewalk index vs grep={pattern!r} and grep={regex!r} (default max_matches)", flush=True)
    extras = {"sitewalk index": [], "sitewalk grep": ["-a", f"grep={pattern}"], "sitewalk grep-regex": ["-a", f"grep={regex}"],
              # The index walk again, keeping its JOBDIR journal (in the run's own directory).
              "sitewalk index-jobdir": ["-s", "JOBDIR=job"],
              # The index walk with each page's content as Markdown (html-to-markdown, beside the walk).
              "sitewalk index-markdown": ["-a", "content=markdown"],
              # The same, main content only, and main content saved as files (issue 22).
              "sitewalk index-main": ["-a", "content=markdown", "-a", "main_content=true"],
              "sitewalk index-save": ["-a", "save_dir=saved", "-a", "main_content=true"]}
    for tool in rounds(tuple(extras), runs):
        results.runs.append(tools.sitewalk(work, site, tool=tool, extra=extras[tool]))


def memory(results: Results, tools: Tools, full_sites: dict[int, Site], limited: Site, runs: int,
           reuse: str | None) -> None:
    """Full walks of sites of growing size (known URLs = pages), and max_pages-limited walks of the
    largest site (where nearly every URL is known after a few hundred pages: links are random)."""
    largest = max(full_sites)
    print(f"memory: full walks of {sorted(full_sites)} pages; {limited.name} limited by max_pages", flush=True)
    smallest = full_sites[min(full_sites)]
    for _ in range(runs):
        # The floor: start-up plus one page (and the ~25 URLs it links to).
        results.runs.append(tools.sitewalk("mem limit 1", smallest, max_pages=1))
        for pages, site in sorted(full_sites.items()):
            if pages == largest and reuse and results.of(reuse, "sitewalk"):
                continue
            results.runs.append(tools.sitewalk(f"mem full {pages}", site))
        for pages in sorted(full_sites):
            if pages != largest:
                results.runs.append(tools.sitewalk(f"mem limit {pages}", limited, max_pages=pages))
    if reuse and results.of(reuse, "sitewalk"):
        for run in results.of(reuse, "sitewalk"):
            results.runs.append(Run(f"mem full {largest}", "sitewalk", run.wall, run.rss_kb, run.paths,
                                    run.exit_status, run.report, run.cpu))


def profile(tools: Tools, site: Site) -> str:
    """Profile one sitewalk walk of ``site`` with cProfile; the top entries as text."""
    out = WORK / "sitewalk.prof"
    run_dir, agent = tools.next_run("profile")
    argv = [sys.executable, "-m", "cProfile", "-o", str(out), *tools.sitewalk_argv(site, agent)]
    run = measure("profile", "sitewalk+cProfile", site, argv, run_dir, agent, tools.sitewalk_env)
    text = [f"cProfile of one sitewalk walk of {site.url}: {run.wall:.2f} s wall, {run.pages} requests "
            f"(profile in {out.relative_to(REPO)})"]
    for key in ("cumulative", "tottime"):
        stream = _Capture()
        stats = pstats.Stats(str(out), stream=stream)  # type: ignore[arg-type]
        stats.strip_dirs().sort_stats(key).print_stats(30)
        text.append(f"\n### top 30 by {key}\n" + stream.text())
    return "\n".join(text)


class _Capture:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> None:
        self.parts.append(text)

    def text(self) -> str:
        lines = "".join(self.parts).splitlines()
        start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
        return "\n".join(lines[start:])


# -- the report


def head_commit() -> str:
    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or "?"


def machine_facts(start_commit: str) -> list[str]:
    import scrapy
    import twisted

    import sitewalk

    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        kb = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
        mem = f"{kb / MB:.1f} GB"
    except (OSError, IndexError, ValueError):
        pass

    def first_line(argv: list[str]) -> str:
        try:
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
        except OSError:
            return "?"
        return (done.stdout or done.stderr).strip().splitlines()[0] if (done.stdout or done.stderr) else "?"

    commit = head_commit()
    if commit != start_commit:
        # The runs import the working tree as it is when each starts.
        commit = f"{start_commit}, then {commit} (commits landed during the run)"
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return [
        f"- date: {datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {os.cpu_count()} CPUs ({cpu}), {mem} RAM, {platform.system()} {platform.release()}",
        f"- load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        f"- Python {platform.python_version()}, Scrapy {scrapy.__version__}, Twisted {twisted.__version__}, "
        f"sitewalk {sitewalk.__version__} at {commit}{' with local changes' if dirty else ''}",
        f"- {first_line(['nginx', '-v'])}, {first_line(['wget', '--version'])}",
    ]


def write_results(script: str, text: str) -> None:
    """Put ``text`` in RESULTS.md as the section of ``script``, between its markers, keeping the
    sections other scripts wrote; a script's first section goes at the end."""
    path = HERE / "RESULTS.md"
    begin, end = f"<!-- {script}: begin -->", f"<!-- {script}: end -->"
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    block = f"{begin}\n{text}\n{end}\n"
    if begin in old and end in old:
        head, _, rest = old.partition(begin)
        tail = rest.partition(end)[2].lstrip("\n")
        new = head + block + ("\n" + tail if tail else "")
    else:
        new = (old.rstrip("\n") + "\n\n" if old.strip() else "") + block
    path.write_text(new, encoding="utf-8")
    print(f"\nwrote {path.relative_to(REPO)}")


def _fmt(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def main_table(results: Results, works: Sequence[str]) -> list[str]:
    lines = [
        "| work | tool | runs | median wall s | pages | pages/s | peak RSS MB | × wget | × baseline |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for work in works:
        wget = results.median(work, "wget", "wall")
        base = results.median(work, "baseline", "wall")
        for tool in TOOLS:
            runs = results.of(work, tool)
            if not runs:
                continue
            wall = results.median(work, tool, "wall")
            pages = results.median(work, tool, "pages")
            rss = results.median(work, tool, "rss_kb")
            assert wall is not None and pages is not None and rss is not None
            lines.append(
                f"| {work} | {tool} | {len(runs)} | {wall:.2f} | {pages:.0f} | {pages / wall:.0f} | "
                f"{rss / 1024:.1f} | {_fmt(wall / wget if wget else None, '.2f')} | "
                f"{_fmt(wall / base if base else None, '.3f')} |"
            )
    return lines


def grep_table(results: Results, work: str) -> list[str]:
    lines = ["| work | mode | runs | median wall s | pages | peak RSS MB | × index |", "|---|---|---|---|---|---|---|"]
    index = results.median(work, "sitewalk index", "wall")
    for tool in ("sitewalk index", "sitewalk grep", "sitewalk grep-regex", "sitewalk index-jobdir",
                 "sitewalk index-markdown"):
        runs = results.of(work, tool)
        if runs:
            wall = results.median(work, tool, "wall") or 0.0
            lines.append(
                f"| {work} | {tool.split()[1]} | {len(runs)} | {wall:.2f} | "
                f"{results.median(work, tool, 'pages'):.0f} | {(results.median(work, tool, 'rss_kb') or 0) / 1024:.1f} | "
                f"{_fmt(wall / index if index else None, '.2f')} |"
            )
    return lines


def _known(run: Run) -> int:
    if run.report is None:
        return run.pages
    return int(run.report.get("fetched", 0)) + len(run.report.get("unvisited", []))


def memory_table(results: Results) -> list[str]:
    lines = [
        "| walk | runs | pages fetched | known URLs | median wall s | peak RSS MB | RSS / known URL | "
        "(RSS − floor) / known URL |",
        "|---|---|---|---|---|---|---|---|",
    ]
    floor_runs = results.of("mem limit 1", "sitewalk")
    floor = statistics.median(r.rss_kb for r in floor_runs) * 1024 if floor_runs else None
    floor_known = int(statistics.median(_known(r) for r in floor_runs)) if floor_runs else 0
    points: list[tuple[int, float]] = []
    works = sorted({r.work for r in results.runs if r.work.startswith("mem ")},
                   key=lambda w: (w.split()[1], int(w.split()[2])))
    for work in works:
        runs = results.of(work, "sitewalk")
        rss = statistics.median(r.rss_kb for r in runs) * 1024
        known = int(statistics.median(_known(r) for r in runs))
        fetched = int(statistics.median(r.pages for r in runs))
        wall = statistics.median(r.wall for r in runs)
        if not known:
            lines.append(f"| {work[4:]} | {len(runs)} | {fetched} | 0 | {wall:.2f} | {rss / MB:.1f} | – | – |")
            continue
        above = "–"
        if floor is not None and known > floor_known:
            above = f"{(rss - floor) / (known - floor_known):.0f} B"
        if work.startswith("mem full"):
            points.append((known, rss))
        lines.append(f"| {work[4:]} | {len(runs)} | {fetched} | {known} | {wall:.2f} | {rss / MB:.1f} | "
                     f"{rss / known / 1024:.1f} kB | {above} |")
    if len(points) >= 2:
        (k0, r0), (k1, r1) = points[0], points[-1]
        if k1 != k0:
            lines.append("")
            lines.append(f"Marginal memory per known URL (full walks, {k0} → {k1} URLs): "
                         f"{(r1 - r0) / (k1 - k0):.0f} bytes.")
    return lines


# What wget -r fetches because a page embeds it (<link>, <script>, <img>), not because it links to it.
RESOURCE_EXTENSIONS = frozenset({"css", "js", "png", "jpg", "jpeg", "gif", "svg", "ico", "webp", "woff", "woff2", "xml"})


def _is_resource(path: str) -> bool:
    name = path.split("?", 1)[0].rsplit("/", 1)[-1]
    return "." in name and name.rsplit(".", 1)[1].lower() in RESOURCE_EXTENSIONS


def wget_pages(results: Results, work: str) -> set[str] | None:
    """Paths wget fetched in its first run, less embedded resources (stylesheets, scripts, images)."""
    runs = results.of(work, "wget")
    return {p for p in runs[0].paths if not _is_resource(p)} if runs else None


def same_pages(results: Results, work: str, tool: str) -> bool:
    runs = results.of(work, tool)
    reference = wget_pages(results, work)
    return bool(runs) and reference is not None and all(set(r.paths) == reference for r in runs)


def set_comparison(results: Results, work: str) -> list[str]:
    """How each tool's set of requested paths differs from wget's."""
    wget_runs = results.of(work, "wget")
    if not wget_runs:
        return []
    everything = set(wget_runs[0].paths)
    reference = wget_pages(results, work)
    assert reference is not None
    resources = len(everything) - len(reference)
    lines = []
    if resources:
        lines.append(f"- {work}: wget fetched {len(everything)} paths, {resources} of them resources that pages "
                     f"embed ({', '.join(sorted(everything - reference)[:3])}, ...), which walkers that follow "
                     f"links do not fetch; compared below: the other {len(reference)}")
    for tool in ("baseline", "sitewalk"):
        runs = results.of(work, tool)
        if not runs:
            continue
        got = set(runs[0].paths)
        varied = any(set(r.paths) != got for r in runs[1:])
        stable = " (differs between runs!)" if varied else ""
        dupes = runs[0].pages - len(got)
        dup_note = f"; {dupes} path(s) requested twice" if dupes else ""
        if got == reference:
            lines.append(f"- {work}: {tool} fetched the same {len(got)} paths as wget{stable}{dup_note}")
            continue
        only_tool = sorted(got - reference)
        only_wget = sorted(reference - got)
        lines.append(
            f"- {work}: {tool} fetched {len(got)} paths: "
            f"{len(only_wget)} fetched only by wget ({', '.join(only_wget[:5]) or '–'}), "
            f"{len(only_tool)} only by {tool} ({', '.join(only_tool[:5]) or '–'}){stable}{dup_note}"
        )
    return lines


def verdicts(results: Results, docs: str, gen: str, grep_work: str, smoke: bool) -> list[str]:
    lines = []
    note = " (smoke site: not the target's measurement)" if smoke else ""

    def mark(ok: bool) -> str:
        return "**met**" if ok else "**not met**"

    sw = results.median(docs, "sitewalk", "wall")
    wget = results.median(docs, "wget", "wall")
    base = results.median(docs, "baseline", "wall")
    if sw and wget:
        same = same_pages(results, docs, "sitewalk")
        lines.append(
            f"- {docs}: sitewalk / wget = {sw / wget:.2f} (target ≤ 1.0): {mark(sw / wget <= 1.0)}; "
            f"speed-up over baseline {(base or 0) / sw:.1f}× (target ≥ 12×); "
            f"same pages as wget (embedded resources aside): {mark(same)}{note}"
        )
    sw = results.median(gen, "sitewalk", "wall")
    base = results.median(gen, "baseline", "wall")
    if sw and base:
        sw_pps = (results.median(gen, "sitewalk", "pages") or 0) / sw
        base_pps = (results.median(gen, "baseline", "pages") or 0) / base
        rss = (results.median(gen, "sitewalk", "rss_kb") or 0) / 1024
        lines.append(
            f"- {gen}: sitewalk {sw_pps:.0f} pages/s vs baseline {base_pps:.0f} pages/s = "
            f"{sw_pps / base_pps:.2f}× (target ≥ 2×): {mark(sw_pps / base_pps >= 2)}; "
            f"peak RSS {rss:.1f} MB (target ≤ 100 MB): {mark(rss <= 100)}; "
            f"same pages as wget: {mark(same_pages(results, gen, 'sitewalk'))}{note}"
        )
    index = results.median(grep_work, "sitewalk index", "wall")
    grep = results.median(grep_work, "sitewalk grep", "wall")
    if index and grep:
        lines.append(f"- {grep_work}: grep / index = {grep / index:.2f} (target ≤ 1.5): "
                     f"{mark(grep / index <= 1.5)}{note}")
    markdown = results.median(grep_work, "sitewalk index-markdown", "wall")
    if index and markdown:
        lines.append(f"- {grep_work}: index with content=markdown / index = {markdown / index:.2f} (target ≤ 2.0): "
                     f"{mark(markdown / index <= 2.0)}{note}")
    for tool, what in (("index-main", "content=markdown main_content"), ("index-save", "save_dir main_content")):
        wall = results.median(grep_work, f"sitewalk {tool}", "wall")
        if index and wall:
            lines.append(f"- {grep_work}: index with {what} / index = {wall / index:.2f} (target ≤ 2.0): "
                         f"{mark(wall / index <= 2.0)}{note}")
    jobdir = results.median(grep_work, "sitewalk index-jobdir", "wall")
    if index and jobdir:
        lines.append(f"- {grep_work}: index with JOBDIR / index = {jobdir / index:.2f} (target ≤ 1.05): "
                     f"{mark(jobdir / index <= 1.05)}{note}")
    return lines


def failures(results: Results) -> list[str]:
    # wget and wget2 exit 8 when the server answered some request with an error (a broken link).
    bad = [r for r in results.runs if r.exit_status not in ((0, 8) if r.tool.split()[0] in ("wget", "wget2") else (0,))]
    return [f"- {r.work} {r.tool}: exit status {r.exit_status}" for r in bad]


# -- main


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt



def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a tiny generated site, one run each (< 60 s)")
    parser.add_argument("--runs", type=int, default=3, help="runs per tool (medians are reported); default 3")
    parser.add_argument("--only", choices=EXPERIMENTS, action="append", help="run only this experiment (repeatable)")
    parser.add_argument("--write-results", action="store_true", help="also write benchmarks/RESULTS.md")
    parser.add_argument("--profile", action="store_true", help="also profile one sitewalk walk of the docs")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    experiments = set(args.only or EXPERIMENTS)
    runs = 1 if args.smoke else args.runs
    check_python()
    # nginx lives in /usr/sbin, which a non-root PATH may lack.
    os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    need_docs = not args.smoke and bool(experiments & {"docs", "grep"} or args.profile)
    install(need_docs)
    lock_work()

    docs_site: Site | None
    grep_site: Site | None
    gen_site: Site | None
    full_sizes: dict[int, Site | None]
    if args.smoke:
        small = Site("smoke", prepare_generated("smoke", 200))
        sites = {"smoke": small, "smoke50": Site("smoke50", prepare_generated("smoke50", 50))}
        docs_site, gen_site, grep_site = None, small, small
        gen_work, docs_work, grep_work, pattern = "smoke 200", "docs", "smoke grep", "frontier"
        full_sizes = {50: sites["smoke50"], 200: small}
    else:
        sites = {}
        if experiments & {"docs", "grep"} or args.profile:
            sites["docs"] = Site("docs", prepare_docs())
        if experiments & {"gen20k", "memory"}:
            sites["gen20k"] = Site("gen20k", prepare_generated("gen20k", 20_000))
        if "memory" in experiments:
            sites["gen5k"] = Site("gen5k", prepare_generated("gen5k", 5_000))
            sites["gen10k"] = Site("gen10k", prepare_generated("gen10k", 10_000))
        docs_site, gen_site, grep_site = sites.get("docs"), sites.get("gen20k"), sites.get("docs")
        gen_work, docs_work, grep_work, pattern = "gen20k", "docs", "docs grep", "Mersenne"
        full_sizes = {5_000: sites.get("gen5k"), 10_000: sites.get("gen10k"), 20_000: gen_site}

    # A SIGTERM (e.g. from a CI timeout) stops nginx as Ctrl-C does.
    signal.signal(signal.SIGTERM, _interrupt)
    results = Results()
    start_commit = head_commit()
    profile_text = ""
    tmp = Path(tempfile.mkdtemp(prefix="sitewalk-bench-"))
    try:
        with nginx(list(sites.values())):
            tools = Tools(tmp)
            if "docs" in experiments and docs_site is not None:
                compare(results, tools, docs_work, docs_site, runs)
            if "gen20k" in experiments and gen_site is not None:
                compare(results, tools, gen_work, gen_site, runs)
            if "grep" in experiments and grep_site is not None:
                grep_vs_index(results, tools, grep_work, grep_site, pattern, runs)
            if "memory" in experiments and gen_site is not None:
                full = {n: s for n, s in full_sizes.items() if s is not None}
                reuse = gen_work if "gen20k" in experiments else None
                memory(results, tools, full, gen_site, runs, reuse)
            if args.profile:
                profile_site = docs_site or gen_site
                assert profile_site is not None
                profile_text = profile(tools, profile_site)
    except KeyboardInterrupt:
        print("interrupted: nginx stopped", file=sys.stderr)
        return 130
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        # The raw runs, for a second look (or a report that failed to render).
        raw = [dataclasses.asdict(run) for run in results.runs]
        (WORK / "last-runs.json").write_text(json.dumps(raw), encoding="utf-8")

    title = "smoke run (tiny site, not a measurement)" if args.smoke else f"medians of {runs} run(s) per tool"
    out = [f"# sitewalk benchmark: {title}", "", *machine_facts(start_commit), "",
           "Wall time includes process start-up; pages = requests the server logged during the run. "
           "Other processes share this machine's CPUs, so times are noisy: compare ratios within one run.", ""]
    works = [w for w in (docs_work, gen_work) if results.of(w, "wget") or results.of(w, "sitewalk")]
    if works:
        out += ["## Whole-site walks", "", *main_table(results, works), ""]
        for work in works:
            out += set_comparison(results, work)
        out.append("")
    if results.of(grep_work, "sitewalk grep"):
        out += [f"## grep vs index (grep={pattern!r}; grep-regex: the same pattern as a regular expression; "
                "index-jobdir: the index walk keeping its JOBDIR journal; index-markdown: with content=markdown; "
                "index-main: with content=markdown and main_content; index-save: with save_dir and main_content)", "",
                *grep_table(results, grep_work), "",
                "A plain-text pattern lets the walk tell, from a page's source, that the page cannot match, "
                "so the next page downloads while it is read; a regular expression makes each page wait until "
                "its lines are read and counted (sitewalk.text.Absence).", ""]
    if any(r.work.startswith("mem ") for r in results.runs):
        out += ["## Memory", "", *memory_table(results), ""]
    out += ["## Targets", "", *verdicts(results, docs_work, gen_work, grep_work, args.smoke), ""]
    bad = failures(results)
    if bad:
        out += ["## Failed runs", "", *bad, ""]
    text = "\n".join(out)
    print("\n" + text)
    if profile_text:
        print("\n## Profile\n\n" + profile_text)
    if args.write_results:
        write_results("run.py", text)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
