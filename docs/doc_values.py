"""What the pages quote from the program, computed now: a command's output (`run`) and the inline numbers
(`VALUES`, name -> how the program says it). docs/regenerate.py writes them into the pages; the sentences around
them stay as written.

Commands run in this process (the package in the repository, not an installed copy: docs/regenerate.py puts it and
this folder on the path), from the repository root, as a terminal of 80 columns without colour shows them.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import os
import re
import shlex
import tempfile
from functools import cache
from pathlib import Path

import numpy as np
from doc_bench import bench_values
from doc_pages import ROOT
from doc_sure import SURE_VALUES
from doc_validation import VALIDATION_VALUES
from doc_validation import pct as _pct

from advisor.advice.schedule import SCHEDULE_MIN_GAIN
from advisor.advice.verdict import ENABLE_THRESHOLD, K_TIE
from advisor.cli.app import main
from advisor.cli.calibrate import MIN_SECONDS, calibrate
from advisor.fileio import http_get
from advisor.measured.counts import Counts
from advisor.measured.metrics import render
from advisor.measured.posterior import LEVEL
from advisor.model.acceptance import truncation
from advisor.model.acceptance.conventions import expected_tokens, survival
from advisor.model.acceptance.temperature import TEMPERATURE_SLOPE
from advisor.model.cost import enginecost
from advisor.profiles.catalog import load_model, names
from advisor.profiles.drafters import long_context_floor
from advisor.review.evaluate import review, totals
from advisor.review.plan import load_plan
from calibration.calibrate.budget import PROBE_SAMPLES
from calibration.calibrate.fit import MAX_HELDOUT_MEDIAN_ERROR

ENV = {"COLUMNS": "80", "NO_COLOR": "1", "MPLBACKEND": "Agg"}
PLAN = "profiles/plans/code-assistant.toml"


@contextlib.contextmanager
def _terminal():
    """The pages' reader: 80 columns, no colour, at the repository root."""
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
    """What `specadvisor ARGS` prints; a failing command stops the regeneration (a page would quote an error)."""
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
    """A number whose sentence no longer holds: the page's words need rewriting, not just the number."""


def _review_same_gpus(workload: str, deployment: str) -> str:
    """The review's verdict and reason for a workload whose speculation costs sustainable rate but no more GPUs."""
    cell = _review().cell(workload, deployment)
    if cell.spec is None or cell.spec.gpus is None or cell.spec.gpus != cell.base.gpus:
        raise Stale(f"it says {workload} on {deployment} needs the same GPUs with speculation, but now the review "
                    f"says {cell.recommendation}: {cell.reason}: rewrite that sentence (and its marker)")
    return f"{cell.recommendation}: {cell.reason}"


def _workload(name: str):
    with _terminal():
        return next(w for w in load_plan(PLAN).workload if w.name == name)


def _review_alone_ttft_ms(workload: str, deployment: str) -> str:
    return f"{_review().cell(workload, deployment).base.best.ttft * 1e3:.0f}"


def _step_ms(kind: str, batch: int, q: int, context: int = 512) -> str:
    """The shipped calibration's median sample of one target step, ms."""
    point = next(p for p in _shipped("target")["points"] if (p["kind"], p["batch"], p["new_tokens"], p["context"])
                 == (kind, batch, q, context))
    return f"{1e3 * float(np.median(point['samples'])):.1f}"


def _profiles(kind: str, counted) -> str:
    """How many shipped profiles of a kind (files under profiles/KIND/) pass `counted`."""
    return str(sum(bool(counted(path)) for path in sorted((ROOT / "profiles" / kind).iterdir())
                   if path.suffix in (".toml", ".json")))


def _worst_parameter_count() -> str:
    """The largest relative gap between a model profile's derived and published parameter count (the bound
    tests/profiles/test_catalog.py holds them to is 3%), over the profiles whose sources publish one."""
    return _pct(max(abs(spec.total_params / 1e9 / spec.published_params_b - 1)
                    for spec in map(load_model, names("models"))
                    if not spec.name.startswith("tiny-") and spec.published_params_b is not None))


def _cut_last_step(alpha, k, out_len: int = 200) -> float:
    """How much fewer tokens per step an out_len-token request gets than E(α, k): its last step is cut."""
    alpha = np.asarray(alpha, dtype=float)
    return float(np.max(1 - truncation.tokens_per_step(survival(alpha, k), out_len) / expected_tokens(alpha, k)))


