"""`specadvisor acceptance measure`: the user's prompts through vLLM with speculation on, counted per prompt.

Each prompt runs on its own (a batch of one) and its counts are the delta of vLLM's spec-decode counters around
it, so per-prompt numbers are exact and no request shares a step with another (near max_model_len vLLM cuts the
drafts of a whole batch for its longest sequence; alone, a prompt's counts depend on that prompt only). The engine
is the shared calibration.engine.vllm_engine layer; prompts are token ids, or text tokenized with the target's own
tokenizer.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from advisor.errors import InputError
from advisor.measured import jsonlines
from advisor.measured.counts import Counts
from advisor.measured.hf_tokenizer import load_tokenizer
from advisor.measured.metrics import ACCEPTED, DRAFT_TOKENS, DRAFTS, PER_POS
from advisor.vllm.command import speculative_dict
from advisor.vllm.defaults import NGRAM_LOOKUP_DEFAULT, check_k
from advisor.vllm.runner import fills_unmatched
from calibration.engine.vllm_engine import open_engine


@dataclass(frozen=True, slots=True)
class MeasureConfig:
    target: str  # target model folder (config.json + weights; a tokenizer too for text prompts)
    draft: str | None = None  # draft model folder, for method draft_model
    method: str = "draft_model"  # draft_model | ngram
    k: int = 4  # num_speculative_tokens
    temperature: float = 0.0  # sampling temperature of the measurement
    max_tokens: int = 128  # tokens generated per prompt (EOS ignored, so every prompt runs the full length)
    prompt_lookup_min: int = NGRAM_LOOKUP_DEFAULT[0]  # n-gram only: vLLM's prompt_lookup_min
    prompt_lookup_max: int = NGRAM_LOOKUP_DEFAULT[1]  # n-gram only: vLLM's prompt_lookup_max
    max_model_len: int | None = None  # default: longest prompt + max_tokens + 2k + 2 (see `measure`)
    seed: int = 0  # sampling seed of the first prompt (prompt i uses seed + i)
    gpu_memory_utilization: float | None = None  # share of the GPU vLLM may take (None: vLLM's default)

    def __post_init__(self) -> None:
        if self.method not in ("draft_model", "ngram"):
            raise InputError(f"--method must be draft_model or ngram, got {self.method!r}")
        if self.method == "draft_model" and self.draft is None:
            raise InputError("--method draft_model needs --draft DIR (a smaller model with the same vocabulary)")
        check_k(self.k)
        if not 0.0 <= self.temperature <= 2.0:
            raise InputError(f"--temperature must be in [0, 2], got {self.temperature}")
        if self.max_tokens < 2:
            raise InputError(f"--max-tokens must be at least 2 (one decode step), got {self.max_tokens}")

    def speculative_config(self) -> dict:
        if self.method == "ngram":
            return speculative_dict("ngram", self.k, lookup=(self.prompt_lookup_min, self.prompt_lookup_max))
        return speculative_dict("draft_model", self.k, model=str(self.draft))


@dataclass(frozen=True, slots=True)
class PromptResult:
    line: int  # line number in the prompts file
    prompt: tuple[int, ...]  # prompt token ids
    output: tuple[int, ...]  # generated token ids
    counts: Counts  # this prompt's spec-decode counters


@dataclass(frozen=True, slots=True)
class Measurement:
    counts: Counts  # over all prompts
    per_prompt: list[PromptResult]  # in file order
    skipped: list[jsonlines.Skipped]  # bad lines passed over (--on-error skip)


def _model_dir(path: str, flag: str) -> Path:
    folder = Path(path)
    if not (folder / "config.json").is_file():
        raise InputError(f"{flag} {path!r} is not a model folder: it has no config.json")
    return folder


def load_prompts(path: str, target: Path, on_error: str = "stop") -> tuple[list[tuple[int, list[int]]], list]:
    """(line, token ids) per prompt. Text prompts need the target's tokenizer, loaded from its folder only."""
    vocab = int(json.loads((target / "config.json").read_text()).get("vocab_size", 0)) or None
    tokenizer = []  # loaded on the first text prompt

    def convert(record: dict) -> list[int]:
        ids = jsonlines.token_ids(record, "prompt_token_ids", vocab)
        if ids is None:
            prompt = jsonlines.text(record, "prompt")
            if prompt is None:
                raise InputError("needs \"prompt\" (text) or \"prompt_token_ids\" (a list of token ids)")
            if not tokenizer:
                try:
                    tokenizer.append(load_tokenizer(target, "--target"))
                except InputError as exc:
                    raise InputError(f"a text prompt needs the target's tokenizer: {exc}; or give "
                                     "prompt_token_ids") from None
            ids = tokenizer[0].encode(prompt, add_special_tokens=True)
        if not ids:
            raise InputError("empty prompt")
        return ids

    return jsonlines.read(path, convert, on_error)


