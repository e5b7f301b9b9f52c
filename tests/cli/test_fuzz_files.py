"""Fuzzing the files a user (or a broken exporter) hands the advisor: config.json, `vllm bench` results, saved
observe windows and review plans, mutated in type, range and nesting. The property in each case (issue 36): one
line on stderr and exit 2, or a valid answer; never a traceback. A fixed seed (derandomize) keeps CI repeatable;
all of them together, with tests/cli/test_fuzz.py's Prometheus text, stay under 60 s on a 2-core machine."""

import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.errors import InputError
from advisor.review.evaluate import review
from advisor.review.plan import load_plan
from tests.cli.test_fuzz import _check

ROOT = Path(__file__).resolve().parents[2]
FIXED = dict(deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
DEEP = "[" * 200_000 + "]" * 200_000  # issue 36: a RecursionError in every JSON reader

NUMBERS = st.one_of(st.integers(-5, 10**6), st.sampled_from([0, -1, 2**63, 10**400]),
                    st.floats(allow_nan=True, allow_infinity=True), st.floats(0, 1e6))
LEAVES = st.one_of(NUMBERS, st.booleans(), st.none(), st.text(max_size=8))
VALUES = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                           max_size=3), max_leaves=6)


def _dumps(data) -> str:
    """JSON as Python writes it: NaN, Infinity and 1e400 (as Infinity) included, as a hand-edited file may hold."""
    return json.dumps(data, default=str)


def _mutated(base: dict, draw, keys) -> dict:
    """`base` with a few keys (existing or from `keys`) set to random values, now and then inside text_config."""
    out = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(sorted(set(out) | set(keys))))
        where = out.setdefault("text_config", {}) if draw(st.integers(0, 5)) == 0 and isinstance(
            out.get("text_config", {}), dict) else out
        where[key] = draw(VALUES)
    return out


CONFIG = json.loads((ROOT / "profiles/models/llama-3.1-8b-instruct.json").read_text())
BLOCKS = ["text_config", "architectures", "quantization_config", "_specadvisor", "max_position_embeddings",
          "rope_scaling", "layer_types", "num_key_value_heads", "torch_dtype", "sliding_window"]


@settings(max_examples=50, **FIXED)
@given(st.data())
def test_config_json_mutations(data):
    config = _mutated(CONFIG, data.draw, BLOCKS)
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "config.json").write_text(_dumps(config))
        _check(["recommend", "--target", folder, "--draft", "llama-3.2-1b-instruct", "--prompt-len", "1000",
                "--out-len", "200", "--format", "json"])


BENCH = {side: json.loads((ROOT / f"tests/data/bench/{side}.json").read_text()) for side in ("baseline", "spec")}
BENCH_KEYS = ["spec_decode_per_position_acceptance_rates", "latencies", "ttfts", "itls", "output_lens", "input_lens",
              "duration", "completed", "max_concurrency", "spec_decode_num_drafts", "spec_decode_accepted_tokens"]


@settings(max_examples=40, **FIXED)
@given(st.data(), st.sampled_from(["baseline", "spec"]))
def test_bench_json_mutations(data, side):
    bench = _mutated(BENCH[side], data.draw, BENCH_KEYS)
    with tempfile.TemporaryDirectory() as folder:
        files = {s: str(ROOT / f"tests/data/bench/{s}.json") for s in BENCH}
        files[side] = str(Path(folder) / f"{side}.json")
        Path(files[side]).write_text(_dumps(bench))
        _check(["check", "--baseline", files["baseline"], "--spec", files["spec"], "--target",
                str(ROOT / "tests/data/bench/target"), "--draft", str(ROOT / "tests/data/bench/draft"), "--gpu",
                "cpu-xeon-icelake-2vcpu", "--format", "json"])


WINDOW = json.loads((ROOT / "tests/data/observe_spec.json").read_text())
GAUGE = st.one_of(st.integers(-3, 300).map(float), st.sampled_from([math.nan, math.inf, 1e12, 2.5, -5.0]))


