"""The observed traffic as a capacity plan (`specadvisor review` reads it): one workload with the window's request
rate, length buckets and acceptance, and the server as the one deployment (a data-parallel server's engines as its
replicas: count = tensor-parallel size × engines). The SLOs are what the server delivered:
the upper edge of the histogram bucket that holds its p90 TTFT and TPOT over the window (what the buckets vouch
for). A starting point to edit, not the user's targets."""

from __future__ import annotations

import json
from pathlib import Path

from advisor.advice.resolve import DEFAULT_TASK
from advisor.fileio.atomic_write import write_atomic
from advisor.observe.answer import Answer
from advisor.observe.histogram import Histogram
from advisor.profiles.localgpu import resolve_gpu
from advisor.review.plan import load_plan


def _quoted(text: str) -> str:
    """A TOML basic string: JSON's quoting without its \\u surrogate pairs (TOML wants whole characters), with the
    DEL that JSON leaves bare escaped (TOML does not); a lone surrogate (no character at all) becomes "?"."""
    whole = text.encode("utf-8", "replace").decode("utf-8")
    return json.dumps(whole, ensure_ascii=False).replace("\x7f", "\\u007f")


def _buckets(h: Histogram) -> str:
    rows = ", ".join(f"{{ tokens = {max(round(v), 1)}, share = {s:.6g} }}" for v, s in zip(h.values, h.share()))
    return f"{{ buckets = [{rows}] }}"


def _acceptance(a: Answer, alpha: float | None, task: str | None) -> str:
    counts = a.traffic.counts
    if counts is not None:
        return "{ per_position = [" + ", ".join(f"{r:.6g}" for r in counts.rates()) + "] }"
    if alpha is not None:
        return f"{{ alpha = {alpha:g} }}"
    return f"{{ task = {_quoted(task or DEFAULT_TASK)} }}"


def plan_text(a: Answer, *, target: str, draft: str | None, gpu: str, method: str, num_gpus: int,
              alpha: float | None = None, task: str | None = None) -> str:
    t, setup = a.traffic, a.scenario.setup
    ttft_ms, tpot_ms = t.ttft.quantile_bound(0.9) * 1e3, t.tpot.quantile_bound(0.9) * 1e3
    model = "".join(c if c.isprintable() else " " for c in t.model)[:120]  # a plan's title is one line (plan.Name)
    lines = [f"title = {_quoted(f'observed traffic of {model}')}",
             f"description = {_quoted(f'{t.requests} requests over {t.seconds:.0f} s at {t.origin}; SLOs = the bucket edges over the p90 the server delivered')}",
             "", "[[workload]]", 'name = "observed"', f"rate = {t.rate:.6g}",
             f"temperature = {a.scenario.temperature:g}", f"prompt = {_buckets(t.prompt)}",
             f"output = {_buckets(t.output)}", f"acceptance = {_acceptance(a, alpha, task)}",
             f"slo = {{ ttft_ms = {max(ttft_ms, 1e-3):.4g}, tpot_ms = {max(tpot_ms, 1e-3):.4g} }}",
             "", "[[deployment]]", 'name = "observed server"', f"gpu = {_quoted(resolve_gpu(gpu))}",
             f"count = {num_gpus * t.engines}", f"tensor_parallel = {num_gpus}",
             f"target = {_quoted(target)}",
             f"method = {_quoted(setup.method)}"]
    if setup.draft is not None and setup.method not in ("mtp",):
        lines.append(f"draft = {_quoted(draft or setup.draft.name)}")  # a default draft is a profile
    return "\n".join(lines) + "\n"


def write_plan(a: Answer, path: Path, **how) -> Path:
    """Write the plan and read it back as `review` will (a plan it cannot read is our bug, said here)."""
    write_atomic(path, plan_text(a, **how))
    load_plan(path)
    return path
