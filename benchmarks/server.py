"""nginx's lifecycle: the benchmark's sites served on free loopback ports for the duration of a block,
and stopped after it, on Ctrl-C and on SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from sites import WORK, Site


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
            stop(process, signal.SIGQUIT)


def stop(process: subprocess.Popen[str] | subprocess.Popen[bytes], signum: int) -> None:
    """Send ``signum`` (the process's own way to stop) and wait; kill it after 10 s."""
    process.send_signal(signum)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def stop_on_sigterm() -> None:
    """A SIGTERM (e.g. from a CI timeout) stops nginx as Ctrl-C does: both raise KeyboardInterrupt."""
    signal.signal(signal.SIGTERM, _interrupt)