@st.composite
def windows(draw) -> dict:
    """The recorded window with its gauge samples, its length, or one value in either scrape replaced."""
    window = dict(WINDOW)
    kind = draw(st.sampled_from(["samples", "seconds", "value", "keys"]))
    if kind == "samples":
        window["samples"] = [[t, draw(GAUGE), draw(GAUGE)] for t, _, _ in WINDOW["samples"][:draw(st.integers(0, 6))]]
    elif kind == "seconds":
        window["seconds"] = draw(NUMBERS)
    elif kind == "value":
        side = draw(st.sampled_from(["start", "end"]))
        lines = window[side].splitlines()
        i = draw(st.sampled_from([i for i, line in enumerate(lines) if line and not line.startswith("#")]))
        value = draw(NUMBERS)
        lines[i] = lines[i].rsplit(" ", 1)[0] + " " + ("NaN" if value != value else str(value))
        window[side] = "\n".join(lines) + "\n"
    else:
        window = _mutated(WINDOW, draw, ["format", "origin", "samples", "start", "end"])
    return window


@settings(max_examples=50, **FIXED)
@given(windows())
def test_observe_window_mutations(window):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "w.json"
        path.write_text(_dumps(window))
        _check(["observe", str(path), "--target", "tiny-llama-target", "--draft", "tiny-llama-draft", "--gpu",
                "cpu-xeon-icelake-2vcpu", "--format", "json"])


PLAN = (ROOT / "profiles/plans/rag-chat.toml").read_text()
PLAN_NUMBERS = ["rate = 6.0", "mean = 6000", "p90 = 12000", "share = 0.5", "ttft_ms = 2000", "tpot_ms = 40",
                "count = 8", "usd_per_gpu_hour = 1.60", "temperature = 0.7", "tokens = 300"]
TOML_NUMBERS = st.one_of(st.integers(-3, 10**6).map(str), st.sampled_from(["inf", "-inf", "nan", "1e400", "0",
                                                                          "1e300", "-0.0", "[0.9, 1.2]", '"x"']),
                         st.floats(0, 1e6).map(repr))


@settings(max_examples=12, **FIXED)
@given(st.lists(st.tuples(st.sampled_from(PLAN_NUMBERS), TOML_NUMBERS), min_size=1, max_size=3),
       st.sampled_from(["", 'acceptance = { per_position = [0.5, 0.7] }', 'acceptance = { per_position = [1.5] }']))
def test_review_plan_mutations(changes, acceptance):
    """The plan read and reviewed (the pictures aside: drawing them costs seconds and reads only the review)."""
    text = PLAN
    for old, new in changes:
        text = text.replace(old, old.split("=")[0] + "= " + new, 1)
    if acceptance:
        text = text.replace('acceptance = { task = "rag" }', acceptance, 1)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "plan.toml"
        path.write_text(text)
        try:
            result = review(load_plan(str(path)), path)
        except InputError as exc:
            assert "\n" not in str(exc)
            return
        assert result.cells


@pytest.mark.parametrize("argv", [
    lambda d: ["recommend", "--target", d, "--prompt-len", "10", "--out-len", "10"],
    lambda d: ["observe", str(Path(d) / "config.json"), "--target", "tiny-llama-target"],
    lambda d: ["check", "--baseline", str(Path(d) / "config.json"), "--spec", str(ROOT / "tests/data/bench/spec.json"),
               "--target", str(ROOT / "tests/data/bench/target"), "--gpu", "cpu-xeon-icelake-2vcpu"],
], ids=["config", "window", "bench"])
def test_json_nested_200000_deep_is_one_line(argv, tmp_path):
    (tmp_path / "config.json").write_text('{"a": ' + DEEP + "}")
    assert _check(argv(str(tmp_path)), fuzzing=False) == 2


def _config(tmp: Path, **changes) -> str:
    (tmp / "config.json").write_text(_dumps({**CONFIG, **changes}))
    return str(tmp)


def _bench(tmp: Path, rate: str) -> str:
    text = (ROOT / "tests/data/bench/spec.json").read_text().replace(
        '"spec_decode_per_position_acceptance_rates": [', f'"spec_decode_per_position_acceptance_rates": [{rate}, ')
    (tmp / "spec.json").write_text(text)
    return str(tmp / "spec.json")


def _window(tmp: Path) -> str:
    end = "\n".join(line.rsplit(" ", 1)[0] + " -5.0" if line.startswith(
        "vllm:request_time_per_output_token_seconds_sum") else line for line in WINDOW["end"].splitlines())
    (tmp / "w.json").write_text(_dumps({**WINDOW, "end": end + "\n"}))
    return str(tmp / "w.json")


