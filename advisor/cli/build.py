"""The scenario flags as typed -> a validated Scenario: what `recommend`, `plot` and each method `--method compare`
weighs are built from. Apart from advisor/cli/options.py (which declares the flags) so that compare.py, which
options.py reaches only when --method compare is given, builds its scenarios without importing options back.
"""

from __future__ import annotations


def build_from_options(*, method: str, alpha, acceptance_rate, acceptance_length, measured_k, acceptance_per_pos,
                       task, metrics, measured_temperature, **rest):
    """The flags as typed -> a validated Scenario (advisor.advice.resolve does the work)."""
    from advisor.advice.resolve import AcceptanceInput, build_scenario

    return build_scenario(method=method, **rest, read_metrics=_read_metrics, acceptance=AcceptanceInput(
        alpha=alpha, rate=acceptance_rate, length=acceptance_length, measured_k=measured_k,
        per_position=acceptance_per_pos, task=task, metrics=metrics, measured_temperature=measured_temperature))


def _read_metrics(source: str, temperature: float, measured_temperature: float | None):
    """--metrics: imported only when given (scipy and prometheus_client cost ~0.5 s of start-up)."""
    from advisor.measured.from_metrics import acceptance_from_metrics

    return acceptance_from_metrics(source, temperature, measured_temperature)
