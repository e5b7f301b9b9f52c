"""The grid keeps to --budget-seconds by what the engine measures: a model far slower than planned gets a smaller
grid after its first points, said on stderr with the time it will take. Driven by a stand-in engine whose every
step takes 20x the planned time (the samples are what it returns, and the clock measure.py reads moves by as much:
no engine, no waiting)."""

import types


import pytest

from calibration.calibrate import bench, budget, measure
from calibration.calibrate import profile_file as prof
from calibration.calibrate.grid import Grid
from calibration.calibrate.run import run_calibration
from calibration.engine.tinymodels import TINY_DRAFT, TINY_TARGET, write_model_dir

SLOWER = 20.0


class SlowEngine:
    """What measure.py asks of an Engine; each timing is SLOWER × the cost model's own prediction, and takes that
    long on `clock` (every step of it)."""

    clock = [0.0]

    vocab_size, block_size, kv_capacity_tokens, tensor_parallel_size = 256, 16, 0, 1
    max_num_batched_tokens, max_num_seqs, dtype, vllm_version = 8192, 256, "bfloat16", "0.32.0"

    def __init__(self, spec, cost):
        self.spec, self.cost, self.engine_args, self.vllm_config = spec, cost, {}, {"model_runner": "v1"}
        self.closed = False

    def _time(self, kind, batch, new, context):
        point = bench.Point(kind, batch, new, context)
        seconds = SLOWER * float(bench.predict(self.spec, self.cost, [point], self.max_num_batched_tokens)[0])
        self.clock[0] += seconds * point.steps
        return seconds

    def generate(self, prompts, max_tokens, *args, **kwargs):
        return []

    def prefill(self, prompts):
        return self._time("prefill", len(prompts), len(prompts[0]), 0)

    def decode(self, prefixes, steps, repeats=1, *, prime=True):
        return [self._time("decode", len(prefixes), 1, len(prefixes[0]))] * repeats

    def verify(self, prefixes, q, repeats=1, *, prime=True):
        return [self._time("verify", len(prefixes), q, len(prefixes[0]))] * repeats

    def close(self):
        self.closed = True


def test_a_slow_model_gets_a_grid_resized_to_the_budget(tmp_path, monkeypatch, capsys):
    from advisor.profiles.catalog import load_model
    from calibration.calibrate import machine

    target, draft = write_model_dir(tmp_path / "t", TINY_TARGET), write_model_dir(tmp_path / "d", TINY_DRAFT)
    cost, _ = machine.planning_cost("cpu", on_cpu=True)
    specs = {str(target): load_model(str(target)), str(draft): load_model(str(draft))}
    monkeypatch.setattr(measure, "_open", lambda source, *a, **options: SlowEngine(specs[source], cost))
    monkeypatch.setattr(measure, "time", types.SimpleNamespace(monotonic=lambda: SlowEngine.clock[0]))
    monkeypatch.setattr("calibration.calibrate.run.detect_hardware", lambda gpu: ("cpu", {"gpu": None}))
    monkeypatch.setattr("calibration.calibrate.run.planning_cost", lambda hw, on_cpu: (cost, "a test cost"))
    monkeypatch.setattr("calibration.calibrate.run.fit_profile", lambda *a: None)  # the fit is not under test
    out = tmp_path / "cal.json"
    budget_s = 600.0
    planned = Grid(max_batch=16, max_context=1024, max_k=3, dummy_weights=True, seed=0)
    from calibration.calibrate.grid import shrink_to_budget

    first, _ = shrink_to_budget(planned, {"target": specs[str(target)], "draft": specs[str(draft)]}, cost, 3,
                                budget_s)
    run_calibration(target=str(target), draft=str(draft), dummy_weights=True, max_batch=None, max_context=None,
                    max_k=3, repeats=3, min_seconds=0.0, budget_seconds=budget_s, out=str(out), resume=False,
                    gpu="cpu")
    err = capsys.readouterr().err
    assert f"at {SLOWER:.2g}x their planned time" in err and "re-sized to batch" in err
    profile = prof.load(out)
    resized = Grid(**profile.settings)
    assert (resized.max_batch, resized.max_context) < (first.max_batch, first.max_context)
    for run in (profile.target, profile.draft):  # every point of the new grid measured, none of the old left over
        assert all(len(m.samples) >= 3 for m in run.points)
        assert sorted((m.kind, m.batch, m.new_tokens, m.context) for m in run.points) == sorted(
            (p.kind, p.batch, p.new_tokens, p.context) for p in resized.points("target" if run is profile.target
                                                                                 else "draft"))


