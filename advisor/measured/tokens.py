"""Text to token ids for the n-gram replay: the model's own tokenizer when one is on disk, else a stated stand-in.

N-gram lookup works on token ids, so its acceptance depends on the tokenizer. With --tokenizer DIR (a local
Hugging Face tokenizer: tokenizer.json / tokenizer_config.json, never downloaded) the replay is exact. Without one
we split text into words and punctuation marks, each keeping the whitespace before it (as BPE vocabularies do):
English BPE averages ~0.75 words per token, so word pieces are coarser than model tokens and the estimate is rough.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from advisor.errors import InputError

PIECES = re.compile(r"\s*\w+|\s*[^\w\s]|\s+")  # a word or one punctuation mark, with its leading whitespace
FALLBACK = "words and punctuation marks (no --tokenizer given: a rough stand-in for the model's tokens)"


def encoder(tokenizer_dir: str | None) -> tuple[Callable[[str, bool], list[int]], str]:
    """(encode(text, is_prompt), description). A prompt gets the tokenizer's special tokens (a BOS, as vLLM adds
    to a text prompt); a response does not."""
    if tokenizer_dir is None:
        vocab: dict[str, int] = {}

        def by_words(text: str, is_prompt: bool) -> list[int]:
            return [vocab.setdefault(piece, len(vocab)) for piece in PIECES.findall(text)]

        return by_words, FALLBACK
    path = Path(tokenizer_dir)
    if not path.is_dir():
        raise InputError(f"--tokenizer {tokenizer_dir!r} is not a folder: give the model folder holding its tokenizer")
    tokenizer = load(path)
    return (lambda text, is_prompt: tokenizer.encode(text, add_special_tokens=is_prompt)), f"the tokenizer in {path}"


def load(path: Path):
    """A Hugging Face tokenizer from a local folder only (local_files_only: nothing is downloaded)."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise InputError("reading a tokenizer needs the transformers package: pip install transformers") from None
    try:
        return AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"no usable tokenizer in {path} ({first[:200]})") from None
