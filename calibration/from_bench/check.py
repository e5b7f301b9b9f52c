"""`specadvisor check`: the advisor's prediction of a baseline and a speculative `vllm bench serve` run, next to
what they measured.

Both runs are predicted at their own load (concurrency or request rate, mean prompt and output lengths) with
the speculative run's k and its measured per-position acceptance (from the file, or exact from /metrics scrapes),
through `predict` (the advisor's serving model) and the costs `recommend` would use (a calibration that applies,
else the datasheet). The verdict is judged as `recommend` judges it (advisor.advice.verdict.rule): the predicted one
from the predicted end-to-end speedup, the low end of its 80% interval (α's interval and the cost model's own error, as
`recommend` takes it), and the throughput speedup; the measured one from the measured speedups, where the
measurement is its own low end.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.advice.confidence import cost_sigmas
from advisor.advice.verdict import rule
from advisor.errors import InputError
from advisor.measured.posterior import acceptance_from_counts
from advisor.model.acceptance.conventions import Acceptance
from advisor.model.cost.speculative import Setup
from advisor.model.uncertainty import CostError, band
from calibration.from_bench.predict import Predicted, predict
from calibration.from_bench.runs import BenchRun, Measured

SAME_SHAPE = 0.02  # mean prompt and output lengths of the two runs may differ by this much (random datasets vary)
METRICS = (("ttft", "TTFT", "ms", 1e3), ("tpot", "TPOT", "ms", 1e3), ("itl", "ITL", "ms", 1e3),
           ("e2e", "E2E latency", "ms", 1e3), ("throughput", "output throughput", "tok/s", 1.0))


@dataclass(frozen=True, slots=True)
class Row:
    run: str  # "baseline" | "speculative" | "speedup"
    metric: str  # as named in METRICS
    unit: str  # "ms", "tok/s", "x"
    predicted: float
    measured: float

    @property
    def error(self) -> float:
        """predicted / measured - 1."""
        return self.predicted / self.measured - 1.0


@dataclass(frozen=True, slots=True)
class Check:
    baseline: BenchRun
    spec: BenchRun
    method: str
    acceptance: Acceptance  # the speculative run's measured acceptance, with α's posterior interval
    cost_source: str
    rows: tuple[Row, ...]
    predicted_verdict: str
    measured_verdict: str

    @property
    def verdict_right(self) -> bool:
        return self.predicted_verdict == self.measured_verdict


def check_runs(baseline: BenchRun, spec: BenchRun) -> None:
    """InputError (one line) unless these are a plain and a speculative serve run of one workload."""
    for run in (baseline, spec):
        if run.kind != "serve":
            raise InputError(f"check compares `vllm bench serve` runs (TTFT, TPOT, ITL); {run.path} is a "
                             f"`vllm bench {run.kind}` result")
    if baseline.speculative:
        raise InputError(f"{baseline.path} ran with speculation (k={baseline.k}): --baseline takes a run without it")
    if not spec.speculative:
        raise InputError(f"{spec.path} has no speculative-decoding counts: it ran without speculation (or its server "
                         "exposed no /metrics), so it cannot be --spec")
    if baseline.model != spec.model:
        raise InputError(f"the runs served different models ({baseline.model} and {spec.model})")
    a, b = baseline.load, spec.load
    for name, x, y in (("prompt", a.prompt_len, b.prompt_len), ("output", a.out_len, b.out_len)):
        if abs(x - y) > SAME_SHAPE * max(x, y):
            raise InputError(f"the runs differ in mean {name} length ({x:.0f} and {y:.0f} tokens): compare runs of "
                             "one workload")
    if (a.concurrency, a.request_rate) != (b.concurrency, b.request_rate):
        raise InputError("the runs ran at different loads (--max-concurrency / --request-rate / --num-prompts): "
                         "compare runs of one workload")


def run_check(baseline: BenchRun, spec: BenchRun, setup: Setup, cost_source: str,
              cost_error: CostError | None = None) -> Check:
    check_runs(baseline, spec)
    acc = acceptance_from_counts(spec.counts, f"the speculative run {spec.path}, {spec.counts_source}")
    base = predict(setup, baseline)
    fast = predict(setup, spec)
    low, high = (predict(setup, spec, acc.survival(spec.k, alpha)) for alpha in (acc.low, acc.high))
    rows = [*_rows("baseline", base, baseline.measured), *_rows("speculative", fast, spec.measured)]
    speedups = [("TPOT", base.tpot / fast.tpot, baseline.measured.tpot / spec.measured.tpot),
                ("E2E latency", base.e2e / fast.e2e, baseline.measured.e2e / spec.measured.e2e),
                ("output throughput", fast.throughput / base.throughput,
                 spec.measured.throughput / baseline.measured.throughput)]
    rows += [Row("speedup", name, "x", predicted, measured) for name, predicted, measured in speedups]
    predicted_verdict = str(rule(speedups[1][1], _low_end(setup, spec, fast, base.e2e / low.e2e,
                                                         base.e2e / high.e2e, speedups[1][1], cost_error),
                                 speedups[2][1]))
    measured_verdict = str(rule(speedups[1][2], speedups[1][2], speedups[2][2]))
    return Check(baseline, spec, setup.method, acc, cost_source, tuple(rows), predicted_verdict, measured_verdict)


def _low_end(setup: Setup, spec: BenchRun, fast: Predicted, at_low: float, at_high: float, point: float,
             cost_error: CostError | None) -> float:
    """The low end of the predicted end-to-end speedup's 80% interval, as `recommend` takes it (advisor/confidence):
    the acceptance's interval and the cost model's error, at the run's concurrency (1 for an open-loop run)."""
    load = spec.load
    _, sigma = cost_sigmas(cost_error, setup, fast.tokens_per_step, spec.k, load.concurrency or 1, load.prompt_len,
                           load.out_len)
    return float(band(point, at_low, at_high, sigma).low)


def _rows(label: str, predicted: Predicted, measured: Measured) -> list[Row]:
    return [Row(label, name, unit, getattr(predicted, key) * scale, getattr(measured, key) * scale)
            for key, name, unit, scale in METRICS]
