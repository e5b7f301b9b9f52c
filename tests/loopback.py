"""A throwaway HTTP server on 127.0.0.1 for the tests that read a URL (a /metrics endpoint of their making)."""

import contextlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]):
    """`handler` on a free loopback port, in a thread; yields its base URL, and stops it on the way out."""
    httpd = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def page(body: bytes, at: str | None = None) -> type[BaseHTTPRequestHandler]:
    """A handler answering GET `at` (every path when None) with `body` as Prometheus text, as vLLM's /metrics
    does, and any other path with a 404."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            found = at is None or self.path == at
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body if found else b"not here")

        def log_message(self, *args):  # no access log in the tests' output
            pass

    return Page


def serving_page(body: bytes, at: str | None = None):
    """`page(body, at)` served on loopback: a context manager yielding its base URL."""
    return serving(page(body, at))


def closed_port() -> int:
    """A loopback port nobody listens on: bound, noted, closed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
