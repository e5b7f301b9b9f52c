"""advisor/fileio/toml_input.py: a review plan's TOML, bounded in size, depth and integers, in linear time (issue 49:
a plan nested 900 deep was a RecursionError; tomllib turns any integer into a Python int)."""

import time
import tomllib

import pytest

from advisor.errors import InputError
from advisor.fileio.json_input import MAX_DEPTH
from advisor.fileio.toml_input import depth, parse_toml, read_toml

MB = 1 << 20
HOSTILE = {
    "arrays 900 deep, 1 MB": "a = " + "[" * MB,
    "inline tables": "a = " + "{b = " * (MB // 5),
    "unterminated basic string of escapes": 'a = "' + '\\"' * (MB // 2),
    "unterminated multi-line string": 'a = """' + '\\"""[' * (MB // 5),
    "unterminated literal multi-line string": "a = '''" + "''[" * (MB // 3),
    "a million-digit integer": "a = " + "1" * MB,
    "dotted keys 100,000 deep": "a" + ".a" * 100_000 + " = 1",
    "comments full of brackets, then arrays": "#" + "[" * (MB // 2) + "\na = " + "[" * (MB // 2),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_1_mb_hostile_toml_is_refused_within_a_second(tmp_path, name):
    path = tmp_path / "plan.toml"
    path.write_text(HOSTILE[name])
    began = time.monotonic()
    with pytest.raises(InputError) as exc:
        read_toml(path, "a plan")
    assert time.monotonic() - began < 1.0, name  # generous for CI; speed figures are benchmarks/'
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("text, expected", [
    ("a = [[1], [2, [3]]]", 3), ("[t]\na = 1", 1), ("[[w]]\nb = {c = [1]}", 2), ('a = "[[[["', 0),
    ("a = '[[[['", 0), ('a = """\n[[[\n"""', 0), ("a = '''[[\n['''", 0), ("a = 1 # [[[[", 0),
    ('a = "x\\"[["', 0), ('a = """a""""', 0),
])
def test_the_depth_scan_skips_strings_and_comments(text, expected):
    tomllib.loads(text)  # each is TOML
    assert depth(text) == expected


def test_900_deep_is_one_line_and_the_limit_itself_reads():
    with pytest.raises(InputError, match=f"nests deeper than {MAX_DEPTH}"):
        parse_toml("a = " + "[" * 900 + "]" * 900, "plan.toml", "a plan")
    inner = MAX_DEPTH - 1  # the value sits one level below the top table
    assert parse_toml("a = " + "[" * inner + "]" * inner, "plan.toml", "a plan")


@pytest.mark.parametrize("value", [str(2**63), str(-(2**63) - 1), "9" * 400])
def test_integers_past_64_bits_are_refused_as_toml_says(value):
    with pytest.raises(InputError, match="past TOML's 64 bits"):
        parse_toml(f"rate = {value}", "plan.toml", "a plan")
    assert parse_toml(f"rate = {2**63 - 1}", "p", "a plan") == {"rate": 2**63 - 1}


def test_not_toml_and_not_text_are_one_line(tmp_path):
    with pytest.raises(InputError, match="not valid TOML"):
        parse_toml("a = [", "plan.toml", "a plan")
    (tmp_path / "p.toml").write_bytes(b"a = '\xff'")
    with pytest.raises(InputError, match="not UTF-8"):
        read_toml(tmp_path / "p.toml", "a plan")
    with pytest.raises(InputError, match="larger than"):
        read_toml((tmp_path / "p.toml"), "a plan", max_bytes=4)
