"""TOML read from a user's file (a review plan): bounded in size and nesting, its integers those TOML allows, in time
linear in the length of the text; whatever it refuses is one InputError line.

tomllib recurses once per level of nested arrays and inline tables (900 levels: a RecursionError), turns an
integer of any length into a Python int (past 4300 digits a ValueError, not a TOMLDecodeError), and reads a file of
any size; and it checks every prefix of a dotted key, in time and memory the square of its parts. So, as json_input
does for JSON, the nesting is measured first in one pass: strings and comments are cut out by regular expressions
that always match (an unterminated string runs to the end of the text), the running sum of the brackets left is
the depth, and a run of dots between bare keys counts as deep as it is long. TOML 1.0 integers are 64-bit ("an
integer that cannot be represented losslessly must be an error"); the parsed values are walked once, without
recursion, to hold it to that.
"""

from __future__ import annotations

import re
import tomllib
from itertools import accumulate
from pathlib import Path
from typing import Any

from advisor.errors import InputError
from advisor.fileio.json_input import MAX_DEPTH, read_text, shown_size

# A plan of 5,000 workloads (review.evaluate.MAX_PAIRS) is ~0.85 MB of TOML (benchmarks/input_readers.py).
MAX_BYTES = 4 * 2**20
# Strings and comments, each closed by its named group (a multi-line string's close may hold one or two quotes of the
# string before it); a string whose group did not match never closes (tomllib walks it a character at a time before
# saying so: 1.2-1.6 s for 1 MiB on the 2-core CI machine).
_SKIPPED = re.compile(r'"""[^"\\]*(?:(?:\\.?|"(?!""))[^"\\]*)*(?:(?P<multi>"{3,5})|\Z)'  # multi-line basic string
                      r"|'''[^']*(?:'(?!'')[^']*)*(?:(?P<multi_literal>'{3,5})|\Z)"  # multi-line literal string
                      r'|"[^"\\\n]*(?:\\.?[^"\\\n]*)*(?P<basic>")?'  # basic string
                      r"|'[^'\n]*(?P<literal>')?"  # literal string
                      r"|(?P<comment>#[^\n]*)", re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
# a dotted key of more than MAX_DEPTH parts (dots between bare keys, the quoted ones cut out above): tomllib builds
# and checks every prefix of a dotted key (_parser.py key_value_rule: `header + key[:i] for i in range(1, len(key))`),
# in time and memory the square of its parts
_DOTTED = re.compile(r"(?:\.[\w \t-]*){%d}" % MAX_DEPTH)
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
INT64 = 2**63


def bare(text: str, origin: str = "the text", what: str = "TOML") -> str:
    """`text` without its strings and comments; InputError where a string never closes."""
    pieces, last = [], 0
    for m in _SKIPPED.finditer(text):
        if m.lastgroup is None:
            raise InputError(f"{origin}: the string opened on line {text.count(chr(10), 0, m.start()) + 1} never "
                             f"closes: not {what}")
        pieces.append(text[last:m.start()])
        last = m.end()
    return "".join(pieces) + text[last:]


def depth(text: str) -> int:
    """The deepest nesting of arrays and inline tables in TOML text (strings and comments skipped), or MAX_DEPTH + 1
    where a dotted key has more parts than that; a table header's brackets open and close on its line."""
    return _depth(bare(text))


def _depth(bare_text: str) -> int:
    if _DOTTED.search(bare_text):
        return MAX_DEPTH + 1
    return max(accumulate(map(_STEP.__getitem__, _NOT_BRACKET.sub("", bare_text)), initial=0))


def _checked(data: dict, origin: str, what: str) -> dict:
    """`data`, once no value nests deeper than MAX_DEPTH (dotted keys nest without brackets) and every integer
    fits 64 bits; walked with a stack, not recursion."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, level = stack.pop()
        if level > MAX_DEPTH:
            raise InputError(f"{origin} nests deeper than {MAX_DEPTH} levels: not {what}")
        if isinstance(value, dict):
            stack.extend((v, level + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, level + 1) for v in value)
        elif isinstance(value, int) and not isinstance(value, bool) and not -INT64 <= value < INT64:
            raise InputError(f"{origin} holds an integer of {len(str(abs(value)))} digits, past TOML's 64 bits: "
                             f"not {what}")
    return data


def parse_toml(text: str, origin: str, what: str, max_bytes: int = MAX_BYTES) -> dict:
    """`text` parsed, or one InputError naming `origin`: too long, too deep, not TOML, or an integer past 64 bits."""
    if len(text) > max_bytes:
        raise InputError(f"{origin} is longer than {shown_size(max_bytes)}: not {what}")
    bare_text = bare(text, origin, what)  # a string that never closes, said at once
    if text.count("[") + text.count("{") + text.count(".") > MAX_DEPTH and _depth(bare_text) > MAX_DEPTH:
        raise InputError(f"{origin} nests deeper than {MAX_DEPTH} levels: not {what}")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{origin}: not valid TOML ({exc})") from None
    except ValueError as exc:  # int()'s limit on digits
        raise InputError(f"{origin}: not {what} ({exc})") from None
    except RecursionError:  # a nesting the scan above did not see (it cannot, but tomllib must not escape)
        raise InputError(f"{origin} nests too deep to read: not {what}") from None
    return _checked(data, origin, what)


def read_toml(path: str | Path, what: str, max_bytes: int = MAX_BYTES) -> dict:
    """The TOML file at `path`, read by `json_input.read_text` (at most `max_bytes`, UTF-8) and parsed by
    `parse_toml`."""
    return parse_toml(read_text(path, what, max_bytes), str(path), what, max_bytes)
