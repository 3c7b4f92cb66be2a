"""What a tool's run cost: peak resident memory of its process tree, sampled, and /usr/bin/time's
account of the run."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

TIME = Path("/usr/bin/time")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


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
