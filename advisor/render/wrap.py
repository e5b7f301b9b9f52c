"""Text for a terminal of some width: prose wrapped at spaces, and a shell command broken only where bash still
reads the same command, so the report's `vllm serve` line can be pasted as printed."""

from __future__ import annotations

import json
import shlex
import shutil
import textwrap

NOT_A_TERMINAL = 80  # piped or redirected output: the width most readers and editors show
MIN_WIDTH = 40  # a narrower terminal still gets lines this long: fewer than ~5 words a line reads worse
CONTINUATION = "    "  # indent of a command's continuation lines


def terminal_width() -> int:
    """Columns to fill: $COLUMNS if set, else the terminal's width; 80 when stdout is not a terminal."""
    return max(shutil.get_terminal_size((NOT_A_TERMINAL, 24)).columns, MIN_WIDTH)


def paragraph(text: str, width: int, first: str = "", rest: str = "") -> str:
    """`text` wrapped to `width` columns, the first line after `first`, the others after `rest`. Paths and other
    words longer than a line are cut at the width (a hyphen is part of a name here, not a place to break)."""
    return textwrap.fill(text, width, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False)


def _groups(words: list[str]) -> list[str]:
    """Shell-quoted words, a `--flag` kept on the same line as its value."""
    out: list[str] = []
    for i, word in enumerate(words):
        quoted = shlex.quote(word)
        if out and words[i - 1].startswith("--") and not word.startswith("--"):
            out[-1] += " " + quoted
        else:
            out.append(quoted)
    return out


def _json_pieces(text: str) -> list[str] | None:
    """JSON `text` cut after each comma outside its strings (nested arrays' too), or None when it is not JSON.
    After such a comma a newline is JSON whitespace, so the text may be broken there inside its shell quotes."""
    try:
        json.loads(text)
    except ValueError:
        return None
    pieces, start, in_string, escaped = [], 0, False, False
    for i, char in enumerate(text):
        if escaped:
            escaped = False
        elif in_string:
            escaped, in_string = char == "\\", char != '"'
        elif char == '"':
            in_string = True
        elif char == ",":
            pieces.append(text[start:i + 1])
            start = i + 1
    return [*pieces, text[start:]]


def _split_long(group: str, width: int) -> list[str]:
    """A `--flag '{json}'` group too long for a line, broken after commas of the object (no backslash: inside
    single quotes bash keeps the newline, and JSON reads it as whitespace). Anything else stays whole."""
    flag, _, quoted = group.partition(" ")
    words = shlex.split(quoted) if quoted else []
    pieces = _json_pieces(words[0]) if len(words) == 1 and quoted == shlex.quote(words[0]) else None
    if pieces is None or "'" in words[0]:
        return [group]
    lines = [f"{flag} '{pieces[0]}"]
    for piece in pieces[1:]:
        if len(lines[-1]) + len(piece) <= width - len(CONTINUATION) - 1:
            lines[-1] += piece
        else:
            lines.append(CONTINUATION + piece)
    lines[-1] += "'"
    return lines


def shell_command(command: str, width: int) -> list[str]:
    """`command` in lines of at most `width` columns where it can be (a single word longer than a line cannot),
    joined by ` \\` continuations; pasted into bash, the lines run exactly `command`."""
    if len(command) <= width:
        return [command]
    lines: list[str] = []
    current = ""
    for group in _groups(shlex.split(command)):
        if current and len(current) + 1 + len(group) + 2 <= width:
            current += " " + group
            continue
        if current:
            lines.append(current + " \\")
        indent = CONTINUATION if lines else ""
        parts = _split_long(group, width - len(indent)) if len(indent + group) + 2 > width else [group]
        lines += [indent + p if j == 0 else p for j, p in enumerate(parts[:-1])]
        current = (indent if len(parts) == 1 else "") + parts[-1]
    lines.append(current)
    return lines
