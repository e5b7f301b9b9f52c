"""`specadvisor observe`'s report: text, markdown and JSON from one `observe.answer.Answer`."""

from __future__ import annotations

import json
import shlex

import numpy as np

from advisor.observe.answer import Answer, Gains, current_is_right
from advisor.observe.histogram import Histogram


def _k(k: int) -> str:
    return f"k={k}" if k else "off"


def _at(k: int) -> str:
    return f"at k={k}" if k else "without speculation"


def _batches(lo: int, hi: int) -> str:
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def _lengths(h: Histogram) -> str:
    top = ", ".join(f"~{v:.0f} ({s:.0%})" for v, s in sorted(zip(h.values, h.share()), key=lambda x: -x[1])[:4])
    return f"mean {h.mean:.0f} tokens, p90 {h.quantile(0.9):.0f}; buckets {top}"


def _gains(g: Gains) -> str:
    return f"TPOT x{g.tpot:.2f}, end to end x{g.e2e:.2f}, throughput x{g.throughput:.2f}"


def _engines(t) -> str:
    if t.engines == 1:
        return "1 engine core (no data parallelism): the advice is for the server"
    return (f"{t.engines} engine cores (data-parallel ranks, vLLM's engine label): the lengths pool every engine's "
            "requests, concurrency is each engine's own; the advice is per DP rank, for one engine and its share "
            "of the traffic")


def flags(a: Answer) -> str:
    """What to paste into `vllm serve` (or how to turn speculation off)."""
    if not a.speculative_config:
        return "no --speculative-config (serve without speculation)"
    return "--speculative-config " + shlex.quote(json.dumps(a.speculative_config, separators=(",", ":")))


def lines(a: Answer) -> list[tuple[str, str]]:
    """(label, text) rows shared by the text and markdown reports."""
    t, anc = a.traffic, a.anchor
    mean, low, high = t.tpot_interval()
    f_low, f_high = anc.factor_range
    off = "slower" if anc.factor > 1 else "faster"
    conc = ", ".join(f"{c} ({s:.0%})" for c, s in t.concurrency)
    rows = [
        ("window", f"{t.seconds:.0f} s of {t.origin}, model {t.model}"
                   + ("; the server RESTARTED inside it: the traffic is what it served after the restart (rates are "
                      "lower bounds)" if t.restarted else "")),
        ("engines", _engines(t)),
        ("traffic", f"{t.requests} requests finished ({t.rate:.2f}/s"
                    + (f"; {t.rank_rate:.2f}/s per engine)" if t.engines > 1 else ")")),
        ("prompts", _lengths(t.prompt)),
        ("outputs", _lengths(t.output)),
        ("running", f"{conc} of the gauge samples{' per engine' if t.engines > 1 else ''} (mean "
                    f"{t.mean_running:.1f}; by Little's law from the requests' inference time: "
                    f"{t.little_concurrency:.1f})"),
        ("prefix cache", "no prefix-cache queries" if t.prefix_hit_share is None
         else f"{t.prefix_hit_share:.0%} of prompt tokens hit (prefill not recomputed)"),
        ("server speed", f"{mean * 1e3:.2f} ms per output token measured (90% {low * 1e3:.2f}-{high * 1e3:.2f}) "
                         f"{_at(anc.k)}; the cost model predicted {anc.predicted * 1e3:.2f} ms: it was off by "
                         f"x{anc.factor:.2f} (x{f_low:.2f}-x{f_high:.2f}; the server is {off}). One point fixes "
                         "the scale, not the shape: times below are scaled to this server, speedups are the model's"),
        ("acceptance", a.scenario.acceptance.source),
        *(("warning", w) for w in a.scenario.acceptance.warnings),
        ("verdict", f"{a.verdict.upper()}: with the schedule, {_gains(a.scheduled)} over this traffic "
                    f"(low α: end to end x{a.scheduled_low.e2e:.2f})"),
        ("schedule", "; ".join(f"batch {_batches(lo, hi)}: {_k(k)}" for lo, hi, k in a.schedule)),
        ("one k", f"the best single k for this traffic is {_k(a.fixed_k)}: {_gains(a.fixed)}; it would cost in "
                  f"{a.fixed.cost_share:.0%} of the busy window"),
        ("costs", f"the schedule speculates in {a.mix.shares[a.k_per_level > 0].sum():.0%} of the busy window (off "
                  f"where it would cost: {a.mix.shares[a.k_per_level == 0].sum():.0%}); {a.mix.idle_share:.0%} of "
                  "the window was idle"),
    ]
    if a.current is not None:
        right = current_is_right(a)
        best = max(a.scheduled.e2e, a.fixed.e2e)
        rows.append(("now", f"the server runs k={t.counts.k}: {_gains(a.current)}; "
                            + ("that is right for this traffic" if right else
                               f"not the best for this traffic (the advice gains end to end x{best:.2f})")
                            + f". Turning speculation off would change end to end by x{1 / a.current.e2e:.2f}, TPOT "
                              f"by x{1 / a.current.tpot:.2f}, throughput by x{1 / a.current.throughput:.2f}"))
    rows.append(("paste", flags(a)))
    rows.append(("costs from", a.scenario.cost_source))
    rows.append(("note", "vLLM's length histograms are marginals: prompt and output lengths are paired as "
                         "independent; each bucket's length is placed so the mean is the observed one"))
    return rows


