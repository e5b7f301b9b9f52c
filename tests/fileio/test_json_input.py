"""advisor/fileio/json_input.py: one reader for every JSON input, bounded in size, depth and numbers, in linear time
(issue 49: the nesting scan's regex was quadratic on an unterminated string of escaped quotes, 80 kB took 25 s)."""

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.errors import InputError
from advisor.fileio.json_input import MAX_DEPTH, depth, parse_json, read_json

MB = 1 << 20
# 1 MB each, every one a shape that once hung or recursed (or would, in a naive reader)
HOSTILE = {
    "unterminated escaped quotes": '"' + '\\"' * (MB // 2),
    "escaped quotes then brackets": '{"a": "' + '\\"[' * (MB // 3),
    "opening brackets": "[" * MB,
    "objects": '{"a":' * (MB // 5),
    "brackets inside a string, unterminated": '["' + "[{" * (MB // 2),
    "many strings, one unterminated": '["a",' * (MB // 5) + '"',
    "a million-digit integer": "1" * MB,
    "an exponent past any float": "[1e" + "9" * (MB - 4) + "]",
    "backslashes": '"' + "\\" * MB,
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_1_mb_hostile_json_is_refused_within_a_second(tmp_path, name):
    path = tmp_path / "hostile.json"
    path.write_text(HOSTILE[name])
    began = time.monotonic()
    with pytest.raises(InputError) as exc:
        read_json(path, "a config.json")
    assert time.monotonic() - began < 1.0, name  # a generous bound for CI; speed figures are benchmarks/'
    assert "\n" not in str(exc.value) and str(path) in str(exc.value)


def _nesting(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_nesting, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_nesting, value), default=0)
    return 0


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab\n', max_size=6),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.text(alphabet='[]{}"\\ab', max_size=4), inner, max_size=3), max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_the_depth_scan_agrees_with_the_nesting_whatever_the_strings_hold(value):
    text = json.dumps(value)
    assert depth(text) == _nesting(value)


@pytest.mark.parametrize("text, said", [
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nests deeper"), ('{"a": NaN}', "NaN"),
    ('{"a": Infinity}', "Infinity"), ('{"a": 1e400}', "beyond any finite number"),
    ('{"a": ' + "9" * 400 + "}", "400-digit integer"), ('{"a": -' + "9" * 5000 + "}", "5000-digit integer"),
])
def test_what_no_file_should_hold_is_one_line(text, said):
    with pytest.raises(InputError, match=said):
        parse_json(text, "x.json", "a config.json")


def test_what_real_files_hold_reads_as_json_does():
    text = '{"a": [1, 2.5, -3e10, "x[{\\"}"], "b": {"c": null, "d": true}, "e": ' + "9" * 300 + "}"
    assert parse_json(text, "x", "y") == json.loads(text)
    assert parse_json("[" * MAX_DEPTH + "]" * MAX_DEPTH, "x", "y") is not None


def test_malformed_json_is_left_to_the_caller_and_a_file_says_where(tmp_path):
    with pytest.raises(json.JSONDecodeError):
        parse_json("{bad", "x", "y")
    (tmp_path / "c.json").write_text('{"a": 1,\n "b": }')
    with pytest.raises(InputError, match=r"not valid JSON \(malformed at line 2 column"):
        read_json(tmp_path / "c.json", "a config.json")


def test_a_file_is_read_no_further_than_its_bound(tmp_path):
    (tmp_path / "big.json").write_text("[" + "1," * 1000 + "1]")
    with pytest.raises(InputError, match="larger than 1,000 bytes"):
        read_json(tmp_path / "big.json", "x", max_bytes=1000)
    (tmp_path / "bin.json").write_bytes(b'{"a": "\xff"}')
    with pytest.raises(InputError, match="not UTF-8"):
        read_json(tmp_path / "bin.json", "x")
    with pytest.raises(InputError, match="no such file"):
        read_json(tmp_path / "missing.json", "x")
