"""A local test site: serves pages from a JSON spec and logs every request it receives.

Run as ``python tests/mockserver.py SPEC.json LOG.jsonl [--host 127.0.0.1] [--idle-timeout S]
[--requests-per-connection N] [--reload]``; it binds port 0 and prints its base URL on the first line of stdout.
``--idle-timeout`` closes a kept-alive connection idle that long; ``--requests-per-connection``
answers N requests on a connection and closes it on the next one, unanswered (logged as
``dropped``), as a server that closed an idle connection just as the request arrived; ``--reload`` reads the
spec again when its file changed (a site that changes between two walks on the same origin). The spec maps paths (with query) to pages:

    {"/": {"links": ["/a", "/b"], "title": "Home"},
     "/r": {"status": 301, "headers": {"Location": "/a"}},
     "/slow": {"sleep": 6, "body": "late"},
     "/big": {"size": 100000, "content_type": "text/plain", "chunked": true},
     "/bomb": {"size": 5000000, "gzip": true, "content_type": "text/plain"}}

Page keys: ``status`` (200), ``headers``, ``content_type`` (text/html; charset=utf-8), ``body``
(text; ``{origin}`` and ``{port}`` are replaced by the server's base URL and port), ``links`` (an HTML page linking them,
each a string or ``{"href", "rel", "text"}``), ``title``, ``head`` (extra HTML for <head>),
``size`` (a body of that many bytes), ``gzip`` (send the body gzip-encoded), ``gzip_file`` (the
body is a gzip file, sent as it is: a ``.xml.gz`` sitemap), ``chunked`` (no
Content-Length), ``sleep`` (seconds before answering), ``trickle`` (seconds between 1 KiB
writes), ``encoding`` (of the body text, utf-8), ``raw`` (text sent as the whole answer, then the
connection is closed), ``cut`` (close the connection after that many body bytes), ``close``
(close the connection without answering), ``methods`` (the methods answered, GET and HEAD by
default; another is answered 405), ``before`` (a list of pages answered first, one per
request for the path, before the page itself), ``validators`` (send an ``ETag`` of the body and a
``Last-Modified``, and answer a request that names them, ``If-None-Match`` or
``If-Modified-Since``, 304 Not Modified without a body: logged ``not_modified``). A path not in the spec is a 404. Each log line is JSON: time, method (GET or HEAD: a HEAD is answered as a GET, without the body), path, headers,
``answering`` (how many requests the server was answering at once, this one included), and
``bytes_sent`` is logged on a second line when the body was written; each connection accepted is
logged as ``connection`` (the client's address).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import html
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:  # noqa: N802
        self.logged("GET")

    def do_HEAD(self) -> None:  # noqa: N802
        self.logged("HEAD")

    def logged(self, method: str) -> None:
        answering = self.server.begin()
        try:
            self.server.log({
                "time": time.time(),
                "method": method,
                "path": self.path,
                "headers": dict(self.headers.items()),
                "answering": answering,
            })
            self.answer()
        finally:
            self.server.end()

    def answer(self) -> None:
        answered = getattr(self, "answered", 0)
        limit = self.server.requests_per_connection
        if limit and answered >= limit:
            self.server.log({"time": time.time(), "dropped": self.path})
            self.close_connection = True
            return
        self.answered = answered + 1
        self.server.reload()
        page = self.server.spec.get(self.path)
        if page is not None and page.get("before"):
            # Answers given first, one per request, before the page itself.
            answered_before = self.server.count(self.path)
            if answered_before < len(page["before"]):
                page = page["before"][answered_before]
        if page is None:
            page = {"status": 404, "body": "<html><head><title>Not found</title></head>"
                    "<body>not found <a href='/from-404'>home</a></body></html>"}
        if self.command not in page.get("methods", ("GET", "HEAD")):
            page = {"status": 405, "headers": {"Allow": ", ".join(page["methods"])}, "body": "method not allowed"}
        if page.get("sleep"):
            time.sleep(page["sleep"])
        if page.get("close") or "raw" in page:
            self.wfile.write(page.get("raw", "").encode("latin-1"))
            self.wfile.flush()
            self.close_connection = True
            self.server.log({"time": time.time(), "sent": self.path, "bytes_sent": 0})
            return
        body = self.server.body_of(page)
        if page.get("gzip_file"):
            body = gzip.compress(body)
        status = page.get("status", 200)
        headers = {"Content-Type": page.get("content_type", "text/html; charset=utf-8")}
        headers.update({k: v.replace("{origin}", self.server.origin) for k, v in page.get("headers", {}).items()})
        if page.get("gzip"):
            body = gzip.compress(body, compresslevel=9)
            headers["Content-Encoding"] = "gzip"
        # The ETag of the body before any gzip (whose header holds the time it was made).
        if page.get("validators") and self.not_modified(self.server.body_of(page), headers):
            return
        chunked = page.get("chunked", False)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if chunked:
            self.send_header("Connection", "close")
        else:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "HEAD":
            return
        if "cut" in page:
            body = body[: page["cut"]]
            self.close_connection = True
        sent = 0
        step = 1024 if (chunked or page.get("trickle")) else max(len(body), 1)
        try:
            for start in range(0, len(body), step):
                self.wfile.write(body[start:start + step])
                self.wfile.flush()
                sent += len(body[start:start + step])
                if page.get("trickle"):
                    time.sleep(page["trickle"])
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.server.log({"time": time.time(), "sent": self.path, "bytes_sent": sent})
        if chunked:
            self.close_connection = True

    def not_modified(self, body: bytes, headers: dict[str, str]) -> bool:
        """Validators for ``body`` in ``headers``; a 304 sent (True) when the request's match them."""
        headers["ETag"] = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        headers["Last-Modified"] = _MODIFIED
        if self.headers.get("If-None-Match", self.headers.get("If-Modified-Since")) not in (headers["ETag"], _MODIFIED):
            return False
        self.send_response(304)
        self.send_header("ETag", headers["ETag"])
        self.send_header("Last-Modified", _MODIFIED)
        self.end_headers()
        self.server.log({"time": time.time(), "sent": self.path, "bytes_sent": 0, "not_modified": True})
        return True


