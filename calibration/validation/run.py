"""Run the validation grid for real: a baseline engine and speculative engines over k × batch × lengths.

One engine per (method, pair, k) — an engine start costs ~25 s on a CPU, a generate call seconds — and every
(batch, prompt length, output length) point is one `generate` on it, preceded by a warm-up. The same token-id
prompts go to every engine. Acceptance comes from the engine's own counters (deltas of `LLM.get_metrics()`
around the point), times from the engine core's monotonic clock (`calibration.engine.vllm_engine.Completion`):
  TTFT = first token − scheduled, TPOT = (last − first token) / (tokens − 1), e2e = last − scheduled,
each the median over the batch's requests; throughput = all output tokens / (last finish − first schedule).
Timings do not depend on weight values, so the baseline engine (the first pair's target) serves every pair; it
runs first and last, to average out and expose drift in the machine's speed.
On a shared 2-vCPU machine the same work measures differently from one generate call to the next (~6% standard
deviation) and from one engine instance to the next (one baseline instance ran 20-32% faster than the median), so
`passes` runs the whole engine list again, in reverse order every other pass, `repeats` measures every shape more
than once per engine, and the report takes each point's median run.
A point that fails (engine crash, fewer tokens than asked) is recorded with its reason and the run goes on.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from advisor.vllm.command import speculative_dict
from advisor.vllm.defaults import NGRAM_LOOKUP_VALIDATION
from calibration.engine.testpair import TestPair, make_pair
from calibration.engine.vllm_engine import open_engine
from calibration.measure_acceptance import delta, snapshot_counts
from calibration.validation.grid import SYNC_BASELINE, Grid, Run, is_baseline

WARM_UP_SEED_OFFSET = 1  # the warm-up's prompts come from seed + 1 (see round_seed)
WARM_UP_TOKENS = 8  # tokens each warm-up shape generates: a prefill and a few decode steps


def prompts_for(batch: int, prompt_len: int, vocab: int, seed: int) -> list[list[int]]:
    """Token ids that every engine gets for this shape (ids 3.. avoid BOS/EOS/pad)."""
    rng = np.random.default_rng([seed, batch, prompt_len])
    return rng.integers(3, vocab, size=(batch, prompt_len)).tolist()


def round_seed(grid: Grid, repeat: int) -> int:
    """Prompt seed of a round over the shapes: each round its own prompts (a repeat must not find the last round's
    in the prefix cache), the same on every engine; seed + 1 is the warm-up's."""
    return grid.seed if repeat == 0 else grid.seed + WARM_UP_SEED_OFFSET + repeat


def measure_point(engine, method: str, scale: float | None, k: int, shape: tuple, vocab: int, grid: Grid,
                  repeat: int = 0) -> Run:
    """One generate on a started engine, with the spec-decode counter deltas around it."""
    batch, prompt_len, out_len, temperature = shape
    prompts = prompts_for(batch, prompt_len, vocab, round_seed(grid, repeat))
    before = snapshot_counts(engine.metrics()) if k else None
    done = engine.generate(prompts, out_len, temperature, seed=grid.seed)
    counts = delta(before, snapshot_counts(engine.metrics()), k) if k else None
    tokens = min(len(c.token_ids) for c in done)
    first, last = min(c.scheduled_s for c in done), max(c.last_token_s for c in done)
    asynchronous = bool(getattr(engine, "vllm_config", {}).get("async_scheduling", False))
    run = Run(method, scale, k, batch, prompt_len, out_len, temperature, tokens=tokens, repeat=repeat,
              async_scheduling=asynchronous,
              ttft_s=float(np.median([c.prefill_s for c in done])),
              tpot_s=float(np.median([c.decode_s / max(len(c.token_ids) - 1, 1) for c in done])),
              e2e_s=float(np.median([c.last_token_s - c.scheduled_s for c in done])),
              throughput_tps=sum(len(c.token_ids) for c in done) / max(last - first, 1e-9),
              **({"drafts": counts.drafts, "draft_tokens": counts.draft_tokens, "accepted": counts.accepted,
                  "per_position": tuple(counts.per_position)} if counts else {}))
    if tokens < out_len:
        return _replace(run, error=f"returned {tokens} of {out_len} tokens")
    if any(c.preemptions for c in done):
        return _replace(run, error="a request was preempted (KV cache full): timing void")
    return run


def _replace(run: Run, **changes) -> Run:
    return Run(**{**asdict(run), **changes})


def spec_config(method: str, pair: TestPair | None, k: int) -> dict | None:
    if is_baseline(method):
        return None
    if method == "ngram":
        return speculative_dict("ngram", k, lookup=NGRAM_LOOKUP_VALIDATION)
    return speculative_dict("draft_model", k, model=str(pair.draft_dir))


@dataclass(slots=True)
class Measured:
    """Everything the grid produced, with what it ran on."""

    runs: list[Run] = field(default_factory=list)  # one per (engine, shape)
    pairs: dict[float, TestPair] = field(default_factory=dict)  # scale -> generated pair (in a temp dir)
    engine: dict = field(default_factory=dict)  # engine args and versions of the baseline engine


