"""One GET of a URL the user named (a vLLM server's /metrics), bounded: one deadline for the whole answer (name
lookup, connection, headers and body together), a cap on its size, and every way it can fail one InputError line.

A socket timeout bounds each read, not the answer: a server sending one byte a second is never timed out. So the
GET runs in a worker thread that the caller waits for until the deadline; past it the worker's sockets are shut
(which ends the worker) and the caller is told. http.client refuses what no HTTP server sends (a status line that
is not HTTP/1.x, as HTTP/0.9 and non-HTTP answers have; a header line over 64 KiB; over 100 headers; a chunked body
cut short); an answer shorter than its Content-Length is refused here, as no saved window may hold half a scrape.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from advisor.errors import InputError
from advisor.fileio.json_input import shown_size

# A healthy /metrics answers in milliseconds (~100-300 kB, one engine); past this the server is down, overloaded or
# not answering in full.
TIMEOUT_S = 10.0


def checked_url(url: str) -> str:
    """`url` when it is an http(s) URL with a host and a valid port; else one InputError saying what is wrong."""
    bad = next((c for c in url if c.isspace() or not c.isprintable()), None)
    if bad is not None:
        raise InputError(f"{url!r} holds {bad!r}: a URL has no spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:  # "Invalid IPv6 URL", a port that is not a number or past 65535
        raise InputError(f"{url} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise InputError(f"{url} is not an http:// or https:// URL")
    if not parts.hostname:
        raise InputError(f"{url} names no host: give http://HOST:PORT")
    if port == 0:
        raise InputError(f"{url}: port 0 is not a port a server listens on")
    return url


def _recording(sockets: list):
    """An opener whose connections note their sockets in `sockets`, so the caller can shut them at the deadline."""
    class Connection(http.client.HTTPConnection):
        def connect(self):
            super().connect()
            sockets.append(self.sock)

    class SecureConnection(http.client.HTTPSConnection):
        def connect(self):
            super().connect()
            sockets.append(self.sock)

    class Plain(urllib.request.HTTPHandler):
        def http_open(self, req):
            return self.do_open(Connection, req)

    class Secure(urllib.request.HTTPSHandler):
        def https_open(self, req):
            return self.do_open(SecureConnection, req, context=getattr(self, "_context", None))

    return urllib.request.build_opener(Plain(), Secure())


def _fetch(url: str, timeout_s: float, max_bytes: int, sockets: list) -> bytes:
    with _recording(sockets).open(url, timeout=timeout_s) as response:
        declared = response.headers.get("Content-Length")
        if declared is not None and declared.strip().isdigit() and int(declared) > max_bytes:
            raise _TooLarge
        body = response.read(max_bytes + 1)
        if len(body) > max_bytes:
            raise _TooLarge
        missing = getattr(response, "length", None)  # http.client counts down what Content-Length promised
        if missing:
            raise http.client.IncompleteRead(body, missing)
        return body


class _TooLarge(Exception):
    pass


def get(url: str, *, max_bytes: int, timeout_s: float = TIMEOUT_S, what: str = "a vLLM server's /metrics") -> bytes:
    """The body of a GET of `url`, whole, within `timeout_s` seconds and at most `max_bytes`; else one InputError."""
    checked_url(url)
    sockets: list = []
    result: dict = {}

    def work():
        try:
            result["body"] = _fetch(url, timeout_s, max_bytes, sockets)
        except BaseException as exc:  # handed to the caller's thread, which says it in one line
            result["error"] = exc

    worker = threading.Thread(target=work, name=f"GET {url}", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        raise InputError(f"{url} did not send its whole answer within {timeout_s:g} s: is it {what}, and is it "
                         "overloaded?")
    if "error" in result:
        raise InputError(" ".join(_said(url, result["error"], max_bytes, what).split())) from None  # one line
    return result["body"]


def _said(url: str, exc: BaseException, max_bytes: int, what: str) -> str:
    """One line for whatever ended the GET early."""
    if isinstance(exc, _TooLarge):
        return f"{url} sent more than {shown_size(max_bytes)}: that is not {what}"
    if isinstance(exc, urllib.error.HTTPError):
        return f"{url} answered HTTP {exc.code} {exc.reason}: is this {what}?"
    if isinstance(exc, urllib.error.URLError):
        exc = exc.reason if isinstance(exc.reason, BaseException) else OSError(str(exc.reason))
    if isinstance(exc, http.client.IncompleteRead):
        return (f"{url} cut its answer short ({len(exc.partial)} bytes of the "
                f"{len(exc.partial) + (exc.expected or 0)} it announced): nothing of it is used")
    if isinstance(exc, http.client.LineTooLong):
        return f"{url} sent a header line over 64 KiB: that is not {what}"
    if isinstance(exc, http.client.RemoteDisconnected):
        return f"{url} closed the connection without answering: is it {what}?"
    if isinstance(exc, http.client.BadStatusLine):
        return f"{url} did not answer in HTTP/1.x (no status line: HTTP/0.9, or not an HTTP server): is it {what}?"
    if isinstance(exc, http.client.InvalidURL):
        return f"{url} is not a URL this can read ({exc})"
    if isinstance(exc, http.client.HTTPException):
        return f"{url} sent an answer HTTP does not allow ({exc or type(exc).__name__}): is it {what}?"
    if isinstance(exc, ssl.SSLError):
        return f"cannot speak TLS with {url} ({exc.reason or exc}): does it serve https?"
    if isinstance(exc, (TimeoutError, socket.timeout)):
        return f"{url} did not answer within its deadline: is it {what}, and is it overloaded?"
    if isinstance(exc, OSError):
        return f"cannot reach {url} ({exc.strerror or exc}); is the vLLM server running there?"
    if isinstance(exc, (ValueError, UnicodeError)):  # a host name IDNA cannot encode, a URL http.client refuses
        return f"{url} is not a URL this can read ({exc})"
    return f"reading {url} failed ({type(exc).__name__}: {exc})"