def per_level(a: Answer) -> list[tuple[int, float, int, float, float, float]]:
    """(running requests, share of the busy window, k, TPOT, e2e, throughput speedups) per observed level."""
    return [(int(c), float(s), int(k), *map(float, g)) for c, s, k, g in
            zip(a.mix.levels, a.mix.shares, a.k_per_level, a.scheduled.per_level)]


def text(a: Answer) -> str:
    out = [f"{label:>13}: {value}" for label, value in lines(a)]
    out.append("")
    out.append("running  share    k   TPOT    e2e  throughput")
    out += [f"{c:>7} {s:>6.0%} {_k(k):>4} {tp:>6.2f} {e:>6.2f} {th:>11.2f}" for c, s, k, tp, e, th in per_level(a)]
    return "\n".join(out) + "\n"


def markdown(a: Answer) -> str:
    out = ["| | |", "|---|---|"] + [f"| {label} | {value.replace('|', '/')} |" for label, value in lines(a)]
    out += ["", "| running requests | share of busy window | k | TPOT speedup | end-to-end speedup | throughput |",
            "|---:|---:|---:|---:|---:|---:|"]
    out += [f"| {c} | {s:.0%} | {_k(k)} | {tp:.2f} | {e:.2f} | {th:.2f} |" for c, s, k, tp, e, th in per_level(a)]
    return "\n".join(out) + "\n"


def _hist(h: Histogram) -> dict:
    return dict(mean=h.mean, p90=h.quantile(0.9), buckets=[dict(lo=float(lo), hi=float(hi) if np.isfinite(hi) else
                                                                None, count=int(round(n)), value=float(v))
                                                           for lo, hi, n, v in zip(h.lo, h.hi, h.counts, h.values)])


def to_dict(a: Answer) -> dict:
    t, anc = a.traffic, a.anchor
    mean, low, high = t.tpot_interval()
    g = lambda x: None if x is None else dict(tpot=x.tpot, e2e=x.e2e, throughput=x.throughput,  # noqa: E731
                                              cost_share=x.cost_share)
    counts = None if t.counts is None else dict(k=t.counts.k, drafts=t.counts.drafts,
                                                draft_tokens=t.counts.draft_tokens, accepted=t.counts.accepted,
                                                per_position=list(t.counts.per_position))
    acc = a.scenario.acceptance
    return dict(
        origin=t.origin, model=t.model, seconds=t.seconds, restarted=t.restarted, engines=t.engines,
        requests=t.requests, rate=t.rate, rate_per_engine=t.rank_rate,
        prompt=_hist(t.prompt), output=_hist(t.output),
        concurrency=[dict(running=c, share=s) for c, s in t.concurrency], little_concurrency=t.little_concurrency,
        prefix_hit_share=t.prefix_hit_share,
        tpot=dict(measured=mean, low=low, high=high, predicted=anc.predicted, factor=anc.factor,
                  factor_low=anc.factor_range[0], factor_high=anc.factor_range[1], at_k=anc.k),
        speculation=counts, acceptance=dict(alpha=acc.alpha, low=acc.low, high=acc.high, source=acc.source),
        verdict=a.verdict, schedule=[list(r) for r in a.schedule], scheduled=g(a.scheduled),
        scheduled_low_alpha=g(a.scheduled_low), fixed_k=a.fixed_k, fixed=g(a.fixed), current=g(a.current),
        current_is_right=current_is_right(a) if a.current is not None else None,
        per_level=[dict(running=c, share=s, k=k, tpot=tp, e2e=e, throughput=th) for c, s, k, tp, e, th in
                   per_level(a)], idle_share=a.mix.idle_share,
        speculative_config=a.speculative_config, flags=flags(a), cost_source=a.scenario.cost_source)


def to_json(a: Answer) -> str:
    return json.dumps(to_dict(a), indent=2)
