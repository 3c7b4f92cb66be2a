"""What the benchmarks need on the machine: Debian packages (installed with apt-get when missing)
and the project's Python."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from rss import TIME
from sites import DOCS_SOURCE

# Each program the benchmark runs, and the Debian package that provides it.
PACKAGES = {"nginx": "nginx-light", "wget": "wget", str(TIME): "time"}
DOCS_PACKAGE = "python3.11-doc"


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
