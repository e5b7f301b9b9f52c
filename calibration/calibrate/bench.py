"""Microbenchmarks: the grid of step shapes to time, what it will cost, and timing one point through the engine.

Every point is one forward-step shape the advisor predicts with `advisor.model.cost.costmodel`:
  prefill  B prompts of q tokens, nothing cached                       -> prefill_time(B, q)
  decode   B sequences, 1 new token each, `steps` steps from context L  -> step_time(B, 1, L + 1 + (steps-1)/2)
  verify   B sequences, q new tokens each on L cached (q = k+1)         -> step_time(B, q, L), sampling one row per
           sequence (to vLLM these are new requests whose prefix is cached; a decode-shaped batch only at q = 1);
           on a GPU the target's q > 1 points are timed as vLLM verifies, a uniform decode of q tokens per sequence
           (`uniform`: calibration/engine/uniform_verify.py), sampling every row
Each measured point records the CUDA-graph mode its step ran in (`graph_mode`: engine/platform.py `step_graph_mode`),
and the prediction follows it: a step run without graphs (the draft model on a GPU, as V2 runs its passes) pays no
graph's floors, and on a GPU is one engine step and one eager pass, whose host work beyond the piecewise floor
(launching every kernel: StandaloneARSpeculator._run_model, cudagraph_runtime_mode NONE) is `draft_pass_overhead`,
what each draft pass of a speculative step pays again (costmodel.draft_pass; fit.py fits it from these steps).
Decode and verify contexts come from one set of primed prefixes (B_max × L_max tokens prefilled once): the prefix
cache serves any shorter prefix of them, so the grid pays for priming once instead of per point.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from importlib import metadata

import numpy as np

from advisor.model.cost.costmodel import chunks, prefill_time, step_time
from advisor.model.cost.enginecost import EngineCost
from advisor.model.shape.modelspec import ModelSpec
from advisor.profiles import visible_gpu
from calibration.engine.platform import nvml_bindings
from calibration.engine.uniform_verify import uniform_verify

KINDS = ("prefill", "decode", "verify")
PLAN_BLOCK = 128  # contexts are multiples of this: whole KV blocks for vLLM's GPU (16) and CPU (128) defaults
PLAN_CHUNK = 2048  # prefill and verify steps stay under this many tokens, within any default token budget
DECODE_STEPS = 8  # decode steps timed per repeat: their mean period is one sample
WARMUP_TOKENS = 64  # a short prefill + decode before timing: first calls allocate and load kernels


@dataclass(frozen=True, slots=True, order=True)
class Point:
    """One step shape to time."""

    kind: str  # "prefill" | "decode" | "verify"
    batch: int  # sequences in the step, B
    new_tokens: int  # q: prompt length (prefill), 1 (decode), k+1 (verify)
    context: int  # tokens cached per sequence before the (first) step, L; a multiple of the KV block size
    uniform: bool = False  # a verify point timed as a uniform decode of q tokens per sequence (see the docstring)
    graph_mode: str = ""  # how vLLM ran its step: FULL, PIECEWISE or NONE ("": not recorded, profiles before)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Point.kind must be one of {KINDS}, got {self.kind!r}")
        if self.batch < 1 or self.new_tokens < 1 or self.context < 0:
            raise ValueError(f"Point: batch and new_tokens must be >= 1 and context >= 0, got {self}")

    @property
    def key(self) -> str:
        return f"{self.kind}:B{self.batch}:q{self.new_tokens}:L{self.context}"

    @property
    def admitted(self) -> bool:
        """Timed as the first step of freshly added requests (prefill, verify), not of running ones (decode)."""
        return not self.repeated

    @property
    def steps(self) -> int:
        """Engine steps one sample runs: a decode sample generates DECODE_STEPS + 1 tokens (a first step, then the
        timed ones whose mean period is the sample; vllm_engine.Engine.decode), every other kind one step."""
        return DECODE_STEPS + 1 if self.repeated else 1

    @property
    def repeated(self) -> bool:
        """Timed over DECODE_STEPS steps of running sequences: decode, and a uniform verification."""
        return self.kind == "decode" or self.uniform

    def model_context(self) -> float:
        """The context `step_time` is evaluated at: decode averages over its timed steps."""
        return self.context + 1 + (DECODE_STEPS - 1) / 2 if self.repeated else float(self.context)


def predict(model: ModelSpec, cost: EngineCost, points: list[Point], chunk_tokens: int, tp: int = 1) -> np.ndarray:
    """The advisor's cost model at every point, seconds (the same functions `recommend` uses), on `tp` GPUs of
    tensor parallelism (each step then pays its all-reduces: costmodel.allreduce_time)."""
    if not points:
        return np.zeros(0)
    batch = np.array([p.batch for p in points], dtype=float)
    q = np.array([p.new_tokens for p in points], dtype=float)
    context = np.array([p.model_context() for p in points])
    is_prefill = np.array([p.kind == "prefill" for p in points])
    repeated = np.array([p.repeated for p in points])
    graphs = np.array([p.graph_mode != "NONE" for p in points])
    # a verify point is B new requests of q tokens on a cached prefix: logits at their last positions, and a uniform
    # decode-shaped batch (one CUDA graph) only when q = 1 (vLLM's uniform_decode_query_len without speculation);
    # a uniform verification is decode-shaped at q, every row sampled
    step = np.where(repeated, step_time(model, cost, batch, q, context, tp, uniform=graphs),
                    np.where(q == 1, step_time(model, cost, batch, q, context, tp, sampled=batch, uniform=graphs),
                             step_time(model, cost, batch, q, context, tp, sampled=batch, uniform=False)))
    eager = np.array([p.graph_mode == "NONE" for p in points]) & (not cost.on_cpu)  # one eager pass per chunk
    passes = np.where(is_prefill, chunks(cost, batch, q, chunk_tokens), 1.0)
    return (np.where(is_prefill, prefill_time(model, cost, batch, q, tp, chunk_tokens=chunk_tokens), step)
            + eager * passes * cost.draft_pass_overhead)


def _ladder(low: int, high: int, factor: int = 4) -> list[int]:
    values, v = [], low
    while v < high:
        values.append(v)
        v *= factor
    return sorted({*values, high})


def _round_block(tokens: int, block: int) -> int:
    return max(block, tokens // block * block)


def plan(*, max_batch: int, max_context: int, max_k: int, block_size: int, max_batched_tokens: int,
         role: str = "target", uniform_verify: bool = False) -> list[Point]:
    """The grid for one model: prefill over prompt lengths, decode over batch × context, verify over q = 1..k+1.
    The draft gets the same shapes less the wide verify sweep (it runs one-token steps). `uniform_verify` (a GPU:
    each verification width of the target is timed in an engine of its own, calibration/calibrate/measure.py
    `engine_jobs`) keeps the widths to those a step of at most max_k drafts verifies, q <= max_k + 1."""
    contexts = sorted({_round_block(c, block_size) for c in (max_context // 8, max_context // 2, max_context)})
    batches = _ladder(1, max_batch)
    mid = contexts[len(contexts) // 2]
    points = [Point("prefill", 1, p, 0) for p in _ladder(16, min(max_context, max_batched_tokens))]
    points.append(Point("prefill", 4, max(16, min(max_context, max_batched_tokens) // 8), 0))
    points += [Point("decode", b, 1, c) for b in batches for c in contexts]
    qs = sorted({1, 2, 3, 5, max_k + 1}) if role == "target" else [1, 2, max_k + 1]
    if uniform_verify:  # one engine start (15-75 s on a GPU) per width: none for a width no speculative step has
        qs = [q for q in qs if q <= max_k + 1]
    points += [Point("verify", b, q, mid) for b in batches for q in qs if b * q <= max_batched_tokens]
    points += [Point("verify", b, max_k + 1, contexts[-1]) for b in (1, max_batch) if b * (max_k + 1) <= max_batched_tokens]
    return sorted(set(points))


def held_out(points: list[Point], every: int = 4) -> list[bool]:
    """Which points the fit never sees: every `every`-th point of each kind (by size order), starting with the
    second, so held-out shapes lie inside the fitted range (interpolation, which is how `recommend` uses it)."""
    flags, seen = [], {k: 0 for k in KINDS}
    for p in points:
        flags.append(seen[p.kind] % every == 1)
        seen[p.kind] += 1
    return flags


def sample_seconds(model: ModelSpec, cost: EngineCost, points: list[Point], chunk_tokens: int,
                   tp: int = 1) -> np.ndarray:
    """Planned engine seconds of one sample of each point by the given cost model: its step's predicted time
    times the steps it runs (`Point.steps`). The one plan of a grid's time: its estimate, the progress bar's
    weights and the measured/planned ratio that re-sizes it (calibration/calibrate/budget.py) all use it."""
    return predict(model, cost, points, chunk_tokens, tp) * np.array([p.steps for p in points])


def estimate_seconds(model: ModelSpec, cost: EngineCost, points: list[Point], repeats: int,
                     chunk_tokens: int, tp: int = 1) -> float:
    """Engine time the grid should take (start-up excluded): every repeat of every point, plus priming the
    prefixes (one prefill of B_max × L_max tokens), by the given cost model."""
    if not points:
        return 0.0
    per_point = sample_seconds(model, cost, points, chunk_tokens, tp) * repeats
    cached = [p for p in points if p.kind != "prefill" and p.context > 0]
    prime = 0.0
    if cached:
        b, c = max(p.batch for p in cached), max(p.context for p in cached)
        prime = float(prefill_time(model, cost, b, c, tp, chunk_tokens=chunk_tokens))
    return float(per_point.sum() + prime)


def prefixes_for(points: list[Point], vocab: int, seed: int) -> list[list[int]]:
    """B_max random prefixes of L_max tokens (ids 10.. avoid special tokens), to be primed once."""
    cached = [p for p in points if p.kind != "prefill"]
    if not cached:
        return []
    b, c = max(p.batch for p in cached), max(p.context for p in cached)
    rng = np.random.default_rng(seed)
    return [rng.integers(10, vocab, c).tolist() for _ in range(b)]


def measure(engine, point: Point, prefixes: list[list[int]], repeats: int, rng: np.random.Generator) -> list[float]:
    """`repeats` timings of one point, seconds. Prefill prompts are fresh random tokens (no cache hits)."""
    if point.kind == "prefill":
        return [engine.prefill([rng.integers(10, engine.vocab_size, point.new_tokens).tolist()
                                for _ in range(point.batch)]) for _ in range(repeats)]
    mine = [p[:point.context] for p in prefixes[:point.batch]]
    if point.uniform:
        return uniform_verify(engine, mine[0], point.batch, DECODE_STEPS, repeats, rng)
    if point.kind == "decode":
        return engine.decode(mine, DECODE_STEPS, repeats, prime=False)
    return engine.verify(mine, point.new_tokens, repeats, prime=False)


def point_of(m) -> Point:
    """The Point of a profile's Measurement."""
    return Point(m.kind, m.batch, m.new_tokens, m.context, m.uniform, m.graph_mode)


