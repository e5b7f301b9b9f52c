"""`vllm serve --config FILE`: the YAML file vLLM reads its flags from, turned into the flags it stands for, as
vLLM 0.32 does (vllm/utils/argparse_utils.py `FlexibleArgumentParser.load_config_file` and `_pull_args_from_config`):
a key becomes `--key`; true a bare switch, false its `--no-` form; a list the flag then each item; a mapping its JSON;
anything else its text. The file's flags go after the model and before the command line's own, so the command line
wins (cli > config > defaults).
"""

from __future__ import annotations

import json
from pathlib import Path

from advisor.errors import InputError
from advisor.fileio.json_input import read_text

MAX_BYTES = 1 << 20  # a serve config is a few dozen lines


def _loader():
    """PyYAML's safe loader, refusing anchors and aliases: a real serve config has none, and an alias expanded
    into JSON (`--speculative-config`) can grow without bound."""
    import yaml  # why: PyYAML is needed only when a YAML config is given

    class NoAliases(yaml.SafeLoader):
        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                raise InputError("the config file uses a YAML alias (*name): not a vllm serve config")
            return super().compose_node(parent, index)

    return yaml, NoAliases


def config_flags(path: str) -> list[str]:
    """The flags a `vllm serve --config` YAML file stands for, or one InputError line."""
    if path.rsplit(".", 1)[-1] not in ("yaml", "yml"):
        raise InputError(f"--config {path}: vLLM reads a .yaml or .yml file only")
    text = read_text(Path(path).expanduser(), "a vllm serve config", MAX_BYTES)
    yaml, loader = _loader()
    try:
        data = yaml.load(text, Loader=loader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as exc:
        raise InputError(f"--config {path} is not valid YAML ({str(exc).splitlines()[0]})") from None
    except RecursionError:
        raise InputError(f"--config {path} nests too deep: not a vllm serve config") from None
    if data is None:
        return []
    if not isinstance(data, dict):
        raise InputError(f"--config {path} must map flag names to values (key: value lines), got a "
                         f"{type(data).__name__}")
    flags: list[str] = []
    for key, value in data.items():
        name = f"--{key}"
        if isinstance(value, bool):
            flags += [name] if value else [f"--no-{key}"]
        elif isinstance(value, list):
            flags += [name, *map(str, value)] if value else []
        elif isinstance(value, dict):
            try:
                flags += [name, json.dumps(value)]
            except (TypeError, ValueError, RecursionError):
                raise InputError(f"--config {path}: {key} cannot be written as JSON") from None
        else:
            flags += [name, str(value)]
    return flags


def with_config(words: list[str]) -> list[str]:
    """A `vllm serve` command's words (after `vllm serve`) with its --config FILE replaced by the file's flags,
    placed as vLLM places them: after a positional model, before the command line's other flags."""
    if words.count("--config") + sum(w.startswith("--config=") for w in words) > 1:
        raise InputError("more than one --config file: vLLM reads one")
    at = next((i for i, w in enumerate(words) if w == "--config" or w.startswith("--config=")), None)
    if at is None:
        return words
    if words[at] == "--config":
        if at + 1 >= len(words):
            raise InputError("--config needs a file")
        path, rest = words[at + 1], words[:at] + words[at + 2:]
    else:
        path, rest = words[at].partition("=")[2], words[:at] + words[at + 1:]
    flags = config_flags(path)
    if rest and not rest[0].startswith("-"):
        return rest[:1] + flags + rest[1:]
    return flags + rest