def test_a_fast_first_measurement_never_grows_the_grid_past_the_running_engines():
    """The engine was opened for the first grid (its max_model_len, its KV cache): a re-size that the measured
    speed would let grow past it keeps within it. A clean CI run of the docs' MoE calibration (--budget-seconds
    150) grew context 512 -> 1024 on an engine holding 588 tokens, and vLLM refused the 1024-token prompt."""
    from advisor.profiles.catalog import load_model
    from calibration.calibrate import machine
    from calibration.calibrate.grid import resized

    cost, _ = machine.planning_cost("cpu", on_cpu=True)
    specs = {"target": load_model("tiny-llama-target"), "draft": load_model("tiny-llama-draft")}
    largest = Grid(max_batch=16, max_context=1024, max_k=3, dummy_weights=True, seed=0)
    running = Grid(max_batch=16, max_context=512, max_k=3, dummy_weights=True, seed=0)
    grown, _ = resized(largest, specs, cost, 3, 1e6, 0.01)  # points far faster than planned: the largest grid
    assert grown.max_context == 1024
    kept, seconds = resized(largest, specs, cost, 3, 1e6, 0.01, ceiling=running)
    assert (kept.max_batch, kept.max_context) == (16, 512) and seconds == pytest.approx(
        running.estimate(specs, cost, 3) * 0.01)


def test_extra_rounds_stop_before_the_budget():
    assert budget.another_round_fits(10.0, 2, 15.0) and not budget.another_round_fits(10.0, 2, 14.9)
    assert measure.next_round([3, 3], seconds=9.0, repeats=3, min_seconds=60.0, budget=10.0) is None
    assert measure.next_round([3, 3], seconds=9.0, repeats=3, min_seconds=60.0) == 3


def test_the_ratio_waits_for_enough_points():
    run = prof.ModelRun(name="t", source="t", arch={}, config={}, points=[
        {"kind": "decode", "batch": 1, "new_tokens": 1, "context": 128, "heldout": False, "samples": [1.0]}])
    assert budget.time_ratio(run, None, None) is None


def test_the_ratio_of_a_run_at_a_fixed_slowdown_is_that_slowdown(llama8b):
    """The ratio is wall clock against the plan (`sample_seconds`), as --budget-seconds counts: the engine clock's
    step times leave out the host's work around them. Steps that the engine times at their prediction but that took
    3x the planned wall time to measure read 3x, decode points included."""
    from calibration.calibrate.machine import CPU_PLANNING_COST as cost

    points = Grid(max_batch=4, max_context=256, max_k=3, dummy_weights=True, seed=0).points("target")
    steps = bench.predict(llama8b, cost, points, bench.PLAN_CHUNK)
    run = prof.ModelRun(name="t", source="t", arch={}, config={}, chunk_tokens=bench.PLAN_CHUNK, points=[
        {"kind": p.kind, "batch": p.batch, "new_tokens": p.new_tokens, "context": p.context, "heldout": False,
         "samples": [float(t)]} for p, t in zip(points, steps)])
    run.engine_seconds = 3.0 * float(bench.sample_seconds(llama8b, cost, points, bench.PLAN_CHUNK).sum())
    assert any(p.kind == "decode" for p in points) and budget.time_ratio(run, llama8b, cost) == pytest.approx(3.0)


def test_the_estimate_counts_engine_starts(llama8b):
    """A GPU calibration of a pair starts the target, one engine per uniform verification width and the draft."""
    from calibration.calibrate.grid import describe

    grid = Grid(max_batch=4, max_context=256, max_k=3, dummy_weights=True, seed=0, uniform_verify=True)
    text = describe(grid, {"target": llama8b, "draft": llama8b}, 100.0, 3, 0.0, "a test", gpu=True)
    assert f"+ 5 engine starts at ~{budget.START_SECONDS_GPU:.0f} s: about {100 + 5 * budget.START_SECONDS_GPU:.0f}" \
        " s in all" in text  # widths q = 2, 3, 4
    cpu = Grid(max_batch=4, max_context=256, max_k=3, dummy_weights=True, seed=0)
    assert "+ 2 engine starts" in describe(cpu, {"target": llama8b, "draft": llama8b}, 100.0, 3, 0.0, "a test")