def warm_up(engine, rng: np.random.Generator) -> None:
    engine.generate([rng.integers(10, engine.vocab_size, WARMUP_TOKENS).tolist() for _ in range(2)], 8)


def summary(samples: list[float]) -> tuple[float, float]:
    """Median and relative spread ((max - min) / median) of one point's samples."""
    med = float(np.median(samples))
    return med, float((max(samples) - min(samples)) / med) if med > 0 else 0.0


def system_info() -> dict:
    """What the timings were measured on: the GPU (via NVML when present) or the CPU. Whether it is a GPU run at
    all is vLLM's platform's call (calibration/calibrate/machine.py `detect_hardware`), not NVML's."""
    info = {"platform": platform.platform(), "python": platform.python_version(), "cpu": _cpu_model(),
            "cpu_count": os.cpu_count(), "load_average_1m": os.getloadavg()[0],  # others' load skews timings
            "gpu": None, "driver": None}  # a CPU run, unless NVML names a GPU
    gpu = visible_gpu.read_or_none(nvml_bindings())  # the extra's NVML, else vLLM's own copy
    if gpu is not None:
        info.update(gpu=gpu.name, driver=gpu.driver, gpu_memory_bytes=gpu.memory_bytes, gpu_mig=gpu.mig)
    try:
        info["torch"] = metadata.version("torch")  # torch.__version__, without the seconds its import takes
    except metadata.PackageNotFoundError:
        pass
    return info


def _cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"