def run_grid(grid: Grid, workdir: str | Path | None = None, opener: Callable | None = None,
             progress: Callable[[str], None] = lambda _: None, before: Sequence[Run] = (),
             saved: Callable[[Measured], None] = lambda _: None,
             gpu_memory_utilization: float | None = None) -> Measured:
    """Generate the pairs, start each engine in turn, measure every shape on it. `opener(model, spec_config)`
    starts an engine (default: calibration.engine.vllm_engine.open_engine); a failure is recorded per point.
    `saved(measured)` is called after every engine, so an interrupted run keeps what it measured; given those runs back
    as `before`, the engines they cover are skipped (the same pairs and prompts: same seed), which is how a run resumes
    and how `grid.passes` beyond the earlier run's add passes to it."""
    opener = opener or (lambda model, spec, **more: open_engine(
        model, speculative_config=spec, max_model_len=_max_len(grid), skip_tokenizer_init=True,
        tensor_parallel_size=grid.tensor_parallel_size, gpu_memory_utilization=gpu_memory_utilization, **more))
    root = Path(workdir or tempfile.mkdtemp(prefix="specadvisor-validate-"))
    out = Measured(runs=list(before))
    for scale in grid.scales:
        out.pairs[scale] = make_pair(root / f"scale-{scale:g}", grid.pair_spec(scale))
    first = out.pairs[grid.scales[0]]
    engines = grid.engines()
    done = Counter((r.pass_index, r.method, r.scale, r.k) for r in before)  # runs per engine measured before
    for pass_index in range(grid.passes):
        for method, scale, k in engines if pass_index % 2 == 0 else engines[::-1]:
            key = (pass_index, method, scale, k)
            if done[key] >= grid.runs_per_engine():  # measured before (the baseline twice a pass: counted down)
                done[key] -= grid.runs_per_engine()
                continue
            pair = out.pairs[scale] if scale is not None else first
            out.runs += _measure_engine(opener, pair, method, scale, k, grid, out, progress, pass_index)
            saved(out)
    return out


def _measure_engine(opener: Callable, pair: TestPair, method: str, scale: float | None, k: int, grid: Grid,
                    out: Measured, progress: Callable[[str], None], pass_index: int) -> list[Run]:
    label = f"{method}" + (f" scale {scale:g}" if scale is not None else "") + (f" k={k}" if k else "")
    progress(f"starting {label}" + (f" (pass {pass_index + 1} of {grid.passes})" if grid.passes > 1 else ""))
    began = time.monotonic()
    try:
        sync = {"async_scheduling": False} if method == SYNC_BASELINE else {}
        engine = opener(pair.target_dir, spec_config(method, pair, k), **sync)
    except Exception as exc:  # a failed start voids this engine's points, not the run
        return [Run(method, scale, k, *shape, error=f"engine failed to start: {_one_line(exc)}",
                    pass_index=pass_index, repeat=i) for i in range(grid.repeats) for shape in grid.shapes()]
    # each engine's start, which dominates a GPU run's time (15-75 s: torch.compile, CUDA-graph capture)
    started = label + (f" (pass {pass_index + 1})" if pass_index else "")
    out.engine.setdefault("startup_seconds", {})[started] = round(time.monotonic() - began, 1)
    try:
        if method == "baseline" and not out.engine.get("args"):
            out.engine.update(args={a: str(v) for a, v in engine.engine_args.items()}, dtype=engine.dtype,
                              vllm=engine.vllm_version)
        # what each method's engine resolved (runner, async scheduling, graphs): on a GPU ngram runs synchronously
        out.engine.setdefault("vllm_config", {}).setdefault(method, dict(engine.vllm_config))
        runs = measure_engine(engine, method, scale, k, grid, grid_vocab(pair), progress=progress)
    finally:
        engine.close()
    return [_replace(r, pass_index=pass_index) for r in runs]


def measure_engine(engine, method: str, scale: float | None, k: int, grid: Grid, vocab: int,
                   progress: Callable[[str], None] = lambda _: None) -> list[Run]:
    """Every shape of the grid on one started engine, after a warm-up, `grid.repeats` rounds over the shapes. The
    warm-up runs every (batch, prompt length) of the grid once, briefly: a shape's first generate pays one-off costs
    (kernels compiled or tuned for its sizes, buffers grown) that one warm-up shape would leave in the measured point
    of every other. Each round has its own prompts (the same on every engine), so no round finds the previous one's
    prompts in the prefix cache."""
    for batch, prompt_len in sorted({shape[:2] for shape in grid.shapes()}):
        engine.generate(prompts_for(batch, prompt_len, vocab, WARM_UP_SEED_OFFSET + grid.seed), WARM_UP_TOKENS)
    runs = []
    for repeat in range(grid.repeats):
        for shape in grid.shapes():
            try:
                runs.append(measure_point(engine, method, scale, k, shape, vocab, grid, repeat))
            except Exception as exc:  # an engine crash mid-grid: record it, go on with the next point
                runs.append(Run(method, scale, k, *shape, error=f"engine error: {_one_line(exc)}", repeat=repeat))
            progress(f"{method} scale {scale} k={k}: batch {shape[0]} prompt {shape[1]} out {shape[2]} "
                     f"T {shape[3]:g}" + (f" (round {repeat + 1} of {grid.repeats})" if grid.repeats > 1 else ""))
    return runs


def grid_vocab(pair: TestPair) -> int:
    return pair.spec.arch.vocab_size


def _max_len(grid: Grid) -> int:
    need = max(grid.prompt_lens) + max(grid.out_lens) + max(grid.ks) + 16
    return int(2 ** np.ceil(np.log2(need)))


def _one_line(exc: BaseException) -> str:
    return (" ".join(str(exc).split()) or type(exc).__name__)[:300]
