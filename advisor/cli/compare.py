"""`recommend --method compare`: the shared scenario flags run once per method that applies to the target
(`advisor.advice.comparison.candidates`), each an ordinary recommendation, ranked by
`advisor.advice.comparison.decide`."""

from __future__ import annotations

from dataclasses import replace

from advisor.errors import InputError

# acceptance evidence and cost overrides belong to one drafter: they cannot stand for every method compared
_ONE_DRAFTER = ("alpha", "acceptance_rate", "acceptance_length", "acceptance_per_pos", "metrics", "measured_k",
                "measured_temperature", "cost_ratio")


def compare_from_options(flags: dict):
    """Every applicable method's recommendation at the flags; the one for the picked (or best-tied) method comes
    back, carrying the comparison."""
    from advisor.advice.advise import advise
    from advisor.advice.comparison import MethodRow, candidates, decide, label
    from advisor.advice.recommendation import from_advice
    from advisor.cli.build import build_from_options
    from advisor.profiles.catalog import load_model

    given = [f"--{name.replace('_', '-')}" for name in _ONE_DRAFTER if flags.get(name) is not None]
    if given:
        raise InputError(f"--method compare weighs every method on the drafter catalog's priors (--task); "
                         f"{', '.join(given)} describes one drafter: drop it, or give that method")
    rows, results = [], {}
    for method, draft in candidates(load_model(flags["target"]), flags["draft"]):
        try:
            r = from_advice(advise(build_from_options(**{**flags, "method": method, "draft": draft})))
        except InputError as exc:
            rows.append(MethodRow(method=method, draft=draft, verdict="refused", k=0, e2e=None, memory_gb=0.0,
                                  concurrency=0, fits=False, dominant="", note=str(exc)))
            continue
        row = MethodRow(method=method, draft=draft, verdict=r.verdict, k=r.shown_k, e2e=r.interval.e2e,
                        memory_gb=0.0, concurrency=r.memory.max_concurrency_spec, fits=r.memory.fits_spec,
                        dominant=r.interval.dominant, note="")
        rows.append(row)
        results[label(row)] = r
    if not results:
        raise InputError("no method can be served here: " + "; ".join(f"{label(r)}: {r.note}" for r in rows))
    # Each recommendation sizes its baseline with its own method's runtime reserve; the plain engine is the one
    # with the most KV cache left (a text lookup's), and each method's memory is what it takes from that.
    plain = max(results.values(), key=lambda r: r.memory.kv_budget_baseline_gb).memory
    rows = [row if row.verdict == "refused" else replace(row, memory_gb=round(max(
        plain.kv_budget_baseline_gb - results[label(row)].memory.kv_budget_spec_gb, 0.0), 3)) for row in rows]
    comparison = decide(rows, plain.max_concurrency_baseline)
    first = next(iter(results.values()))
    return replace(results.get(comparison.picked, first), comparison=comparison)
