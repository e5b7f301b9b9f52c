"""Find and load profiles: GPUs by name, models by name or by a local directory holding config.json.

Profiles are data files under `profiles/` in a source checkout, or `advisor/_profiles/` in an installed wheel.
Only the one file asked for is parsed, which keeps `specadvisor recommend` quick to start.
"""

from __future__ import annotations

import difflib
import json
import tomllib
from functools import cache
from pathlib import Path

from advisor.errors import InputError
from advisor.fileio.json_input import read_json
from advisor.model.gpu.hardware import Hardware
from advisor.model.shape.config_reader import spec_from_config
from advisor.model.shape.modelspec import ModelSpec


@cache
def profiles_dir() -> Path:
    package = Path(__file__).resolve().parents[1]  # advisor/
    for candidate in (package.parent / "profiles", package / "_profiles"):
        if (candidate / "hardware").is_dir():
            return candidate
    raise InputError("specadvisor's profiles/ folder is missing: reinstall the package")


def slug(text: str) -> str:
    """The form names are compared in: case, spaces, '_' and '/' do not matter."""
    return "-".join(text.strip().lower().replace("_", " ").replace("/", " ").split())


@cache
def _files(kind: str) -> dict[str, Path]:
    """Name -> file of one kind of shipped profile, read once a process (a default draft looks at every model)."""
    suffix = ".toml" if kind == "hardware" else ".json"
    return {p.stem: p for p in sorted((profiles_dir() / kind).glob(f"*{suffix}"), key=lambda p: p.name)}


def _aliases(kind: str, files: dict[str, Path]) -> dict[str, Path]:
    """Alias -> file, read from the profiles themselves (only on a miss, so the common path parses one file)."""
    found = {}
    for path in files.values():
        if kind == "hardware":
            aliases = tomllib.loads(path.read_text()).get("aliases", [])
        else:
            meta = json.loads(path.read_text()).get("_specadvisor", {})
            aliases = [*meta.get("aliases", []), meta.get("name", ""), meta.get("hf_id", "")]
        found.update({slug(a): path for a in aliases if a})
    return found


def _lookup(kind: str, name: str) -> Path:
    files = _files(kind)
    key = slug(name)
    if key in files:
        return files[key]
    aliases = _aliases(kind, files)
    if key in aliases:
        return aliases[key]
    close = difflib.get_close_matches(key, [*files, *aliases], n=3, cutoff=0.6)
    close = list(dict.fromkeys(close))
    hint = f"; did you mean {', '.join(close)}?" if close else f"; `specadvisor list {kind}` shows them all"
    what = "GPU" if kind == "hardware" else "model"
    raise InputError(f"unknown {what} {name!r}{hint}")


def names(kind: str) -> list[str]:
    """Canonical profile names (file stems) of one kind: 'hardware' or 'models'."""
    return list(_files(kind))


def load_hardware(name: str) -> Hardware:
    path = _lookup("hardware", name)
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML ({exc})") from None
    return Hardware.from_dict(path.stem, data)


# Linux's PATH_MAX: a longer name is neither a path nor any profile's name (a 120,000-character one was a traceback)
MAX_NAME = 4096
# config.json files are kilobytes; the largest (a quantization config listing every layer) well under a MiB
MAX_CONFIG_BYTES = 16 * 2**20


def local_path(name: str) -> Path:
    """`name` as a path, `~` and `~user` expanded; one InputError line for a name no path can be."""
    if len(name) > MAX_NAME or "\0" in name:
        raise InputError(f"{name[:60]!r}... ({len(name)} characters) is neither a profile name nor a path")
    try:
        return Path(name).expanduser()
    except RuntimeError:  # ~nosuchuser
        raise InputError(f"{name}: no such user's home folder") from None


def load_model(name_or_dir: str) -> ModelSpec:
    """A profile name (case-insensitive) or a local directory (or file) holding a Hugging Face config.json."""
    path = local_path(name_or_dir)
    try:
        is_dir = path.is_dir()
        given = is_dir or path.suffix == ".json" and path.exists()
    except OSError as exc:  # a name too long for the file system, a folder it may not read
        raise InputError(f"{name_or_dir[:200]}: {exc.strerror or exc}") from None
    if given:
        config_path = path / "config.json" if is_dir else path
        if not config_path.is_file():
            raise InputError(f"{path} has no config.json: point at a Hugging Face model directory")
        return spec_from_config(_read_json(config_path), name=path.name, hf_id=str(path.resolve()))
    if name_or_dir.startswith((".", "/", "~")):
        try:  # a profile whose hf_id is the directory its head is to be trained into (./qwen3-8b-peagle)
            config_path = _aliases("models", _files("models"))[slug(name_or_dir)]
        except KeyError:
            raise InputError(f"{name_or_dir}: no such model directory") from None
        return spec_from_config(_read_json(config_path), name=config_path.stem)
    config_path = _lookup("models", name_or_dir)
    return spec_from_config(_read_json(config_path), name=config_path.stem)


def _read_json(path: Path) -> dict:
    data = read_json(path, "a config.json", MAX_CONFIG_BYTES, infinity=True)
    if not isinstance(data, dict):
        raise InputError(f"{path}: malformed config.json (expected a JSON object)")
    return data
