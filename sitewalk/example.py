"""The built-in example site on loopback, and a real walk of it (``sitewalk-example``)."""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from pathlib import Path

__all__ = ["main", "serve"]

_SITE = Path(str(files("sitewalk") / "example_site"))
_REDIRECTS = {"/moved.html": "/faq.html"}


class _Handler(SimpleHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        target = _REDIRECTS.get(self.path)
        if target is not None:
            self.send_response(301)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        sys.stderr.write(f"example site: {self.command} {self.path} -> {args[1] if len(args) > 1 else ''}\n")


def serve(host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """Start serving the example site in a daemon thread; ``server.server_address`` has the port."""
    server = ThreadingHTTPServer((host, port), partial(_Handler, directory=str(_SITE)))
    threading.Thread(target=server.serve_forever, name="sitewalk-example-site", daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sitewalk-example",
        description="Serve sitewalk's built-in example site on loopback and walk it with the sitewalk command.",
    )
    parser.add_argument("--serve", action="store_true", help="only serve the site (until Ctrl-C) and print its URL")
    parser.add_argument("--port", type=int, default=0, help="port to serve on (default: a free one)")
    options = parser.parse_args(argv)
    server = serve(port=options.port)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    if options.serve:
        print(url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            return 0
    with tempfile.TemporaryDirectory(prefix="sitewalk-example-") as workdir:
        pages, report = Path(workdir) / "pages.jsonl", Path(workdir) / "report.json"
        arguments = [
            url, "--max-depth", "2", "--delay", "0.05", "--report", "report.json", "-o", "pages.jsonl",
            # The example site is on loopback, which the address guard refuses unless allowed.
            "-s", "SITEWALK_GUARD_ALLOW_NETWORKS=127.0.0.1/32",
        ]
        print("$ " + shlex.join([_command_name(), *arguments]), flush=True)
        status = subprocess.run([sys.executable, "-m", "sitewalk", *arguments], cwd=workdir, check=False).returncode
        if status != 0:
            return status
        print("\n# index (pages.jsonl)")
        for line in pages.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            print(f"{entry['depth']}  {entry['status']}  {entry['byte_count']:>5} bytes  {entry['final_url']}  {entry['title'] or ''}")
        print("\n# report (report.json)")
        print(json.dumps(json.loads(report.read_text(encoding="utf-8")), indent=2))
    print(
        f"\n# To run the command yourself, serve the site on the same port in another terminal:\n"
        f"$ {shlex.join([_command_name('sitewalk-example'), '--serve', '--port', str(server.server_address[1])])}"
    )
    server.shutdown()
    return 0


def _command_name(name: str = "sitewalk") -> str:
    """How to call this environment's console script ``name`` from here: by name when PATH finds
    it, else by its path (relative when it lies below the current directory, as .venv/bin/ does)."""
    script = Path(sys.executable).parent / name
    if shutil.which(name) == str(script):
        return name
    if script.is_relative_to(Path.cwd()):
        return str(script.relative_to(Path.cwd()))
    return str(script)


if __name__ == "__main__":
    raise SystemExit(main())
