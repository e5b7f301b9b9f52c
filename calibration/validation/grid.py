"""What a validation runs and what it measured: the grid (pairs × k × shapes, passes, family, TP) and one `Run`
per measured point, with the counts the report derives from the engine's counters (`Run.steps`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from advisor.errors import InputError
from calibration.engine.testpair import PairSpec, TinyArch, family_arch


SYNC_BASELINE = "baseline_sync"  # the baseline engine with async scheduling off (Grid.sync_baseline)


def is_baseline(method: str) -> bool:
    return method in ("baseline", SYNC_BASELINE)


@dataclass(frozen=True, slots=True)
class Grid:
    """What to run. Every pair is one acceptance level of the `draft_model` method; `ngram` adds the n-gram
    proposer on the first pair's target."""

    scales: tuple[float, ...]  # test-pair residual scales (calibration.engine.testpair), one acceptance level each
    ks: tuple[int, ...]  # draft lengths
    batches: tuple[int, ...]  # concurrent requests per point
    prompt_lens: tuple[int, ...]  # prompt tokens
    out_lens: tuple[int, ...]  # output tokens asked per request
    ngram: bool = True  # also run the n-gram proposer at every k
    draft_layers: int = 1  # the draft is the target's first draft_layers layers
    family: str = "llama"  # the pairs' architecture (calibration.engine.testpair.ARCHS)
    tensor_parallel_size: int = 1  # every engine splits target and draft over this many workers (vLLM's mp executor)
    seed: int = 0  # weights, prompts and sampling seeds
    temperatures: tuple[float, ...] = (0.0,)  # sampling temperatures (0: greedy); acceptance falls with sampling
    baseline_twice: bool = True  # run the baseline again at the end: exposes drift in the machine's speed
    passes: int = 1  # times the whole engine list runs (fresh engines each time); points take the median
    repeats: int = 1  # generate calls per shape on each engine, in rounds over the shapes (all kept)
    # also run the baseline synchronously (SYNC_BASELINE): set where vLLM runs the baseline async and ngram sync (a
    # GPU), so n-gram's bookkeeping is measured against a baseline scheduled as it is, and the difference between
    # the two baselines is the host time async scheduling hides (report.py `spec_overheads`, `sync_host_seconds`)
    sync_baseline: bool = False

    def __post_init__(self) -> None:
        names = ("scales", "ks", "batches", "prompt_lens", "out_lens", "temperatures")
        empty = [n for n in names if not getattr(self, n)]
        if empty:
            raise InputError(f"the validation grid is empty: give at least one value for {', '.join(empty)}")
        if min(self.ks) < 1 or min(self.batches) < 1 or min(self.prompt_lens) < 1 or min(self.out_lens) < 2:
            raise InputError("grid values must be positive (k, batch, prompt length >= 1; output length >= 2)")
        if self.passes < 1 or self.repeats < 1:
            raise InputError(f"--passes and --repeats must be at least 1, got {self.passes} and {self.repeats}")
        if self.tensor_parallel_size < 1:
            raise InputError(f"--num-gpus must be at least 1, got {self.tensor_parallel_size}")
        PairSpec(scale=self.scales[0], draft_layers=self.draft_layers, seed=self.seed, arch=self.arch)  # checks them

    @property
    def arch(self) -> TinyArch:
        return family_arch(self.family)[0]

    def pair_spec(self, scale: float) -> PairSpec:
        return PairSpec(scale=scale, draft_layers=self.draft_layers, seed=self.seed, arch=self.arch)

    def shapes(self) -> list[tuple[int, int, int, float]]:
        """(batch, prompt length, output length, temperature): one generate call each."""
        return [(b, p, o, t) for t in self.temperatures for p in self.prompt_lens for o in self.out_lens
                for b in self.batches]

    def runs_per_engine(self) -> int:
        return len(self.shapes()) * self.repeats

    def engines(self) -> list[tuple[str, float | None, int]]:
        """(method, scale, k) per engine to start. The baseline runs first and again last: speedups divide by
        the median of its runs, and their difference shows how much the machine drifted during the run."""
        runs = [("baseline", None, 0)] + ([(SYNC_BASELINE, None, 0)] if self.sync_baseline and self.ngram else [])
        runs += [("draft_model", s, k) for s in self.scales for k in self.ks]
        runs += [("ngram", None, k) for k in self.ks] if self.ngram else []
        return runs + ([("baseline", None, 0)] if self.baseline_twice else [])


@dataclass(frozen=True, slots=True)
class Run:
    """One measured point: an engine (method, pair, k) on one shape (batch, prompt, output)."""

    method: str  # baseline | draft_model | ngram
    scale: float | None  # the pair's residual scale (draft_model), else None
    k: int  # draft length (0: baseline)
    batch: int  # requests started together
    prompt_len: int  # tokens per prompt
    out_len: int  # tokens asked per request
    temperature: float = 0.0  # sampling temperature
    tokens: int = 0  # fewest tokens any request returned (< out_len: flagged)
    ttft_s: float | None = None  # median over requests, s
    tpot_s: float | None = None  # median over requests, s per output token after the first
    e2e_s: float | None = None  # median request latency, s
    throughput_tps: float | None = None  # output tokens / s over the whole batch
    drafts: int = 0  # counter deltas: verification steps with drafts
    draft_tokens: int = 0  # draft tokens proposed
    accepted: int = 0  # draft tokens accepted
    per_position: tuple[int, ...] = ()  # steps whose first i+1 drafts were accepted
    error: str | None = None  # why this point has no (trustworthy) measurement
    pass_index: int = 0  # which pass over the engine list measured it (Grid.passes)
    repeat: int = 0  # which round over the shapes on its engine (Grid.repeats)
    async_scheduling: bool = False  # the engine scheduled asynchronously (vLLM on a GPU, but not for ngram)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def steps(self) -> int:
        """Target steps of all requests together during decode. Each yields one token of the target's own plus the
        drafts it accepted, so steps = decode tokens − accepted; but the counters also count drafts accepted past
        max_tokens in a request's last step (truncated from the output), and every draft-model step verifies
        drafts, so steps is never fewer than the drafts counted."""
        decode_tokens = self.batch * (self.tokens - 1)
        return max(decode_tokens - self.accepted, self.drafts, 1) if self.k else decode_tokens

    @property
    def tokens_per_step(self) -> float:
        """Output tokens per target step during decode, as the timing saw them (truncation included). With
        n-gram some steps carry no draft, so vLLM's 1 + accepted/drafts would overstate what a step yields."""
        return self.batch * (self.tokens - 1) / self.steps if self.k else 1.0

    @property
    def draft_share(self) -> float:
        """Share of sequences' steps that carried drafts: 1 for a draft model, less for n-gram."""
        return min(self.drafts / self.steps, 1.0) if self.k else 0.0


def shape_of(r: Run) -> tuple:
    """The shape a run measured: (batch, prompt length, output length, temperature)."""
    return (r.batch, r.prompt_len, r.out_len, r.temperature)


def point_of(r: Run) -> tuple:
    """One grid point (engine and shape): what several passes measure again."""
    return (r.method, r.scale, r.k, *shape_of(r))


def engine_of(r: Run) -> tuple:
    """One engine instance: the pass it ran in and what it served."""
    return (r.pass_index, r.method, r.scale, r.k)


def grouped(runs: Iterable[Run], key: Callable[[Run], tuple]) -> dict[tuple, list[Run]]:
    """Runs by key, each group in the order the runs came."""
    groups: dict[tuple, list[Run]] = {}
    for r in runs:
        groups.setdefault(key(r), []).append(r)
    return groups