@cache
def _fit(path: str, role: str) -> dict:
    return json.loads((ROOT / path).read_text())[role]["fit"]


# key prefix -> (calibration file, the held-out errors quoted): the shipped one (median and worst, per role),
# and those the Qwen2-style, TP 2 and MoE validations ran on (medians).
_BOTH = ("target.median", "target.worst", "draft.median", "draft.worst")
CALIBRATIONS = {
    "calibration": ("profiles/calibrations/cpu-xeon-icelake-2vcpu__tiny-llama-target__tiny-llama-draft.json", _BOTH),
    "calibration_qwen2": ("docs/validation/qwen2/calibration.json", ("target.median", "draft.median")),
    "calibration_tp2": ("docs/validation/tp2/calibration.json", ("target.median", "draft.median")),
    "calibration_moe": ("docs/validation/moe/calibration.json", ("target.median",)),
    "calibration_moe_wide": ("docs/validation/moe-wide/calibration.json", ("target.median",)),
}


@cache
def _measured(alpha: float, k: int, drafts: int) -> dict:
    """`recommend --prompt-len 1000 --out-len 500` on a scrape of `drafts` drafts at k whose position i accepts
    α^(i+1) of them: the counts and shape of tests/measured/test_posterior.py's verdict test."""
    per = tuple(int(round(drafts * alpha ** (i + 1))) for i in range(k))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "acc.prom"
        path.write_text(render(Counts(drafts, drafts * k, sum(per), per), "synthetic", None))
        return _json(f"recommend --prompt-len 1000 --out-len 500 --metrics {path}")


def _measured_range(drafts: int) -> str:
    interval = _measured(0.5, 4, drafts)["interval"]
    return f"{interval['e2e_low']:.2f}-{interval['e2e_high']:.2f}x"


@cache
def _datasheet_fit() -> list[str]:
    """The summary row of docs/datasheet-fit.md (benchmarks/datasheet_fit/ writes it) over every expressed row:
    rows, median abs error shipped, fitted, leaving each source out."""
    row = next(line for line in (ROOT / "docs/datasheet-fit.md").read_text().splitlines()
               if line.startswith("| all expressed rows |"))
    return [cell.strip() for cell in row.strip("|").split("|")][1:]


_SHIPPED = CALIBRATIONS["calibration"][0]


@cache
def _shipped(role: str) -> dict:
    return json.loads((ROOT / _SHIPPED).read_text())[role]


