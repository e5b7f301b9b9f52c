"""Acceptance from vLLM's spec-decode counters: a live server's /metrics, or a scrape saved to a file.

The counts become a Beta posterior (`posterior`), carried to the served temperature. A saved measurement records
the temperature it was sampled at; a live server does not, so it is taken as the served one unless the user says.
`resolve.build_scenario` takes this function as its `read_metrics`, so `recommend` imports scipy only with --metrics.
"""

from __future__ import annotations

from dataclasses import replace

from advisor.measured.metrics import scrape
from advisor.measured.posterior import acceptance_from_counts
from advisor.model.acceptance.conventions import Acceptance


def acceptance_from_metrics(source: str, temperature: float, measured_temperature: float | None = None) -> Acceptance:
    """α with its 90% interval from the counters at `source` (URL or file), served at `temperature`."""
    found = scrape(source)
    acc = acceptance_from_counts(found.counts, found.origin)
    measured_at = measured_temperature if measured_temperature is not None else found.measured_temperature
    if measured_at is None:
        acc = replace(acc, notes=(*acc.notes, f"the metrics do not say what temperature they were sampled at: taken "
                                  f"as the served T={temperature:g} (pass --measured-temperature if not)"))
        measured_at = temperature
    return acc.at_temperature(temperature, measured_at)
