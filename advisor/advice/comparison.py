"""`recommend --method compare`: every method that applies to a target, each at its best k, in one table, and the
one decision rule over them: a method is picked only when its 80% interval separates it from the runner-up.

The rows come from ordinary recommendations (one per method and drafter), so every number in the table is the one
`recommend --method M` prints for that row. `candidates` says which drafters apply; `compare` ranks them.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.advice.recommendation_interval import Band, Closed
from advisor.model.shape.modelspec import ModelSpec
from advisor.profiles.catalog import load_model, names, slug
from advisor.vllm.methods import TEXT_LOOKUP

COMPARE = "compare"  # the --method value that asks for this


@dataclass(frozen=True, slots=True)
class MethodRow(Closed):
    """One method (and drafter) at its best k, as `recommend --method M --draft D` evaluates it."""

    method: str  # vLLM's method name
    draft: str | None  # the drafter's profile name; None for a text lookup or the target's MTP layers
    verdict: str  # that recommendation's: enable | marginal | disable; "refused" when it cannot be served
    k: int  # the row's k: best_k, or 1 when no k pays (to show what speculation would cost)
    e2e: Band | None  # end-to-end speedup at k with its 80% interval; None where it does not fit or is refused
    memory_gb: float  # per GPU: what speculation takes from the KV cache (draft weights, its KV, reserve)
    concurrency: int  # full-length requests the KV cache holds with it (without: Comparison.baseline_concurrency)
    fits: bool  # target and drafter serve at least one full-length request
    dominant: str  # acceptance | cost model: the wider term of its interval ("" without one)
    note: str  # why it was refused, in one line; "" otherwise


@dataclass(frozen=True, slots=True)
class Comparison(Closed):
    """Every method, ranked, and which one (if any) the intervals let us pick."""

    rows: tuple[MethodRow, ...]  # best e2e first; refused rows last
    decision: str  # pick | tie | off (no method gains: leave speculation off)
    picked: str  # the method (and drafter) the recommendation below is for: the pick, or the tie's best point
    tied: tuple[str, ...]  # the methods whose intervals overlap the best one's (empty unless decision is tie)
    separate: str  # what would separate a tie (empty otherwise)
    baseline_concurrency: int  # full-length requests the KV cache holds without speculation


def label(row: MethodRow) -> str:
    return f"{row.method} ({row.draft})" if row.draft else row.method


def candidates(target: ModelSpec, draft: str | None = None) -> list[tuple[str, str | None]]:
    """(method, drafter profile) for every method that applies to `target`: the catalog's same-family draft models
    at most a third of its size (a larger one rarely pays, `resolve.default_draft`), its EAGLE, EAGLE-3 and P-EAGLE
    heads, its DFlash and DSpark heads, its own MTP layers where it has them, and the three text lookups; `draft`
    (the user's) is added as its kind."""
    size = target.active_params + target.embedding_params if target.moe_layers else target.total_params
    found: list[tuple[str, str | None]] = []
    for name in names("models"):
        spec = load_model(name)
        if spec.family != target.family or spec.vocab_size != target.vocab_size or name == slug(target.name):
            continue
        if spec.kind == "eagle_head" and slug(spec.trained_for) == slug(target.name):
            found.append(("eagle3" if spec.is_eagle3 else "eagle", name))
        elif spec.kind == "block_head" and slug(spec.trained_for) == slug(target.name):
            found.append((spec.block.method, name))
        elif spec.kind == "model" and spec.total_params * 3 <= size:
            found.append(("draft_model", name))
    if draft is not None:
        spec = load_model(draft)
        own = ("eagle3" if spec.is_eagle3 else "eagle") if spec.kind == "eagle_head" else \
            spec.block.method if spec.kind == "block_head" else "draft_model"
        if all(d is None or slug(d) != slug(draft) for _, d in found):
            found.append((own, draft))
    if target.mtp_layers:
        found.append(("mtp", None))
    return found + [(m, None) for m in TEXT_LOOKUP]


def decide(rows: list[MethodRow], baseline_concurrency: int) -> Comparison:
    """Rank the rows by their central e2e speedup and pick the best only when its 80% interval lies above the
    runner-up's (low end above the other's high end); else the methods whose intervals overlap it tie. Methods that
    gain at no k (verdict disable), do not fit or are refused are never picked."""
    ranked = sorted(rows, key=lambda r: (r.e2e is None, -(r.e2e.point if r.e2e else 0.0)))
    live = [r for r in ranked if r.e2e is not None and r.verdict in ("enable", "marginal")]
    if not live:
        return Comparison(rows=tuple(ranked), decision="off", picked="", tied=(), separate="",
                          baseline_concurrency=baseline_concurrency)
    best = live[0]
    overlap = [r for r in live[1:] if r.e2e.high >= best.e2e.low]
    if not overlap:
        return Comparison(rows=tuple(ranked), decision="pick", picked=label(best), tied=(), separate="",
                          baseline_concurrency=baseline_concurrency)
    tied = [best, *overlap]
    return Comparison(rows=tuple(ranked), decision="tie", picked=label(best), tied=tuple(label(r) for r in tied),
                      separate=_separate(tied), baseline_concurrency=baseline_concurrency)


def _separate(tied: list[MethodRow]) -> str:
    """What would narrow the tied intervals most: each one's dominant term, said once per remedy."""
    measure = [label(r) for r in tied if r.dominant != "cost model"]
    calibrate = [label(r) for r in tied if r.dominant == "cost model"]
    out = []
    if measure:
        out.append("measuring acceptance on your traffic for " + ", ".join(measure) + " (`specadvisor acceptance "
                   "ngram` for a text lookup, `specadvisor acceptance measure` for a model drafter)")
    if calibrate:
        out.append("calibrating the step costs on your GPU for " + ", ".join(calibrate) + " (`specadvisor calibrate`)")
    return "; ".join(out)
