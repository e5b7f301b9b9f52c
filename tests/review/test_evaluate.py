"""`specadvisor review plan.toml`: the plan file, the capacity math, the review of both shipped plans, the
Markdown and self-contained HTML it writes, and bad plans (reported in the review, or one line and exit 2)."""

import base64
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from advisor.advice.advise import K_TABLE
from advisor.advice.recommendation import Recommendation
from advisor.advice.resolve import AcceptanceInput, build_scenario
from advisor.cli.app import app, main
from advisor.errors import InputError
from advisor.model.cost import capacity as cap
from advisor.profiles.catalog import profiles_dir
from advisor.review.evaluate import review, totals
from advisor.review.plan import Lengths, load_plan

pytest.importorskip("matplotlib")
PLANS = sorted((profiles_dir() / "plans").glob("*.toml"))
SECTIONS = ("## Summary", "## Totals per deployment", "## Pictures", "## Details", "## How the capacity is computed")
RECOMMENDATIONS = {"enable", "marginal", "disable", "does not fit", "SLOs unreachable", "error"}
runner = CliRunner()


def test_two_example_plans_ship():
    assert {p.name for p in PLANS} >= {"rag-chat.toml", "code-assistant.toml"}


def test_buckets_give_a_weighted_mean_and_p90():
    lengths = Lengths(buckets=[{"tokens": 300, "share": 5}, {"tokens": 1500, "share": 3.5},
                               {"tokens": 4000, "share": 1.5}])
    mean, p90 = lengths.stats()
    assert mean == pytest.approx((300 * 5 + 1500 * 3.5 + 4000 * 1.5) / 10)
    assert p90 == 4000  # 50% + 35% = 85% < 90%: the 90th percentile request is in the last bucket
    assert Lengths(mean=800).stats() == (800, 800)


@pytest.fixture(scope="module")
def curve():
    s = build_scenario(prompt_len=2000, out_len=400, acceptance=AcceptanceInput(task="chat"))
    E = s.acceptance.expected_tokens(np.arange(K_TABLE + 1))
    shape = cap.Shape(prompt_mean=2000, prompt_p90=6000, out_mean=400)
    return cap.load_curve(s.setup, E, shape, 256, speculative=True), shape


def test_load_curve_obeys_littles_law(curve):
    c, shape = curve
    # B = λ · W, with W the decode residence (O - 1) · TPOT of each request (Little 1961)
    assert np.allclose(c.batch, c.rate * (shape.out_mean - 1) * c.tpot, rtol=1e-12)
    assert np.all(np.diff(c.rate) >= 0) and np.all(c.prefill_share < 1)
    # TTFT grows with B at a fixed k; it falls only where the schedule drops to a smaller k (a shorter step)
    falls = np.diff(c.ttft) < 0
    assert np.all(np.diff(c.k)[falls] < 0)


def test_sustainable_is_the_last_load_within_both_slos(curve):
    c, _ = curve
    ttft_slo, tpot_slo = float(np.median(c.ttft)), float(np.median(c.tpot))
    best = cap.sustainable(c, ttft_slo, tpot_slo, "max_num_seqs (256)")
    i = int(np.nonzero(c.batch == best.batch)[0][0])
    assert c.tpot[i] <= tpot_slo and c.ttft[i] <= ttft_slo
    assert c.tpot[i + 1] > tpot_slo or c.ttft[i + 1] > ttft_slo
    assert best.bound in ("TPOT SLO", "TTFT SLO")
    assert cap.concurrency_at(c, best.rate) == best.batch