def _plan(tmp: Path, old: str, new: str) -> str:
    (tmp / "plan.toml").write_text(PLAN.replace(old, new, 1))
    return str(tmp / "plan.toml")


RECOMMEND = ["recommend", "--draft", "llama-3.2-1b-instruct", "--out-len", "10"]
CHECK = ["check", "--baseline", str(ROOT / "tests/data/bench/baseline.json"), "--target",
         str(ROOT / "tests/data/bench/target"), "--draft", str(ROOT / "tests/data/bench/draft"), "--gpu",
         "cpu-xeon-icelake-2vcpu", "--spec"]
OBSERVE_PAIR = ["--target", "tiny-llama-target", "--draft", "tiny-llama-draft", "--gpu", "cpu-xeon-icelake-2vcpu"]


@pytest.mark.parametrize("argv", [  # issue 36's traceback inputs (the 200,000-deep ones are above)
    *(lambda t, key=key, value=value: [*RECOMMEND, "--prompt-len", "10", "--target", _config(t, **{key: value})]
      for key in ("text_config", "architectures", "quantization_config", "_specadvisor") for value in (5, "x")),
    lambda t: [*RECOMMEND, "--prompt-len", "10", "--target", _config(t, architectures=[5])],
    lambda t: [*RECOMMEND, "--prompt-len", "10", "--target", _config(t, _specadvisor={"aliases": 5})],
    lambda t: ["recommend", "--batch", "1e400", "--prompt-len", "10", "--out-len", "10"],
    lambda t: [*RECOMMEND, "--prompt-len", "1e400", "--target", _config(t, max_position_embeddings=None)],
    lambda t: [*CHECK, _bench(t, "NaN")],
    lambda t: [*CHECK, _bench(t, "Infinity")],
    lambda t: ["observe", _window(t), *OBSERVE_PAIR],
    *(lambda t, old=old, new=new: ["review", _plan(t, old, new), "--out", str(t / "out")]
      for old, new in (("rate = 6.0", "rate = inf"), ("share = 0.5", "share = inf"),
                       ("ttft_ms = 2000", "ttft_ms = inf"), ("usd_per_gpu_hour = 1.60", "usd_per_gpu_hour = inf"),
                       ('acceptance = { task = "rag" }', "acceptance = { per_position = [0.5, 0.7] }"),
                       ('acceptance = { task = "rag" }', "acceptance = { per_position = [1.5] }"))),
    lambda t: ["plot", "alpha", "--prompt-len", "10", "--out-len", "10", "--out", ""],
])
def test_the_issues_hostile_inputs_are_one_line_and_exit_2(argv, tmp_path):
    assert _check(argv(tmp_path), fuzzing=False) == 2


# --- issue 49: servers that lie, JSON and TOML bombs, outputs that name inputs, the round's hostile inputs ---------

import os  # noqa: E402
import time  # noqa: E402

from loopback import MODES, lying  # noqa: E402
from observe_windows import served_by  # noqa: E402

from advisor.measured import metrics  # noqa: E402

SERVED = json.loads((ROOT / "tests/data/observe_base.json").read_text())["end"].encode()
# the two readers of a URL: observe's window, and metrics.read_text (from-metrics and recommend --metrics share it)
OVER_URL = {
    "observe": lambda url: ["observe", url, "--seconds", "1", "--every", "0.5", *OBSERVE_PAIR],
    "from-metrics": lambda url: ["acceptance", "from-metrics", url],
}


@pytest.mark.parametrize("mode", MODES)
def test_a_server_that_lies_is_one_line_and_exit_2_within_the_deadline(mode, monkeypatch):
    """Every fake-server mode (tests/loopback.py) through every command that reads a URL."""
    monkeypatch.setattr(metrics, "HTTP_TIMEOUT_S", 0.5)
    with lying(mode, SERVED) as url:
        for name, argv in OVER_URL.items():
            began = time.monotonic()
            assert _check(argv(url), fuzzing=False) == 2, (mode, name)
            assert time.monotonic() - began < 3.0, (mode, name)  # the 0.5 s deadline, on a busy CI


@pytest.mark.parametrize("url", ["http://[::1", "http://host:abc/", "http://host:99999/", "http://exa mple/",
                                 "http://host/\x01", "http://" + "a" * 300 + "/", "http://a..b/", "https://:0"])
