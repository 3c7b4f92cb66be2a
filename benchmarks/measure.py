"""One measured run of a tool over a site (wall time, CPU, peak RSS, the requests nginx logged), the
tools' command lines, and the runs so far."""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rss import TIME, parse_time_v, wait_sampling_rss
from sites import HERE, Site

RUN_TIMEOUT = 3600.0

# Runs ``python -m scrapy ARGS`` (sys.argv[1:]) in this process and, as it exits, writes to CPU_FILE
# the CPU seconds (user + system) of this process and of the children it waited for: the walk's
# own process and its page-reading helpers (which it waits for when it closes), apart.
CPU_FILE = "cpu.json"
CPU_SPLIT = (
    "import atexit, json, resource, runpy, sys\n"
    "def _cpu(who):\n"
    "    usage = resource.getrusage(who)\n"
    "    return usage.ru_utime + usage.ru_stime\n"
    "def _write():\n"
    f"    with open({CPU_FILE!r}, 'w') as out:\n"
    "        json.dump([_cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)], out)\n"
    "atexit.register(_write)\n"
    "sys.argv[0] = 'scrapy'\n"
    "runpy.run_module('scrapy', run_name='__main__', alter_sys=True)\n"
)


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
    # sitewalk's runs: CPU seconds of the walk's own process, and of the processes it waited for
    # (its page-reading helpers), each read by the process itself as it exits (CPU_SPLIT).
    cpu_walk: float | None = None
    cpu_helpers: float | None = None

    @property
    def pages(self) -> int:
        return len(self.paths)


@dataclass
class Results:
    """Every run so far, and their medians by work and tool."""

    runs: list[Run] = field(default_factory=list)

    def of(self, work: str, tool: str) -> list[Run]:
        return [r for r in self.runs if r.work == work and r.tool == tool]

    def median(self, work: str, tool: str, attr: str) -> float | None:
        runs = self.of(work, tool)
        if not runs:
            return None
        return float(statistics.median(getattr(r, attr) for r in runs))


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
    split_file = run_dir / CPU_FILE
    cpu_walk, cpu_helpers = json.loads(split_file.read_text()) if split_file.exists() else (None, None)
    run = Run(work, tool, wall, rss_kb, paths, status, report, cpu, cpu_walk, cpu_helpers)
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

    def floor(self, work: str, site: Site, paths: Path, concurrency: int, tool: str, extra: Sequence[str] = ()) -> Run:
        """Scrapy fetching the pages in ``paths`` (one path a line) from ``site``, ``concurrency`` at
        a time, reading nothing (benchmarks/floor.py): what any Scrapy-based walker costs at least;
        ``extra``: more of its arguments (``-s NAME=VALUE``)."""
        run_dir, agent = self.next_run("floor")
        argv = [sys.executable, "-m", "scrapy", "runspider", str(HERE / "floor.py"), "-a", f"base={site.origin}",
                "-a", f"paths={paths}", "-s", f"CONCURRENT_REQUESTS={concurrency}",
                "-s", f"CONCURRENT_REQUESTS_PER_DOMAIN={concurrency}", "-s", "LOG_LEVEL=WARNING",
                "-s", f"USER_AGENT={agent}", "-O", "out.jsonl", *extra]
        return measure(work, tool, site, argv, run_dir, agent, self.plain_env)

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
        scrapy_argv = self.sitewalk_argv(site, agent, max_pages, extra)
        assert scrapy_argv[:2] == ["-m", "scrapy"]
        argv = [sys.executable, "-c", CPU_SPLIT, *scrapy_argv[2:]]
        return measure(work, tool, site, argv, run_dir, agent, self.sitewalk_env)
