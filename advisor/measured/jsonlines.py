"""JSON Lines files of prompts (and responses), read with their line numbers so a bad line can be named.

A user's file is rarely perfect: `on_error="stop"` turns the first bad line into an InputError that names it,
`on_error="skip"` reports each bad line on stderr and goes on with the rest. Blank lines are not records.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from advisor.errors import InputError
from advisor.fileio.json_input import parse_json

T = TypeVar("T")
ON_ERROR = ("stop", "skip")


@dataclass(frozen=True, slots=True)
class Skipped:
    line: int  # 1-based line number in the file
    reason: str  # what was wrong with it


def read(path: str | Path, convert: Callable[[dict], T], on_error: str = "stop") -> tuple[list[tuple[int, T]], list[Skipped]]:
    """(line number, convert(record)) for every good line, and the lines skipped. `convert` raises InputError
    for a record it cannot use; the message is prefixed with the file and line."""
    if on_error not in ON_ERROR:
        raise InputError(f"--on-error must be stop or skip, got {on_error!r}")
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such file {str(path)!r}")
    good: list[tuple[int, T]] = []
    skipped: list[Skipped] = []
    for number, line in _lines(path):
        try:
            good.append((number, convert(_record(line))))
        except InputError as exc:
            if on_error == "stop":
                raise InputError(f"{path} line {number}: {exc} (pass --on-error skip to skip bad lines)") from None
            skipped.append(Skipped(number, str(exc)))
            print(f"specadvisor: skipped {path} line {number}: {exc}", file=sys.stderr)
    if not good:
        raise InputError(f"{path} has no usable records" + (f" ({len(skipped)} bad lines skipped)" if skipped else
                                                              " (it is empty)"))
    return good, skipped


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    try:
        with path.open(encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                if line.strip():
                    yield number, line
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text: give a JSON Lines file") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None


def _record(line: str) -> dict:
    try:
        record = parse_json(line, "it", "a JSON object")
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(record, dict):
        raise InputError(f"expected a JSON object, got {type(record).__name__}")
    return record


def token_ids(record: dict, key: str, vocab_size: int | None = None) -> list[int] | None:
    """record[key] as a list of token ids, or None when the key is absent."""
    if key not in record:
        return None
    ids = record[key]
    if not isinstance(ids, list) or not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in ids):
        raise InputError(f"{key!r} must be a list of non-negative integers")
    if vocab_size is not None and ids and max(ids) >= vocab_size:
        raise InputError(f"{key!r} holds token id {max(ids)}, outside the vocabulary of {vocab_size}")
    return ids


def text(record: dict, key: str) -> str | None:
    if key not in record:
        return None
    if not isinstance(record[key], str):
        raise InputError(f"{key!r} must be a string")
    return record[key]
