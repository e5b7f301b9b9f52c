"""Fuzzing every subcommand's numeric flags, and Prometheus text with random values: whatever the input, the CLI
exits 0 or 2, a 2 is one line on stderr, nothing escapes as a traceback, and JSON output holds no NaN or Infinity.
The numeric flags are read from the commands' signatures, so a flag added later is fuzzed without editing this
file, and a command with numeric flags but no fuzz test here fails `test_every_numeric_flag_is_fuzzed`.

Commands that start vLLM are fuzzed up to the engine: `open_engine` (and validation's test-pair writer) is
replaced by a stand-in that stops the run, so the property checked there is "bad flags are refused in one line
before any engine starts; good ones reach it".
"""

import contextlib
import inspect
import io
import json
import math
import tempfile
import typing
from pathlib import Path
from unittest import mock

import pytest
import typer
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from advisor.cli.app import app, main
from advisor.cli.scale import DEPLOYMENT_NAMES

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Numbers as a user might type them: mostly plausible (so runs get past the checks and through the model), the
# rest edge values, huge ones, and what float() also accepts.
INTS = st.one_of(st.integers(1, 64), st.integers(1, 4096), st.integers(-3, 40),
                 st.sampled_from([0, 131072, 10**9, 2**63]), st.integers(-(2**70), 2**70)).map(str)
FLOATS = st.one_of(st.floats(0, 1), st.floats(0, 1), st.floats(-0.5, 2.5),
                   st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from(["nan", "inf", "-inf", "1e308", "-0.0", "1e-320"])).map(str)
RATES = st.lists(st.floats(-0.2, 1.2) | st.just(float("nan")), min_size=0, max_size=6).map(
    lambda r: ",".join(map(str, r)))


def _commands(typer_app, prefix: tuple[str, ...] = ()):
    """(command path, its function) for every command, sub-commands included."""
    for info in typer_app.registered_commands:
        yield (*prefix, info.name or info.callback.__name__.replace("_", "-")), info.callback
    for group in typer_app.registered_groups:
        yield from _commands(group.typer_instance, (*prefix, group.name))


COMMANDS = dict(_commands(app))


def numeric_flags(path: tuple[str, ...]) -> dict[str, st.SearchStrategy]:
    """The command's int and float options (from its signature, as typer reads it), each with its strategy."""
    callback = COMMANDS[path]
    hints = typing.get_type_hints(callback, localns={"Scenario": object})
    found = {}
    for name, param in inspect.signature(callback).parameters.items():
        hint = hints.get(name)
        bare = next((a for a in typing.get_args(hint) if a is not type(None)), hint)  # Optional[int] -> int
        if bare in (int, float) and isinstance(param.default, typer.models.OptionInfo):
            declared = [d for d in param.default.param_decls or () if d.startswith("--")]
            found[declared[0] if declared else "--" + name.replace("_", "-")] = INTS if bare is int else FLOATS
    return found


class EngineStarted(BaseException):
    """Raised where vLLM would start: not an Exception, so no handler on the way can swallow it."""


def _stop(*args, **kwargs):
    raise EngineStarted


def _no_nan(constant: str):
    raise AssertionError(f"JSON output holds {constant}")


