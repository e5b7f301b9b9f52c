"""A throwaway HTTP server on 127.0.0.1 for the tests that read a URL (a /metrics endpoint of their making)."""

import contextlib
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