@pytest.fixture(scope="module", params=PLANS, ids=lambda p: p.stem)
def written(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param.stem)
    result = runner.invoke(app, ["review", str(request.param), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return request.param, out, result.output


def test_review_writes_markdown_html_and_pictures(written):
    plan_path, out, printed = written
    plan = load_plan(plan_path)
    assert sorted(p.name for p in out.iterdir()) == ["curves.png", "overview.png", "review.html", "review.md"]
    md = (out / "review.md").read_text()
    assert [s for s in SECTIONS if s not in md] == []
    for w in plan.workload:
        for d in plan.deployment:
            assert f"### {w.name} on {d.name}:" in md
            assert f"{w.name} on {d.name}:" in printed
    for png in ("overview.png", "curves.png"):
        assert f"]({png})" in md and (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_html_is_self_contained(written):
    _, out, _ = written
    page = (out / "review.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert not re.search(r'(src|href)="(?!data:)', page)  # nothing to fetch: every image is inline
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 2 and all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in images)


def test_review_numbers_follow_from_the_capacity(written):
    plan_path, _, _ = written
    plan = load_plan(plan_path)
    r = review(plan, plan_path)
    for c in r.cells:
        assert c.recommendation in RECOMMENDATIONS
        w = next(x for x in plan.workload if x.name == c.workload)
        d = next(x for x in plan.deployment if x.name == c.deployment)
        for side in (c.base, c.spec):
            if side is None or side.best.rate == 0:
                continue
            assert side.best.tpot <= w.slo.tpot_ms / 1e3 and side.best.ttft <= w.slo.ttft_ms / 1e3
            assert side.gpus == math.ceil(w.rate / side.best.rate) * d.tensor_parallel
            assert side.usd_per_mtok == pytest.approx(
                d.usd_per_gpu_hour * d.tensor_parallel / (side.best.rate * c.shape.out_mean * 3600) * 1e6)
        if c.recommendation == "enable" and c.base.gpus is not None:
            assert c.spec.gpus <= c.base.gpus
        if c.recommendation == "disable" and c.base.gpus is not None and c.spec.gpus is not None:
            assert c.spec.gpus >= c.base.gpus
        if c.base is not None:  # the advice at the planned load, which decides when both sides need the same GPUs
            assert isinstance(c.advice, Recommendation) and c.advice.inputs.batch >= 1
            if c.reason.startswith("same GPUs"):
                assert c.recommendation == c.advice.verdict and f"k={c.advice.best_k}," in c.reason
    for t in totals(r):
        cells = [c for c in r.cells if c.deployment == t["deployment"]]
        served = [c for c in cells if c.base is not None and c.base.gpus is not None and c.spec.gpus is not None]
        assert len(served) + len(t["left_out"]) == len(cells)
        if served:  # sums over the workloads both sides serve, so with and without stay comparable
            assert t["gpus_base"] == sum(c.base.gpus for c in served)
            assert t["gpus_spec"] == sum(c.spec.gpus for c in served)


BAD_PLAN = """
title = "broken on purpose"
[[workload]]
name = "tight"
rate = 2
prompt = {{ mean = 2000 }}
output = {{ mean = 300 }}
acceptance = {{ alpha = 0.7 }}
slo = {{ ttft_ms = 1000, tpot_ms = 2 }}
[[workload]]
name = "huge-prompts"
rate = 1
prompt = {{ mean = 100000, p90 = 120000 }}
output = {{ mean = 300 }}
acceptance = {{ task = "rag" }}
slo = {{ ttft_ms = 100000, tpot_ms = 100 }}
[[deployment]]
name = "l4"
gpu = "l4"
count = 2
target = "llama-3.1-8b-instruct"
[[deployment]]
name = "typo"
gpu = "{gpu}"
count = 2
target = "{model}"
"""


def test_bad_names_slos_and_sizes_are_reported_not_raised(tmp_path):
    plan = tmp_path / "bad.toml"
    plan.write_text(BAD_PLAN.format(gpu="h1000", model="llama-3.1-8b-instruct"))
    result = runner.invoke(app, ["review", str(plan), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    md = (tmp_path / "out" / "review.md").read_text()
    problems = md.split("## Problems")[1].split("## Pictures")[0]
    assert "tight on l4: without speculation: TPOT SLO 2 ms is impossible" in problems
    assert "huge-prompts on l4: does not fit" in problems
    assert "unknown GPU 'h1000'; did you mean h100" in problems
    l4 = next(t for t in totals(review(load_plan(plan), plan)) if t["deployment"] == "l4")
    assert l4["gpus_base"] is None and l4["left_out"] == ["tight (SLOs unreachable)", "huge-prompts (does not fit)"]
    plan.write_text(BAD_PLAN.format(gpu="h100", model="llama-9b"))
    r = review(load_plan(plan), plan)
    assert r.cell("tight", "typo").recommendation == "error" and "unknown model 'llama-9b'" in r.cell("tight", "typo").reason


@pytest.mark.parametrize("text,expected", [
    ('title = "x"\n[[workload]\n', "not valid TOML"),
    (BAD_PLAN.format(gpu="l4", model="x").replace("rate = 2\n", "rate = -2\n"), "workload[0].rate"),
    (BAD_PLAN.format(gpu="l4", model="x").replace("{ alpha = 0.7 }", "{ alpha = 0.7, task = 'chat' }"),
     "exactly one acceptance source"),
    (BAD_PLAN.format(gpu="l4", model="x").replace('name = "typo"', 'name = "l4"'), "repeated: l4"),
    (BAD_PLAN.format(gpu="l4", model="x").replace("count = 2\ntarget = \"x\"", "count = 2\ntarget = \"x\"\ncolour = 1"),
     "deployment[1].colour"),
    # issue 49: a traceback, and three silent answers
    (BAD_PLAN.format(gpu="l4", model="x") + "x = " + "[" * 900 + "]" * 900 + "\n", "nests deeper than 64"),
    (BAD_PLAN.format(gpu="l4", model="x").replace("rate = 2\n", "rate = " + "9" * 400 + "\n"), "64 bits"),
    (BAD_PLAN.format(gpu="l4", model="x").replace("rate = 2\n", "rate = true\n"), "workload[0].rate"),
    (BAD_PLAN.format(gpu="l4", model="x").replace('name = "tight"', 'name = "a\\n# heading"'),
     "workload[0].name"),
    (BAD_PLAN.format(gpu="l4", model="x").replace("count = 2\ntarget = \"x\"",
                                                  "count = 2\ntarget = \"x\"\nusd_per_gpu_hour = 1e308"),
     "deployment[1].usd_per_gpu_hour"),
])
def test_a_malformed_plan_is_one_line_and_exit_2(tmp_path, capsys, text, expected):
    plan = tmp_path / "plan.toml"
    plan.write_text(text)
    assert main(["review", str(plan), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err and str(plan) in err
    assert not (tmp_path / "out").exists()


def test_a_review_that_would_overwrite_its_plan_is_refused(tmp_path, capsys):
    plan = tmp_path / "review.md"
    plan.write_text(BAD_PLAN.format(gpu="l4", model="x"))
    assert main(["review", str(plan), "--out", str(tmp_path)]) == 2
    assert "is the plan this reads" in capsys.readouterr().err and plan.read_text() == BAD_PLAN.format(gpu="l4",
                                                                                                     model="x")


def test_a_plan_of_more_pairs_than_a_review_takes_is_refused_before_any(tmp_path, monkeypatch):
    from advisor.review import evaluate

    monkeypatch.setattr(evaluate, "MAX_PAIRS", 3)
    plan = tmp_path / "bad.toml"
    plan.write_text(BAD_PLAN.format(gpu="l4", model="x"))
    with pytest.raises(InputError, match="2 workloads on 2 deployments are 4 pairs, more than the 3"):
        review(load_plan(plan), plan)


def test_the_help_states_the_bound():
    from advisor.review.evaluate import MAX_PAIRS

    assert f"At most {MAX_PAIRS} workload" in " ".join(app_help("review").split())


def app_help(command: str) -> str:
    return CliRunner().invoke(app, [command, "--help"]).output


def test_a_missing_plan_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["review", str(tmp_path / "nope.toml")]) == 2
    assert "no such plan file" in capsys.readouterr().err


CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine: `apt-get install -y chromium` to run the "
                                              "HTML screenshot test")
def test_html_renders_in_headless_chromium(written, tmp_path):
    import matplotlib.image

    _, out, _ = written
    shot = tmp_path / "shot.png"
    proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--disable-component-update", "--disable-sync", "--no-first-run",
                           f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
                           "--window-size=1280,3200", f"--screenshot={shot}", (out / "review.html").as_uri()],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for failure in ("net::ERR_", "Failed to load resource", "Uncaught", "Not allowed to load"):
        assert failure not in proc.stderr
    pixels = matplotlib.image.imread(shot)[..., :3]
    assert pixels.shape[:2] == (3200, 1280)
    # The embedded plots rendered: their "with speculation" green (plot_style.SPEC, #1b7f5f) is on the page.
    green = np.array([0x1B, 0x7F, 0x5F]) / 255
    assert (np.abs(pixels - green).max(axis=2) < 0.05).sum() > 500


def test_metrics_acceptance_that_cannot_be_read_is_reported_on_its_workload(tmp_path):
    plan = tmp_path / "plan.toml"
    text = BAD_PLAN.format(gpu="h100", model="llama-3.1-8b-instruct")
    plan.write_text(text.replace("{ alpha = 0.7 }", '{ metrics = "missing.prom" }'))
    r = review(load_plan(plan), plan)
    for d in ("l4", "typo"):
        cell = r.cell("tight", d)
        assert cell.recommendation == "error" and ("missing.prom" in cell.reason or "metrics" in cell.reason)
    assert r.cell("huge-prompts", "typo").recommendation != "error"  # the other workload still gets its review


MANY_SHORT = """
[[workload]]
name = "many-short"
rate = 400
prompt = { mean = 200 }
output = { mean = 100 }
acceptance = { alpha = 0.7 }
slo = { ttft_ms = 5000, tpot_ms = 200 }

[[deployment]]
name = "h200"
gpu = "h200"
count = 1
target = "llama-3.2-1b-instruct"
method = "ngram"
{extra}
"""


def test_a_deployment_serves_as_many_sequences_as_vllm_serve_would_on_its_gpu(tmp_path):
    # An H200 (141 GB, >= 70 GiB, not an A100) gets max_num_seqs 1024 from `vllm serve`
    # (advisor.vllm.defaults.batch_defaults); a 1B model's KV cache holds far more, so the class default, not 256, must
    # bind, unless the plan sets one.
    plan = tmp_path / "plan.toml"
    plan.write_text(MANY_SHORT.replace("{extra}", ""))
    cell = review(load_plan(plan), plan).cell("many-short", "h200")
    assert cell.base.best.bound == "max_num_seqs (1024)", cell.base.best
    plan.write_text(MANY_SHORT.replace("{extra}", "max_num_seqs = 256"))
    cell = review(load_plan(plan), plan).cell("many-short", "h200")
    assert cell.base.best.bound == "max_num_seqs (256)", cell.base.best
