"""The pair, GPU and acceptance an observed server is evaluated with: the model the metrics name (or --target), the
GPU from --gpu or NVML, and α from the window's own spec-decode counters when the server speculates."""

from __future__ import annotations

from advisor.advice.resolve import AcceptanceInput, build_scenario
from advisor.advice.scenario import Scenario
from advisor.errors import InputError
from advisor.measured.counter_checks import check_requests_gauge
from advisor.measured.posterior import acceptance_from_counts
from advisor.observe.scrape import RUNNING
from advisor.observe.traffic import Traffic
from advisor.profiles.catalog import load_model, slug

WINDOW_COUNTERS = "the window's spec-decode counters"


def served_model(name: str) -> str:
    """The profile (or directory) the metrics' model_name names: itself, else its last path part as a profile
    (an HF id `org/Model-Name` is compared without the org)."""
    for candidate in (name, slug(name.rstrip("/").split("/")[-1])):
        try:
            load_model(candidate)
            return candidate
        except InputError:
            continue
    raise InputError(f"the server serves {name!r}, which matches no model profile (`specadvisor list models`) and "
                     "no local directory: pass --target PROFILE or --target DIR (a folder with its config.json)")


def scenario_for(t: Traffic, *, target: str | None, draft: str | None, method: str, gpu: str, num_gpus: int,
                 temperature: float, alpha: float | None, task: str | None, calibration: str | None,
                 max_num_seqs: int | None = None) -> Scenario:
    """The Scenario at the traffic's mean lengths and concurrency; `answer` evaluates the whole mix on its setup."""
    measured = t.counts is not None
    if measured and (alpha is not None or task is not None):
        raise InputError("the server speculates, so acceptance is measured from its counters: drop --alpha / --task")

    def from_window(_source: str, served: float, _measured_at: float | None):
        # the counters were sampled at the traffic's own temperature: nothing to carry
        return acceptance_from_counts(t.counts, f"{t.origin}: {WINDOW_COUNTERS}").at_temperature(served, served)

    acceptance = AcceptanceInput(metrics=WINDOW_COUNTERS) if measured else AcceptanceInput(alpha=alpha, task=task)
    scenario = build_scenario(target=target or served_model(t.model), draft=draft, method=method, gpu=gpu,
                          num_gpus=num_gpus, batch=max(round(t.mean_running), 1),
                          prompt_len=max(round(t.prompt.mean), 1), out_len=max(round(t.output.mean), 1),
                          temperature=temperature, acceptance=acceptance, calibration=calibration,
                          read_metrics=from_window, max_num_seqs=max_num_seqs)
    peak = max(level for level, _ in t.concurrency)  # on one engine: each holds up to max_num_seqs
    where = " on one engine" if t.engines > 1 else ""
    check_requests_gauge(f"{RUNNING} (at its peak in the window{where})", peak, t.origin,
                         scenario.setup.target_cost.max_num_seqs)
    return scenario