def test_a_url_that_is_not_one_is_one_line_through_each_command(url):
    for argv in OVER_URL.values():
        assert _check(argv(url), fuzzing=False) == 2


# the regex scan's quadratic case and the recursion's (tests/fileio/test_json_input.py times more, reader alone)
BOMBS = {"unterminated escapes": '"' + '\\"' * 500_000, "brackets": "[" * 1_000_000}


@pytest.mark.parametrize("bomb", BOMBS)
@pytest.mark.parametrize("where", ["config", "window", "bench", "calibration", "corpus", "flag"])
def test_a_1_mb_json_bomb_is_one_line_within_a_second_wherever_json_is_read(bomb, where, tmp_path):
    path = tmp_path / "config.json"

    def argv(text: str) -> list[str]:
        path.write_text(text)
        return {"config": ["recommend", "--target", str(tmp_path), "--prompt-len", "10", "--out-len", "10"],
                "window": ["observe", str(path), *OBSERVE_PAIR],
                "bench": [*CHECK, str(path)],
                "calibration": ["recommend", "--prompt-len", "10", "--out-len", "10", "--calibration", str(path)],
                "corpus": ["acceptance", "ngram", "--corpus", str(path)],
                "flag": ["preflight", "--model", "x", "--speculative-config", text[:100_000]]}[where]

    # the command's own first call (its imports, a second on a loaded machine) is not the reader's time
    assert _check(argv("{"), fuzzing=False) == 2
    bombed = argv(BOMBS[bomb])
    began = time.monotonic()
    assert _check(bombed, fuzzing=False) == 2
    assert time.monotonic() - began < 1.5  # the reader itself is timed to 1 s in tests/fileio/


TOML_BOMBS = {"arrays": "x = " + "[" * 900 + "]" * 900, "inline tables": "x = " + "{a = " * 900 + "1" + "}" * 900,
              "a 400-digit rate": None, "strings of brackets": 'x = "' + "[" * 500_000 + '"\nx = ' + "[" * 900,
              "dotted keys": "x" + ".x" * 5000 + " = 1"}


@pytest.mark.parametrize("bomb", TOML_BOMBS)
def test_a_toml_bomb_in_a_plan_is_one_line(bomb, tmp_path):
    text = TOML_BOMBS[bomb] or PLAN.replace("rate = 6.0", "rate = " + "9" * 400, 1)
    path = tmp_path / "plan.toml"
    path.write_text(PLAN + "\n" + text + "\n" if TOML_BOMBS[bomb] else text)
    assert _check(["review", str(path), "--out", str(tmp_path / "out")], fuzzing=False) == 2
    assert not (tmp_path / "out").exists()


def _spelling(path: Path, how: str, tmp: Path) -> str:
    """Another name for the same file."""
    if how == "same":
        return str(path)
    if how == "dotted":
        return str(path.parent / "." / "sub" / ".." / path.name)
    other = tmp / f"{how}-{path.name}"
    (os.symlink if how == "symlink" else os.link)(path, other)
    return str(other)


@settings(max_examples=16, **FIXED)
@given(st.sampled_from(["observe --save-plan", "observe --plot", "from-metrics --save", "ngram --save",
                        "review --out"]), st.sampled_from(["same", "dotted", "symlink", "hardlink"]))
def test_an_output_that_names_an_input_is_refused_and_the_input_kept(command, how):
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        (tmp / "sub").mkdir()
        source = {"observe": tmp / "w.json", "from-metrics": tmp / "acc.prom", "ngram": tmp / "c.jsonl",
                  "review": tmp / "review.md"}[command.split()[0]]
        source.write_text({"observe": json.dumps(WINDOW), "from-metrics": (ROOT / "tests/data/vllm_metrics_ngram.prom")
                           .read_text(), "ngram": '{"prompt": "a b a b", "response": "a b a b"}\n',
                           "review": PLAN}[command.split()[0]])
        before = source.read_bytes()
        out = _spelling(source, how, tmp)
        argv = {"observe --save-plan": ["observe", str(source), *OBSERVE_PAIR, "--save-plan", out],
                "observe --plot": ["observe", str(source), *OBSERVE_PAIR, "--plot", out],
                "from-metrics --save": ["acceptance", "from-metrics", str(source), "--save", out],
                "ngram --save": ["acceptance", "ngram", "--corpus", str(source), "--save", out],
                "review --out": ["review", out, "--out", str(Path(out).parent)]}[command]
        assert _check(argv, fuzzing=False) == 2
        assert source.read_bytes() == before