# Inline numbers: name -> how the program says it.
VALUES = {
    "default.tpot": lambda: f"{_json(DEFAULT)['speedup']['tpot']:.2f}x",
    "default.e2e": lambda: f"{_json(DEFAULT)['speedup']['e2e_latency']:.2f}x",
    "default.prefill_share": lambda: f"{_json(DEFAULT)['time_split']['prefill_fraction_baseline']:.0%}",
    "default.prefill_steps": lambda: _prefill_in_decode_steps(DEFAULT),
    "batch64.prefill_share": lambda: f"{_json(DEFAULT + ' --batch 64')['time_split']['prefill_fraction_baseline']:.0%}",
    "batch64.concurrency_spec": lambda: str(_json(DEFAULT + " --batch 64")["memory"]["max_concurrency_spec"]),
    "batch64.verdict": lambda: _json(DEFAULT + " --batch 64")["verdict"],
    "long_outputs.e2e": lambda: f"{_json('recommend --prompt-len 200 --out-len 2000')['speedup']['e2e_latency']:.2f}x",
    "review.h100.base": lambda: _review_gpus("4x-h100", "base"),
    "review.h100.spec": lambda: _review_gpus("4x-h100", "spec"),
    "review.completion_a100.ttft_ms": lambda: _review_alone_ttft_ms("completion", "8x-a100"),
    "review.completion.ttft_slo_ms": lambda: f"{_workload('completion').slo.ttft_ms:g}",
    "review.completion.p90_prompt": lambda: f"{_workload('completion').prompt.stats()[1]:,.0f}",
    "review.agent_a100.same_gpus": lambda: _review_same_gpus("agent-edits", "8x-a100"),
    **{f"{key}.{quoted}": (lambda path=path, quoted=quoted: _pct(_fit(path, quoted.split(".")[0])[
        f"heldout_{quoted.split('.')[1]}_error"])) for key, (path, names) in CALIBRATIONS.items() for quoted in names},
    **VALIDATION_VALUES,
    **SURE_VALUES,
    **bench_values(run, _json),
    **{f"posterior.{drafts}.{what}": (lambda drafts=drafts, what=what: _measured_range(drafts) if what == "range"
                                      else _measured(0.5, 4, drafts)["verdict"])
       for drafts in (20, 20000) for what in ("range", "verdict")},
    **{f"calibration.{role}.points": (lambda role=role: str(len(_shipped(role)["points"])))
       for role in ("target", "draft")},
    **{f"calibration.ms.{kind}.b{batch}.q{q}": (lambda kind=kind, batch=batch, q=q: _step_ms(kind, batch, q))
       for kind, batch, q in (("decode", 1, 1), ("decode", 4, 1), ("verify", 1, 3), ("verify", 1, 5))},
    "calibration.rounds": lambda: str(max(len(point["samples"]) for point in _shipped("target")["points"])),
    "calibration.target.multi_token_ms": lambda: f"{_fit(_SHIPPED, 'target')['multi_token_overhead'] * 1e3:.0f}",
    "calibration.target.p": lambda: f"{_fit(_SHIPPED, 'target')['overlap_exponent']:.1f}",
    "calibration.target.gflops": lambda: f"{_fit(_SHIPPED, 'target')['flops'] / 1e9:.0f}",
    "rule.enable": lambda: f"{ENABLE_THRESHOLD:.2f}x",
    "posterior.level": lambda: f"{LEVEL:.0%}",
    "calibration.refused_above": lambda: f"{MAX_HELDOUT_MEDIAN_ERROR:.0%}",
    "calibration.budget_s": lambda: f"{inspect.signature(calibrate).parameters['budget_seconds'].default.default:g}",
    "calibration.min_seconds": lambda: f"{MIN_SECONDS:g}",
    "calibration.probe_points": lambda: str(PROBE_SAMPLES),
    "model.allreduce_latency_us": lambda: f"{enginecost.DEFAULT_ALLREDUCE_LATENCY_S * 1e6:g}",
    "model.temperature_slope": lambda: f"{TEMPERATURE_SLOPE:g}",
    "model.temperature_drop": lambda: f"−{TEMPERATURE_SLOPE:.0%}",
    "model.ngram_us": lambda: f"{enginecost.DEFAULT_NGRAM_OVERHEAD_S * 1e6:.0f}",
    "model.spec_overhead_ms": lambda: f"{enginecost.DEFAULT_SPEC_OVERHEAD_S * 1e3:g}",
    "model.host_step_us": lambda: f"{enginecost.DEFAULT_HOST_STEP_S * 1e6:.0f}",
    "context.floor_rate": lambda: f"{long_context_floor()[0]:.0%}",
    "observe.deadline_s": lambda: f"{http_get.TIMEOUT_S:g}",
    "model.host_seq_us": lambda: f"{enginecost.DEFAULT_HOST_SEQ_S * 1e6:.0f}",
    "schedule.min_gain": lambda: f"{SCHEDULE_MIN_GAIN:.0%}",
    "rule.k_tie": lambda: f"{K_TIE:.1%}",
    "truncation.k4": lambda: _pct(max(_cut_last_step(np.linspace(0, 0.99, 100), k) for k in range(1, 5))),
    "truncation.k8": lambda: _pct(_cut_last_step(0.9, 8)),
    "datasheet.rows": lambda: _datasheet_fit()[0],
    "datasheet.median": lambda: _datasheet_fit()[1],
    "datasheet.loso": lambda: _datasheet_fit()[3],
    # datasheets of GPUs (the CPU machine the shipped calibration ran on is not one); published configs (the tiny
    # generated pair's are not)
    "profiles.gpus": lambda: _profiles("hardware", lambda path: re.search(r'^vendor = "(nvidia|amd)"',
                                                                          path.read_text(), re.M)),
    "profiles.param_error": _worst_parameter_count,
    "profiles.models": lambda: _profiles("models", lambda path: not path.stem.startswith("tiny-")),
}

