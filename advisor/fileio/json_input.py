"""JSON read from a user's file (a config.json, a saved observe window, a bench result): parsed only when its
nesting is bounded and every number in it is finite, else one InputError line. Python's json accepts NaN,
Infinity and 1e400 (as inf), and recurses once per level until a RecursionError."""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any

from advisor.errors import InputError

# The deepest real files nest ~5 levels (a config's text_config.rope_scaling, a bench's per-request lists).
MAX_DEPTH = 64
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(r"[\[\]{}]")


def depth(text: str) -> int:
    """The deepest nesting of objects and arrays in JSON text (strings skipped), counted without recursion."""
    steps = (1 if b in "[{" else -1 for b in _BRACKETS.findall(_STRINGS.sub("", text)))
    return max(accumulate(steps, initial=0))


def _constant(name: str):
    raise ValueError(f"it holds {name}, which is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"it holds {text}, beyond any finite number")
    return value


def _infinity(name: str) -> float:
    if name == "NaN":
        _constant(name)
    return float(name)


def parse_json(text: str, origin: str, what: str, *, infinity: bool = False) -> Any:
    """`text` parsed; InputError naming `origin` when it is not `what` (say, "a vllm bench result"). `infinity`:
    Infinity and -Infinity are kept, as transformers writes them (Nemotron-3's time_step_limit [0.0, Infinity]):
    a reader that takes a number from such a file checks it itself (advisor.model.shape.config_fields)."""
    if depth(text) > MAX_DEPTH:
        raise InputError(f"{origin} nests deeper than {MAX_DEPTH} levels: not {what}")
    try:
        return json.loads(text, parse_constant=_infinity if infinity else _constant, parse_float=_finite)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        raise InputError(f"{origin} is not {what}: {exc}") from None