# The Last-Modified of every page with validators: its ETag tells a changed body.
_MODIFIED = "Mon, 01 Jan 2024 00:00:00 GMT"


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, spec: dict[str, Any], log_path: Path, requests_per_connection: int = 0,
                 reload_from: Path | None = None) -> None:
        super().__init__((host, 0), Handler)
        self.spec = spec
        self._reload_from = reload_from
        self._loaded = reload_from.stat().st_mtime_ns if reload_from is not None else 0
        self.requests_per_connection = requests_per_connection
        self._log = log_path.open("a", encoding="utf-8")
        self._lock = threading.Lock()
        self.answering = 0
        self._asked: dict[str, int] = {}
        host_part = f"[{host}]" if ":" in host else host
        self.origin = f"http://{host_part}:{self.server_address[1]}"

    def process_request(self, request: Any, client_address: Any) -> None:
        self.log({"time": time.time(), "connection": list(client_address)})
        super().process_request(request, client_address)

    def reload(self) -> None:
        """With --reload: the spec as its file says now."""
        if self._reload_from is None:
            return
        with self._lock:
            changed = self._reload_from.stat().st_mtime_ns
            if changed != self._loaded:
                self.spec, self._loaded = json.loads(self._reload_from.read_text(encoding="utf-8")), changed

    def count(self, path: str) -> int:
        """How many times ``path`` was asked for before this request."""
        with self._lock:
            asked = self._asked.get(path, 0)
            self._asked[path] = asked + 1
            return asked

    def begin(self) -> int:
        """A request arrived: how many the server is answering now, this one included."""
        with self._lock:
            self.answering += 1
            return self.answering

    def end(self) -> None:
        with self._lock:
            self.answering -= 1

    def log(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self._log.write(json.dumps(entry) + "\n")
            self._log.flush()

    def body_of(self, page: dict[str, Any]) -> bytes:
        if "size" in page:
            return (b"0123456789abcdef" * (page["size"] // 16 + 1))[: page["size"]]
        if "links" in page or "title" in page:
            links = []
            for link in page.get("links", []):
                link = {"href": link} if isinstance(link, str) else link
                rel = f' rel="{link["rel"]}"' if "rel" in link else ""
                text = html.escape(link.get("text", link["href"]))
                links.append(f'<a href="{html.escape(link["href"])}"{rel}>{text}</a>')
            title = page.get("title", "")
            text = (
                f"<!DOCTYPE html><html><head><title>{html.escape(title)}</title>{page.get('head', '')}</head>"
                f"<body><h1>{html.escape(title)}</h1>{page.get('body', '')}<ul>"
                + "".join(f"<li>{link}</li>" for link in links)
                + "</ul></body></html>"
            )
        else:
            text = page.get("body", "")
        encoding = page.get("encoding", "utf-8")
        text = text.replace("{origin}", self.origin).replace("{port}", str(self.server_address[1]))
        return text.encode(encoding)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("spec", type=Path)
    parser.add_argument("log", type=Path)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--idle-timeout", type=float, default=None)
    parser.add_argument("--requests-per-connection", type=int, default=0)
    parser.add_argument("--reload", action="store_true")
    args = parser.parse_args()
    # BaseHTTPRequestHandler applies it to each connection's socket: an idle one is closed.
    Handler.timeout = args.idle_timeout
    spec = json.loads(args.spec.read_text(encoding="utf-8"))
    server = Server(args.host, spec, args.log, args.requests_per_connection, args.spec if args.reload else None)
    print(server.origin, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
