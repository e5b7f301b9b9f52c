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
