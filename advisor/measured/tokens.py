"""Text to token ids for the n-gram replay: the model's own tokenizer when one is on disk, else a stated stand-in.

N-gram lookup works on token ids, so its acceptance depends on the tokenizer. With --tokenizer DIR (a local
Hugging Face tokenizer, `hf_tokenizer`, never downloaded) the replay is exact. Without one
we split text into words and punctuation marks, each keeping the whitespace before it (as BPE vocabularies do):
English BPE averages ~0.75 words per token, so word pieces are coarser than model tokens and the estimate is rough.
"""

from __future__ import annotations

import re
from typing import Callable

PIECES = re.compile(r"\s*\w+|\s*[^\w\s]|\s+")  # a word or one punctuation mark, with its leading whitespace
FALLBACK = "words and punctuation marks (no --tokenizer given: a rough stand-in for the model's tokens)"


def encoder(tokenizer=None, where: str = "") -> tuple[Callable[[str, bool], list[int]], str]:
    """(encode(text, is_prompt), description). `tokenizer`: a loaded Hugging Face tokenizer (`hf_tokenizer`) from
    the folder `where`, or None for the word-piece stand-in. A prompt gets the tokenizer's special tokens (a BOS,
    as vLLM adds to a text prompt); a response does not."""
    if tokenizer is None:
        vocab: dict[str, int] = {}

        def by_words(text: str, is_prompt: bool) -> list[int]:
            return [vocab.setdefault(piece, len(vocab)) for piece in PIECES.findall(text)]

        return by_words, FALLBACK
    return (lambda text, is_prompt: tokenizer.encode(text, add_special_tokens=is_prompt)), f"the tokenizer in {where}"
