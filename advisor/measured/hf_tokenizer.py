"""A Hugging Face tokenizer from a local folder only (local_files_only: nothing is downloaded).

transformers takes ~5 s to import, so only a command that reads a tokenizer imports this module.
"""

from __future__ import annotations

from pathlib import Path

from advisor.errors import InputError

try:
    from transformers import AutoTokenizer
except ImportError:  # an optional dependency: only --tokenizer and text prompts need it
    AutoTokenizer = None


def load_tokenizer(folder: str | Path, flag: str = "--tokenizer"):
    """The tokenizer in `folder` (tokenizer.json / tokenizer_config.json); one InputError line when there is none."""
    path = Path(folder)
    if not path.is_dir():
        raise InputError(f"{flag} {str(folder)!r} is not a folder: give the model folder holding its tokenizer")
    if AutoTokenizer is None:
        raise InputError("reading a tokenizer needs the transformers package: pip install transformers")
    try:
        return AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"no usable tokenizer in {path} ({first[:200]})") from None
