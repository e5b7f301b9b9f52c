"""Acceptance counts for a `vllm bench serve` run from two /metrics scrapes taken around it (files or URLs).

The serve file keeps the per-position accepts only as rates over the drafts; two scrapes give exact counts. Kept
apart from the readers because Prometheus parsing (prometheus_client) is only needed when scrapes are given.
"""

from __future__ import annotations

from dataclasses import replace

from advisor.errors import InputError
from advisor.measured.metrics import scrape
from calibration.from_bench.runs import BenchRun


def with_scrapes(run: BenchRun, before: str | None, after: str | None) -> BenchRun:
    """The run with its acceptance counts taken from the scrapes `before` and `after` it."""
    if (before is None) != (after is None):
        raise InputError("give both --metrics-before and --metrics-after (the counters are cumulative)")
    if before is None:
        return run
    if run.kind != "serve":
        raise InputError(f"/metrics scrapes belong to a `vllm bench serve` run, not to {run.path}")
    found = scrape(before, after)
    counts = found.counts
    if run.counts is not None and counts.k != run.counts.k:
        raise InputError(f"the scrapes count k={counts.k} draft positions, but {run.path} recorded k={run.counts.k}: "
                         "not the same server")
    return replace(run, counts=counts, counts_source=found.origin)
