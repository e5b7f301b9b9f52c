"""A command's flags read without typer's runtime machinery, on the happy path only.

typer 0.29 coerces every parameter through a pydantic TypeAdapter built at run time: for `recommend`'s ~30 flags
that is pydantic's import plus ~30 adapters, about 0.3 s of a 0.5 s start-up. `parse` reads the same flags from the
command's own signature (the typer.Option objects `@scenario_command` and the command declare, so nothing is
declared twice) when every one is `--name value` or `--name=value` of a plain type (int, float, str, an optional
one, a str Enum). Anything else (a help flag, an unknown or repeated-prefix flag, a value that does not convert, a
missing required flag, a bool) returns None and the caller runs typer, whose messages are the canonical ones.
"""

from __future__ import annotations

import inspect
import typing
from enum import Enum

_REQUIRED = ...  # typer's marker for a required option


def _converter(annotation):
    """The function that turns a flag's text into its value, or None for a type left to typer."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Union and len(args) == 2 and type(None) in args:
        annotation = next(a for a in args if a is not type(None))
    if annotation in (int, float, str):
        return annotation
    if isinstance(annotation, type) and issubclass(annotation, Enum) and issubclass(annotation, str):
        return annotation
    return None


def _flags(func) -> tuple[dict, dict] | None:
    """({--flag: (parameter, converter)}, {parameter: default}) from a typer command's signature; None when a
    parameter is not a plain option."""
    flags, values = {}, {}
    for p in inspect.signature(func).parameters.values():
        info, convert = p.default, _converter(p.annotation)
        if type(info).__name__ == "OptionInfo" and p.annotation is bool and info.default is False:
            values[p.name] = False  # an off switch: given, it is not in `flags`, and typer parses the line
            continue
        if type(info).__name__ != "OptionInfo" or convert is None:
            return None
        decls = [d for d in (info.param_decls or ()) if d.startswith("--")] or ["--" + p.name.replace("_", "-")]
        for d in decls:
            flags[d] = (p.name, convert)
        values[p.name] = info.default
    return flags, values


def parse(func, args: list[str]) -> dict | None:
    """The keyword arguments `func` (a typer command) would receive for `args`, or None: leave it to typer."""
    found = _flags(func)
    if found is None:
        return None
    flags, values = found
    i = 0
    while i < len(args):
        flag, eq, text = args[i].partition("=")
        if flag not in flags:
            return None
        if not eq:
            if i + 1 >= len(args):
                return None
            text, i = args[i + 1], i + 1
        name, convert = flags[flag]
        try:
            values[name] = convert(text)
        except ValueError:
            return None
        i += 1
    if any(v is _REQUIRED for v in values.values()):
        return None
    return values
