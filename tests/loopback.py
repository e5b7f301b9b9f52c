"""A throwaway HTTP server on 127.0.0.1 for the tests that read a URL (a /metrics endpoint of their making)."""

import contextlib
import socket
import threading
import time
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


# --- servers that lie: raw bytes on a socket, for what http.server would never send ------------------------------

def _answer(conn: socket.socket, mode: str, body: bytes) -> None:
    """Read the request line (enough to know a GET came) and answer as `mode` says."""
    conn.settimeout(5)
    try:
        conn.recv(65536)
    except OSError:
        return
    ok = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
    if mode == "silent":  # accepts, never answers
        time.sleep(30)
    elif mode == "close":  # closes without a word
        return
    elif mode == "not_http":  # an SSH banner, as a port mix-up gives
        conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
    elif mode == "http09":  # HTTP/0.9: the body alone, no status line
        conn.sendall(body)
    elif mode == "bad_status":
        conn.sendall(b"HTTP/1.1 abc Weird\r\n\r\n")
    elif mode == "many_headers":  # past http.client's 100
        conn.sendall(ok + b"".join(b"X-%d: y\r\n" % i for i in range(150)) + b"\r\n" + body)
    elif mode == "long_header":  # a 64 KiB header line
        conn.sendall(ok + b"X-Long: " + b"y" * 70_000 + b"\r\n\r\n" + body)
    elif mode == "short":  # Content-Length promises more than comes
        conn.sendall(ok + b"Content-Length: %d\r\n\r\n" % (len(body) + 1000) + body)
    elif mode == "short_chunked":  # a chunk cut off
        conn.sendall(ok + b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n" % (len(body) + 1000) + body)
    elif mode == "binary":
        conn.sendall(ok + b"Content-Length: 8\r\n\r\n\x00\x01\x02\x03\xff\xfe\x00\x00")
    elif mode == "huge_length":  # announces more than any /metrics page
        conn.sendall(ok + b"Content-Length: 99999999999\r\n\r\n" + body)
    elif mode.startswith("trickle"):  # one byte every N seconds ("trickle:0.25"), never done (read to the close)
        every = float(mode.partition(":")[2] or 2)
        conn.sendall(ok + b"Connection: close\r\n\r\n")
        for i in range(10_000):
            time.sleep(every)
            conn.sendall(body[i % max(len(body), 1):][:1] or b"#")
    elif mode == "redirect_loop":
        conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: /metrics\r\nContent-Length: 0\r\n\r\n")
    elif mode == "error_500":
        conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n")
    else:  # "ok": a well-formed answer
        conn.sendall(ok + b"Content-Length: %d\r\n\r\n" % len(body) + body)


MODES = ("silent", "close", "not_http", "http09", "bad_status", "many_headers", "long_header", "short",
         "short_chunked", "binary", "huge_length", "trickle:0.25", "redirect_loop", "error_500")


@contextlib.contextmanager
def lying(mode: str, body: bytes = b"# HELP x y\n"):
    """A loopback server answering every connection as `mode` says (MODES, or "ok"); yields its base URL. Errors
    on its side (the client hung up) are swallowed: only the client's view is under test."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            threading.Thread(target=_handle, args=(conn,), daemon=True).start()

    def _handle(conn):
        with conn:
            try:
                _answer(conn, mode, body)
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(2)
        server.close()
