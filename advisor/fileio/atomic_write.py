"""Writing the user's files without ever leaving a half-written one behind."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from advisor.errors import InputError


def write_atomic(path: str | os.PathLike, data: bytes | str) -> Path:
    """Write `data` to `path` all or nothing: a temp file in the same folder (so os.replace stays on one file
    system and is atomic), fsync'd before the rename, so a crash leaves either the old file or the new one."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path} is a folder: give a file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _keys(path: str) -> set:
    """What identifies a file: its absolute path with links resolved and, when it exists, its device and inode
    (a hard link or another spelling of the same file)."""
    try:
        keys: set = {str(Path(path).resolve())}
    except (OSError, RuntimeError, ValueError):  # a link loop, a NUL byte: compared as spelled
        keys = {os.path.abspath(path)}
    try:
        stat = os.stat(path)
        keys.add((stat.st_dev, stat.st_ino))
    except (OSError, ValueError):
        pass
    return keys


Paths = dict[str, "str | os.PathLike | None"]


def refuse_overwriting(outputs: Paths, inputs: Paths) -> None:
    """Before anything is read or written: one InputError line when an output names a file the command reads (it
    would be replaced by what was made from it) or another output (one would replace the other). Labels say how the
    user named each (`--save-plan`, `the window`); None: not given."""
    seen: list[tuple[str, str, set]] = [(label, str(p), _keys(str(p))) for label, p in inputs.items() if p]
    for label, path in outputs.items():
        if not path:
            continue
        keys = _keys(str(path))
        for other, other_path, other_keys in seen:
            if keys & other_keys:
                reads = other in inputs
                raise InputError(f"{label} {path} is {other + ' this reads' if reads else 'also ' + other}"
                                 f"{' (' + other_path + ')' if other_path != str(path) else ''}: writing it would "
                                 f"replace {'it' if reads else 'the other'}; give another file (nothing was written)")
        seen.append((label, str(path), keys))
