"""JSON read from a user's file, flag or pipe (a config.json, a saved observe window, a bench result, a calibration
profile, --speculative-config, preflight's stdin): one reader for all of them, bounded in size, in nesting and in
its numbers, in time linear in the length of the text. Whatever it refuses is one InputError line.

Python's json accepts NaN, Infinity and 1e400 (as inf), integers of any length, and recurses once per level of
nesting until a RecursionError. So the nesting is measured first, without recursion and in one pass: strings are
cut out by a regular expression that always matches (an unterminated string runs to the end of the text in that
one match, so no input makes it backtrack), and what is left is a run of brackets whose running sum is the depth.
"""

from __future__ import annotations

import json
import math
import re
import sys
from itertools import accumulate
from pathlib import Path
from typing import Any

from advisor.errors import InputError

# The deepest real files nest ~5 levels (a config's text_config.rope_scaling, a bench's per-request lists).
MAX_DEPTH = 64
# A bench result with per-request token latencies is the largest JSON a user hands us: ~40 bytes a token, so 64 MiB
# holds 1.5 million tokens' latencies. Past it reading on would only fill memory.
MAX_BYTES = 64 * 2**20
# Past 309 digits an integer exceeds the largest float (1.8e308): every number the advisor reads becomes a float.
MAX_DIGITS = 309
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def depth(text: str) -> int:
    """The deepest nesting of objects and arrays in JSON text (strings skipped), in one linear pass."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets), initial=0))


def _constant(name: str):
    raise ValueError(f"it holds {name}, which is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"it holds {text[:20]}{'...' if len(text) > 20 else ''}, beyond any finite number")
    return value


def _whole(text: str) -> int:
    digits = len(text) - text.startswith("-")
    if digits > MAX_DIGITS or abs(value := int(text)) > sys.float_info.max:
        raise ValueError(f"it holds a {digits}-digit integer, beyond any finite number")
    return value


def _infinity(name: str) -> float:
    if name == "NaN":
        _constant(name)
    return float(name)


def parse_json(text: str, origin: str, what: str, max_bytes: int = MAX_BYTES, *, infinity: bool = False) -> Any:
    """`text` parsed; InputError naming `origin` when it is not `what` (say, "a vllm bench result"): too long,
    nested deeper than MAX_DEPTH, or holding a number that is not finite. Malformed JSON raises
    json.JSONDecodeError, so a caller can say where (or read the text another way). `infinity`: Infinity and
    -Infinity are kept, as transformers writes them (Nemotron-3's time_step_limit [0.0, Infinity]): a reader that
    takes a number from such a file checks it itself (advisor.model.shape.config_fields)."""
    if len(text) > max_bytes:
        raise InputError(f"{origin} is longer than {shown_size(max_bytes)}: not {what}")
    openers = text.count("[") + text.count("{")  # text cannot nest deeper than it has openers
    if openers > MAX_DEPTH and depth(text) > MAX_DEPTH:
        raise InputError(f"{origin} nests deeper than {MAX_DEPTH} levels: not {what}")
    try:
        return json.loads(text, parse_constant=_infinity if infinity else _constant, parse_float=_finite,
                          parse_int=_whole)
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError) as exc:  # ours, or int()'s limit on digits
        raise InputError(f"{origin} is not {what}: {exc}") from None


def read_text(path: str | Path, what: str, max_bytes: int = MAX_BYTES) -> str:
    """The UTF-8 text of the file at `path`, read at most `max_bytes` (+1, to know there was more); every failure
    (missing, unreadable, too large, not UTF-8) one InputError naming the file."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            raw = f.read(max_bytes + 1)
    except FileNotFoundError:
        raise InputError(f"cannot read {path}: no such file (it should be {what})") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > max_bytes:
        raise InputError(f"{path} is larger than {shown_size(max_bytes)}: not {what}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text: not {what}") from None


def read_json(path: str | Path, what: str, max_bytes: int = MAX_BYTES, *, infinity: bool = False) -> Any:
    """The JSON file at `path`, read by `read_text` and parsed by `parse_json` (`infinity` as there); malformed JSON
    too is one InputError naming the file and where."""
    try:
        return parse_json(read_text(path, what, max_bytes), str(path), what, max_bytes, infinity=infinity)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path} is not valid JSON (malformed at line {exc.lineno} column {exc.colno}: {exc.msg}): "
                         f"not {what}") from None


def shown_size(n: int) -> str:
    """A byte count as the messages say it."""
    return f"{n / 2**20:g} MiB" if n >= 2**20 else f"{n:,} bytes"
