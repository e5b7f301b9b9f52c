"""YAML text for the deployment files (llm-d, Ray Serve): block style, every string double-quoted as JSON writes it
(a JSON string is a YAML double-quoted scalar), so no value reads back as another type ("on", "1e3", "null")."""

from __future__ import annotations

import json
import re

LONGEST_KEY = 1000  # characters of a key written as an implicit key (YAML caps them at 1024)
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
_PAIR = re.compile(r"\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})")
_RESERVED = frozenset({"true", "false", "null", "yes", "no", "on", "off", "y", "n"})


def dump(value, indent: int = 0) -> str:
    """`value` (dicts, lists, str, int, float, bool, None) as YAML lines, each ending in a newline."""
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return f"{pad}{{}}\n"
        out = []
        for key, item in value.items():
            name = _key(str(key))
            # a key past 1024 characters is no implicit key (YAML 1.1): "? key" on its own line, then ":"
            head = f"{pad}? {name}\n{pad}:" if len(name) > LONGEST_KEY else f"{pad}{name}:"
            if isinstance(item, (dict, list)) and item:
                out.append(f"{head}\n" + dump(item, indent + 2))
            else:
                out.append(f"{head} {_scalar(item)}\n")
        return "".join(out)
    if isinstance(value, list):
        if not value:
            return f"{pad}[]\n"
        out = []
        for item in value:
            if isinstance(item, (dict, list)) and item:
                body = dump(item, indent + 2)
                out.append(f"{pad}- " + body[indent + 2:])
            else:
                out.append(f"{pad}- {_scalar(item)}\n")
        return "".join(out)
    return f"{pad}{_scalar(value)}\n"


def _key(key: str) -> str:
    """A mapping key, bare where YAML cannot read it as anything but that string."""
    return key if _PLAIN_KEY.fullmatch(key) and key.lower() not in _RESERVED else _quoted(key)


def _scalar(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    if isinstance(value, int):
        return json.dumps(value)
    if isinstance(value, float):
        text = repr(value)  # PyYAML (YAML 1.1) reads an exponent as a float only after a dot: 1.0e+16, not 1e+16
        mantissa, e, exponent = text.partition("e")
        return (mantissa if "." in mantissa else mantissa + ".0") + (e + exponent if e else "")
    return _quoted(str(value))


def _quoted(text: str) -> str:
    """A JSON string (ASCII, escaped) as a YAML double-quoted scalar: DEL, which YAML does not print, escaped too,
    and a character beyond the BMP as one 8-digit escape (YAML reads JSON's surrogate pair as two characters)."""
    quoted = json.dumps(text).replace("\x7f", "\\u007f")
    return _PAIR.sub(lambda m: f"\\U{0x10000 + (int(m[1], 16) - 0xD800) * 0x400 + int(m[2], 16) - 0xDC00:08x}",
                     quoted)