def snapshot_counts(metrics: dict) -> tuple[int, int, int, tuple[int, ...]]:
    """The spec-decode counters in an Engine.metrics() snapshot (zeros before the first draft)."""
    return (int(metrics.get(DRAFTS, 0)), int(metrics.get(DRAFT_TOKENS, 0)), int(metrics.get(ACCEPTED, 0)),
            tuple(int(v) for v in metrics.get(PER_POS, ())))


def delta(before: tuple, after: tuple, k: int) -> Counts:
    pos_before = before[3] or (0,) * k
    pos_after = after[3] or (0,) * k
    return Counts(drafts=after[0] - before[0], draft_tokens=after[1] - before[1], accepted=after[2] - before[2],
                  per_position=tuple(a - b for a, b in zip(pos_after, pos_before)))


def measure_on(engine, prompts: list[tuple[int, list[int]]], cfg: MeasureConfig) -> list[PromptResult]:
    """Run each prompt alone on a started speculative engine; its counts are the counter delta around it."""
    results = []
    for i, (line, ids) in enumerate(prompts):
        before = snapshot_counts(engine.metrics())
        done = engine.generate([ids], cfg.max_tokens, cfg.temperature, seed=cfg.seed + i)[0]
        after = snapshot_counts(engine.metrics())
        results.append(PromptResult(line, tuple(ids), done.token_ids, delta(before, after, cfg.k)))
    return results


def total(results: list[PromptResult], k: int) -> Counts:
    return Counts(drafts=sum(r.counts.drafts for r in results), draft_tokens=sum(r.counts.draft_tokens for r in results),
                  accepted=sum(r.counts.accepted for r in results),
                  per_position=tuple(sum(r.counts.per_position[i] for r in results) for i in range(k)))


def measure(cfg: MeasureConfig, prompts_path: str, on_error: str = "stop") -> Measurement:
    target = _model_dir(cfg.target, "--target")
    if cfg.draft is not None:
        _model_dir(cfg.draft, "--draft")
    prompts, skipped = load_prompts(prompts_path, target, on_error)
    # vLLM stops drafting (drafts zeros) once the last step's sequence + k passes max_model_len; the last step
    # can reach prompt + max_tokens - 2 + k, so 2k + 2 of headroom keeps every counted draft a real one.
    longest = max(len(ids) for _, ids in prompts)
    max_model_len = cfg.max_model_len or longest + cfg.max_tokens + 2 * cfg.k + 2
    # JSON on stdout must stay JSON: vLLM logs to stdout unless told otherwise (read when vLLM is first imported)
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
    # Prompts arrive as token ids and outputs stay ids, so vLLM needs no tokenizer (test pairs have none).
    with open_engine(target, speculative_config=cfg.speculative_config(), max_model_len=max_model_len,
                     seed=cfg.seed, skip_tokenizer_init=True,
                     gpu_memory_utilization=cfg.gpu_memory_utilization) as engine:
        results = measure_on(engine, prompts, cfg)
        filled = fills_unmatched(cfg.method, str(engine.vllm_config.get("model_runner")))
    counts = total(results, cfg.k)
    refuse_empty(counts, len(results), cfg.method, filled)
    return Measurement(counts, results, skipped)


def refuse_empty(counts: Counts, prompts: int, method: str, filled: bool) -> None:
    """One line when the run measured nothing to take an acceptance from. vLLM drafted nothing; or, where the engine
    verifies a filler for every sequence without a match (`filled`: n-gram on Model Runner V2, a GPU's default,
    advisor.vllm.runner `fills_unmatched`), every step counts as a draft whatever n-gram found, and only the
    accepted tokens can tell a match: none accepted is the V1 runner's "drafted nothing"."""
    lookup = "no n-gram of the prompts recurred (lower --prompt-lookup-min)"
    if counts.drafts == 0:
        raise InputError(f"vLLM drafted nothing over {prompts} prompts" + (f": {lookup}" if method == "ngram" else ""))
    if filled and counts.accepted == 0:
        raise InputError(f"vLLM accepted none of {counts.draft_tokens} n-gram draft tokens over {prompts} prompts: "
                         f"{lookup}, or none the target went on with (Model Runner V2 verifies k drafts at every "
                         "step, the last token repeated where nothing matched, so its draft count cannot tell)")