@settings(max_examples=6, **FIXED)
@given(st.integers(2, 16), st.sampled_from(["samples", "value"]))
def test_data_parallel_windows_with_one_value_changed(n, kind):
    """A window of n engines (tests/observe_windows.py), one engine's gauge samples or one series mutated."""
    window = served_by(WINDOW, n)
    if kind == "samples":
        window["samples"] = [[t, r, w, [*e[:-1], -e[-1] - 1]] for t, r, w, e in window["samples"]]
    else:
        lines = window["end"].splitlines()
        i = next(i for i, line in enumerate(lines) if f'engine="{n - 1}"' in line and "_sum{" in line)
        lines[i] = lines[i].rsplit(" ", 1)[0] + " 1e15"
        window["end"] = "\n".join(lines) + "\n"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "w.json"
        path.write_text(_dumps(window))
        assert _check(["observe", str(path), *OBSERVE_PAIR, "--format", "json"], fuzzing=False) == 2


@pytest.mark.parametrize("argv", [  # issue 49's remaining tracebacks and silent answers, each one line and exit 2
    lambda t: [*RECOMMEND, "--prompt-len", "10", "--target", "~nosuchuser49/x"],
    lambda t: [*RECOMMEND, "--prompt-len", "10", "--target", "a" * 120_000],
    *(lambda t, v=v: [*RECOMMEND, "--prompt-len", "10", "--target", _config(t, rope_scaling=v)]
      for v in ("yarn", 5, [1, 2])),
    lambda t: [*RECOMMEND, "--prompt-len", "10", "--target", _config(t, intermediate_size=None)],
    lambda t: ["preflight", "--model", "x", "--speculative-config", '{"method": ["eagle"]}'],
    lambda t: ["preflight", "vllm serve x --kv-transfer-config '{\"kv_role\":[1]}'"],
    lambda t: ["recommend", "--prompt-len", "10", "--out-len", "10", "--data-parallel-size", "9" * 400],
    lambda t: ["recommend", "--prompt-len", "10", "--out-len", "10", "--batch", "9" * 400],
    lambda t: ["recommend", "--prompt-len", "10", "--out-len", "10", "--data-parallel-size", "4", "--dp-imbalance",
               "9"],
    lambda t: ["recommend", "--prompt-len", "10", "--out-len", "10", "--data-parallel-size", "4", "--dp-imbalance",
               "inf"],
    lambda t: ["recommend", "--prompt-len", "10", "--out-len", "10", "--metrics", _prom(t, "5")],
    lambda t: ["acceptance", "from-metrics", _prom(t, "5")],
    *(lambda t, old=old, new=new: ["review", _plan(t, old, new), "--out", str(t / "out")]
      for old, new in (("rate = 6.0", "rate = " + "9" * 400), ("rate = 6.0", "rate = true"),
                       ("usd_per_gpu_hour = 1.60", "usd_per_gpu_hour = 1e308"),
                       ('name = "', 'name = "a\\n# heading '),
                       ("title = ", "x = " + "[" * 900 + "]" * 900 + "\ntitle = "))),
    lambda t: ["observe", _copied(t), *OBSERVE_PAIR, "--save-plan", str(t / "w.json")],
    lambda t: ["observe", "http://127.0.0.1:9", *OBSERVE_PAIR, "--seconds", "1e308"],
])
def test_the_round_4_hostile_inputs_are_one_line_and_exit_2(argv, tmp_path):
    assert _check(argv(tmp_path), fuzzing=False) == 2


def _copied(tmp: Path) -> str:
    (tmp / "w.json").write_text(_dumps(WINDOW))
    return str(tmp / "w.json")


def _prom(tmp: Path, temperature: str) -> str:
    text = (ROOT / "tests/data/vllm_metrics_ngram.prom").read_text()
    (tmp / "m.prom").write_text(text + f"# TYPE specadvisor:measured_temperature gauge\n"
                                       f"specadvisor:measured_temperature {temperature}\n")
    return str(tmp / "m.prom")