def _run(argv: list[str]) -> tuple[int | str, str, str]:
    """(exit code, or "engine" when a run reached the engine), stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            mock.patch("calibration.engine.vllm_engine._import_llm", _stop), \
            mock.patch("calibration.validation.run.make_pair", _stop):
        try:
            code = main(argv)
        except EngineStarted:
            code = "engine"
    return code, out.getvalue(), err.getvalue()


def _check(argv: list[str], fuzzing: bool = True) -> int | str:
    code, out, err = _run(argv)
    if fuzzing:
        event(f"exit {code}")  # `pytest --hypothesis-show-statistics` shows how often each outcome was reached
    assert code in (0, 2, "engine"), (argv, code, err)
    assert "Traceback" not in err
    if code == 2:
        assert err.count("\n") == 1 and err.startswith("specadvisor: error: "), (argv, err)
    if code == 0 and "--format" in argv and argv[argv.index("--format") + 1] == "json":
        json.loads(out, parse_constant=_no_nan)
    return code


def _flags(options: dict) -> st.SearchStrategy[list[str]]:
    """Any subset of `options` (flag -> value strategy), as an argument list."""
    return st.fixed_dictionaries({}, optional=options).map(
        lambda chosen: [part for flag, value in chosen.items() for part in (flag, value)])


# One acceptance source at a time (two are refused up front, which the fuzz would otherwise mostly test).
ACCEPTANCE_FLAGS = {"--alpha", "--acceptance-rate", "--acceptance-length", "--measured-k", "--acceptance-per-pos"}
SCENARIO = {flag: s for flag, s in numeric_flags(("recommend",)).items() if flag not in ACCEPTANCE_FLAGS}
PLOT = {flag: s for flag, s in numeric_flags(("plot",)).items() if flag in SCENARIO}  # recommend's but the deployment's
ACCEPTANCE = st.one_of(
    st.just([]), st.tuples(st.just("--alpha"), FLOATS).map(list),
    st.tuples(st.just("--acceptance-per-pos"), RATES).map(list),
    st.tuples(st.sampled_from(["--acceptance-rate", "--acceptance-length"]), FLOATS, st.just("--measured-k"),
              INTS).map(list),
    st.tuples(st.just("--acceptance-length"), st.floats(1, 9).map(str), st.just("--measured-k"),
              st.integers(1, 8).map(str)).map(list))


def _with_defaults(flags: list[str]) -> list[str]:
    """The two required lengths, unless the fuzzed flags give them."""
    return [*(["--prompt-len", "1000"] if "--prompt-len" not in flags else []),
            *(["--out-len", "200"] if "--out-len" not in flags else []), *flags]


@settings(max_examples=200, **SETTINGS)
@given(_flags(SCENARIO), ACCEPTANCE, st.sampled_from(["draft_model", "ngram", "eagle"]))
def test_recommend_numeric_flags(flags, acceptance, method):
    draft = ["--target", "llama-3.3-70b-instruct", "--gpu", "h100-sxm"] if method == "eagle" else []
    _check(["recommend", *_with_defaults(flags + acceptance), "--method", method, *draft, "--format", "json"])


@settings(max_examples=16, **SETTINGS)
@given(_flags(PLOT), ACCEPTANCE, st.sampled_from(["alpha", "batch", "lengths", "memory"]))
def test_plot_numeric_flags(flags, acceptance, kind):
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "p.png"
        if _check(["plot", kind, *_with_defaults(flags + acceptance), "--out", str(out)]) == 0:
            assert out.stat().st_size > 10_000


CORPUS = ('{"prompt_token_ids": [1, 2, 3, 4, 5, 1, 2, 3], "response_token_ids": [4, 5, 1, 2, 3, 4, 9, 1, 2]}\n'
          '{"prompt": "def f(x):\\n    return x\\n", "response": "def g(x):\\n    return x\\n"}\n')


@settings(max_examples=60, **SETTINGS)
@given(_flags(numeric_flags(("acceptance", "ngram"))))
def test_acceptance_ngram_numeric_flags(flags):
    with tempfile.TemporaryDirectory() as folder:
        corpus = Path(folder) / "c.jsonl"
        corpus.write_text(CORPUS)
        _check(["acceptance", "ngram", "--corpus", str(corpus), *flags, "--format", "json"])


# --- Prometheus text with random values ----------------------------------------------------------------------

VALUES = st.one_of(st.integers(0, 10**6).map(float), st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([float("nan"), float("inf"), -1.0, 1e300, 2.0**53, 2.0**53 + 2]))
SERIES = ("vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_draft_tokens_total",
          "vllm:spec_decode_num_accepted_tokens_total")


def _prometheus_value(v: float) -> str:
    return "NaN" if math.isnan(v) else "+Inf" if v == math.inf else "-Inf" if v == -math.inf else repr(v)


@st.composite
def prometheus_text(draw) -> str:
    """A server's counters, consistent (as vLLM counts them) or, half the time, with random values put in (each
    value swapped for a random one with probability 1/4), so both clean reads and every kind of bad value come up."""
    corrupt = draw(st.booleans())
    per_pos = sorted(draw(st.lists(st.integers(0, 5000), min_size=1, max_size=6)), reverse=True)
    drafts = per_pos[0] + draw(st.integers(0, 3000))
    steps = drafts + draw(st.integers(0, 3000))

    def value(consistent: float) -> str:
        return _prometheus_value(draw(VALUES) if corrupt and draw(st.integers(0, 3)) == 0 else float(consistent))

    lines = []
    for name, consistent in zip(SERIES, (drafts, drafts * len(per_pos), sum(per_pos))):
        if draw(st.integers(0, 9)):  # now and then a family is missing
            lines += [f"# TYPE {name.removesuffix('_total')} counter",
                      f'{name}{{engine="0",model_name="m"}} {value(consistent)}']
    family = "vllm:spec_decode_num_accepted_tokens_per_pos"
    lines.append(f"# TYPE {family} counter")
    positions = list(range(len(per_pos))) if draw(st.integers(0, 5)) else draw(
        st.lists(st.integers(0, 6), max_size=6, unique=True))
    for position in positions:
        count = per_pos[position] if position < len(per_pos) else 0
        lines.append(f'{family}_total{{engine="0",model_name="m",position="{position}"}} {value(count)}')
    if draw(st.booleans()):
        lines += ["# TYPE specadvisor:decode_steps counter",
                  f'specadvisor:decode_steps_total{{source="x"}} {value(steps)}']
    if draw(st.booleans()):
        lines += ["# TYPE specadvisor:measured_temperature gauge",
                  f"specadvisor:measured_temperature {value(draw(st.floats(0, 2)))}"]
    return "\n".join(lines) + "\n"


@settings(max_examples=200, **SETTINGS)
@given(prometheus_text(), st.booleans())
def test_prometheus_text_with_random_values(text, through_recommend):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "m.prom"
        path.write_text(text)
        argv = (["recommend", "--prompt-len", "500", "--out-len", "300", "--metrics", str(path)] if through_recommend
                else ["acceptance", "from-metrics", str(path)])
        _check([*argv, "--format", "json"])


def test_the_committed_sample_reads_cleanly_through_the_same_check():
    assert _check(["acceptance", "from-metrics", str(ROOT / "tests/data/vllm_metrics_ngram.prom"), "--format",
                   "json"], fuzzing=False) == 0


# --- the commands that start vLLM: fuzzed up to the engine ---------------------------------------------------

@settings(max_examples=30, **SETTINGS)
@given(_flags(numeric_flags(("calibrate",))))
def test_calibrate_numeric_flags(flags):
    pytest.importorskip("vllm")  # without it every run is the same one line (tests/cli/test_needs.py)
    with tempfile.TemporaryDirectory() as folder:
        _check(["calibrate", "--target", "tiny-llama-target", "--draft", "tiny-llama-draft", "--dummy-weights",
                "--gpu", "cpu-xeon-icelake-2vcpu", "--out", str(Path(folder) / "c.json"), *flags])


LISTS = st.lists(st.one_of(INTS, FLOATS), min_size=0, max_size=4).map(",".join)


@settings(max_examples=40, **SETTINGS)
@given(_flags({**numeric_flags(("validate",)), "--scales": LISTS, "--ks": LISTS, "--batches": LISTS,
               "--prompt-lens": LISTS, "--out-lens": LISTS, "--temperatures": LISTS}))
def test_validate_numeric_flags(flags):
    pytest.importorskip("vllm")
    with tempfile.TemporaryDirectory() as folder:
        _check(["validate", "--out", str(Path(folder) / "v"), *flags])


@settings(max_examples=40, **SETTINGS)
@given(_flags(numeric_flags(("acceptance", "measure"))))
def test_acceptance_measure_numeric_flags(flags):
    pytest.importorskip("vllm")
    with tempfile.TemporaryDirectory() as folder:
        model = Path(folder) / "model"
        model.mkdir()
        (model / "config.json").write_text((ROOT / "profiles/models/tiny-llama-target.json").read_text())
        prompts = Path(folder) / "p.jsonl"
        prompts.write_text('{"prompt_token_ids": [1, 2, 3, 1, 2, 3]}\n')
        _check(["acceptance", "measure", "--target", str(model), "--method", "ngram", "--prompts", str(prompts),
                *flags])


@settings(max_examples=12, **SETTINGS)
@given(_flags(numeric_flags(("make-test-pair",))))
def test_make_test_pair_numeric_flags(flags):
    pytest.importorskip("torch")
    with tempfile.TemporaryDirectory() as folder:
        argv = ["make-test-pair", "--out", str(Path(folder) / "pair"), *flags]
        _check(argv if "--scale" in flags else [*argv, "--scale", "0.1"])


@settings(max_examples=25, **SETTINGS)
@given(_flags(numeric_flags(("observe",))))
def test_observe_numeric_flags(flags):
    """A recorded window replayed (the window's own flags, --seconds and --every, then go unused), and a live
    server that is not there (port 9, discard: closed on loopback), which is refused after the flags are checked."""
    pair = ["--target", "tiny-llama-target", "--draft", "tiny-llama-draft", "--gpu", "cpu-xeon-icelake-2vcpu"]
    _check(["observe", str(ROOT / "tests/data/observe_spec.json"), *pair, "--format", "json", *flags])
    assert _check(["observe", "http://127.0.0.1:9", *pair, *flags]) == 2


SERVE_FLAGS = ["--max-model-len", "--max-num-seqs", "--max-num-batched-tokens", "-tp", "--data-parallel-size"]


@settings(max_examples=25, **SETTINGS)
@given(_flags(numeric_flags(("preflight",))), st.dictionaries(st.sampled_from(SERVE_FLAGS), INTS),
       st.one_of(INTS, st.just("null"), st.just("true"), st.just('"3"')))
def test_preflight_numeric_flags(flags, serve_flags, k):
    """Its own flags, the numbers inside the pasted command, and num_speculative_tokens in the JSON."""
    line = " ".join(["vllm serve meta-llama/Llama-3.1-8B-Instruct", *(f"{f} {v}" for f, v in serve_flags.items()),
                     "--speculative-config '{\"method\":\"eagle3\",\"model\":\"yuhuili/EAGLE3-LLaMA3.1-"
                     f"Instruct-8B\",\"num_speculative_tokens\":{k}}}'"])
    _check(["preflight", line, "--exit-zero", *flags])


@settings(max_examples=6, **SETTINGS)
@given(_flags(SCENARIO))
def test_recommend_compare_numeric_flags(flags):
    """--method compare runs every method on the same flags: one refusal line, or a table."""
    _check(["recommend", "--method", "compare", "--prompt-len", "500", "--out-len", "100", "--format", "json",
            *flags])  # a fuzzed --prompt-len or --out-len comes later and wins


FUZZED = {("recommend",), ("plot",), ("acceptance", "ngram"), ("calibrate",), ("validate",), ("acceptance", "measure"),
          ("make-test-pair",), ("observe",), ("preflight",)}


def test_every_numeric_flag_is_fuzzed():
    with_numbers = {path for path in COMMANDS if numeric_flags(path)}
    assert with_numbers - FUZZED == set()  # a new command with numeric flags needs a fuzz test above
    assert {"--prompt-len", "--batch", "--gpu-memory-utilization"} <= set(SCENARIO)  # the discovery finds them
    # plot takes recommend's flags but for the deployment beyond one GPU group (advisor/cli/scale.py), fuzzed above
    at_scale = {"--" + name.replace("_", "-") for name in DEPLOYMENT_NAMES}
    assert set(numeric_flags(("plot",))) == set(numeric_flags(("recommend",))) - at_scale
