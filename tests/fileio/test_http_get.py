"""advisor/fileio/http_get.py: every way a URL or the server behind it can fail is one line, and one deadline bounds
the whole answer (issue 49: a server trickling a byte every 2 s held `observe` for ever; 17 HTTP failures were
tracebacks)."""

import time

import pytest
from loopback import MODES, closed_port, lying

from advisor.errors import InputError
from advisor.fileio.http_get import checked_url, get

BODY = b'vllm:num_requests_running{engine="0",model_name="m"} 0.0\n'
SAID = {"silent": "within 1 s", "close": "closed the connection", "not_http": "did not answer in HTTP/1.x",
        "http09": "did not answer in HTTP/1.x", "bad_status": "did not answer in HTTP/1.x",
        "many_headers": "more than 100 headers", "long_header": "header line over 64 KiB",
        "short": "cut its answer short", "short_chunked": "cut its answer short", "binary": None,
        "huge_length": "sent more than", "trickle:0.25": "within 1 s", "redirect_loop": "HTTP 302",
        "error_500": "HTTP 500"}


def _one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text and text
    return text


@pytest.mark.parametrize("mode", MODES)
def test_a_server_that_lies_is_one_line_within_the_deadline(mode):
    with lying(mode, BODY) as url:
        began = time.monotonic()
        if SAID[mode] is None:  # bytes arrive whole: what they are is the reader's to judge (metrics: binary)
            assert get(url + "/metrics", max_bytes=4096, timeout_s=1.0).startswith(b"\x00")
            return
        with pytest.raises(InputError) as exc:
            get(url + "/metrics", max_bytes=4096, timeout_s=1.0)
        took = time.monotonic() - began
    assert SAID[mode] in _one_line(exc), exc.value
    assert took < 3.0  # 1 s deadline; generous for a loaded 2-core machine


def test_a_trickle_faster_than_any_socket_timeout_is_still_given_up_at_the_deadline():
    """One byte every 0.25 s never leaves a socket idle for the deadline's 1.5 s: only one deadline over the whole
    answer ends it."""
    with lying("trickle:0.25", BODY) as url:
        began = time.monotonic()
        with pytest.raises(InputError, match="did not send its whole answer within 1.5 s"):
            get(url, max_bytes=1 << 20, timeout_s=1.5)
        assert 1.4 < time.monotonic() - began < 3.5


def test_a_whole_answer_comes_back():
    with lying("ok", BODY) as url:
        assert get(url + "/metrics", max_bytes=4096) == BODY
        with pytest.raises(InputError, match="sent more than"):
            get(url, max_bytes=10)


@pytest.mark.parametrize("url, said", [
    ("http://[::1", "Invalid IPv6 URL"), ("http://host:abc/", "not a URL"), ("http://host:99999/", "not a URL"),
    ("http://host:0/", "port 0"), ("http://exa mple/", "holds ' '"), ("http://host/\x00", "holds '\\x00'"),
    ("http://host/a\nb", "holds '\\n'"), ("http://host/\x7f", "holds '\\x7f'"), ("http:///metrics", "names no host"),
    ("ftp://host/", "not an http"), ("http://" + "a" * 300 + "/", None), ("http://a..b/", None),
])
def test_a_url_that_is_not_one_is_one_line(url, said):
    with pytest.raises(InputError) as exc:
        get(url, max_bytes=4096, timeout_s=2.0)
    text = _one_line(exc)
    assert said is None or said in text, text


def test_an_unreachable_port_and_tls_to_a_plain_server_are_one_line():
    with pytest.raises(InputError, match="cannot reach"):
        get(f"http://127.0.0.1:{closed_port()}", max_bytes=4096, timeout_s=2.0)
    with lying("ok", BODY) as url:
        with pytest.raises(InputError) as exc:
            get(url.replace("http://", "https://"), max_bytes=4096, timeout_s=2.0)
    assert "TLS" in _one_line(exc) or "cannot reach" in str(exc.value)


def test_a_good_url_passes_the_check_unchanged():
    assert checked_url("http://127.0.0.1:8000/metrics") == "http://127.0.0.1:8000/metrics"
    assert checked_url("https://[::1]:8443") == "https://[::1]:8443"
