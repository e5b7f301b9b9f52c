"""Acceptance when nothing was measured: a prior from what was published for this drafter, or for its kind.

The published figures and spreads live in the drafter catalog (profiles/drafters/*.toml, read into
`advisor.model.acceptance.published` records). A kind sets the shape: how the conditional acceptance falls with the
draft position (EAGLE heads and draft models: flat; one MTP layer reused: falling; text lookups: a share of steps that
find a match, flat on those). One number, the `level` (the first position's conditional rate), then gives the mean
acceptance length AL at every k:

    p_j = Π_{i=1..j} level·r_i   (cumulative per-position rate, r_1 = 1, r the kind's relative shape)
    AL(k) = 1 + share·Σ_{j=1..k} p_j   (Leviathan et al. 2023 Eq. 1 when r ≡ 1 and share = 1)

A published AL at its k fixes a level; a spread of AL at k = 3 (the published range, read as the central 80% of
deployments) fixes the 80% ends, widened to the 90% range `Acceptance.low/high` stands for (uncertainty.Z90/Z80).
A known drafter narrows the prior to its own figures (each carried to T = 0 by the kind's temperature slope); a
task moves it within the kind's spread; with neither, the prior spans the kind's whole published spread.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from advisor.model.acceptance.conventions import Acceptance, PriorOrigin
from advisor.model.acceptance.published import Drafter, Kind
from advisor.model.acceptance.temperature import temperature_factor
from advisor.model.uncertainty import Z80, Z90
from advisor.vllm.defaults import MAX_K

SPREAD_K = 3  # the draft length the kinds' spreads are stated at
NO_TASK = "no task named: a general prior; name the traffic or measure it"

# Past its own MTP layers one layer is reused (vLLM passes no spec_step_idx: deepseek_mtp.py takes layer 0) on hidden
# states it was not trained on, and each later position accepts less: a *measured* MTP acceptance is priced past its
# positions with conditional acceptance α · MTP_REUSE_DECAY^(position - layers). Least squares on the mean acceptance
# lengths of one reused MTP layer in ../shared/reference/gpu-measurements.md §6 (Qwen3.6-27B,
# kyuz0/amd-strix-halo-vllm-toolboxes #53: AL 1.9 / 2.4 / 2.8 at k = 1 / 2 / 3, so α = 0.9 from k = 1) gives 0.67
# (AL 2.44 and 2.77 predicted); i.i.d. α (decay 1) would give 2.71 and 3.44. tests/model/acceptance/test_priors.py
# refits it.
MTP_REUSE_DECAY = 0.67


def relative_shape(conditional, positions: int) -> np.ndarray:
    """r_1..r_positions: the conditional rates relative to the first, the last ratio continued past the listed ones."""
    c = np.asarray(conditional, dtype=float)
    r = c / c[0]
    ratio = r[-1] / r[-2] if r.size > 1 else 1.0
    extra = r[-1] * ratio ** np.arange(1, max(positions - r.size, 0) + 1)
    return np.concatenate([r, extra])[:positions]


def cumulative(level, k: int, conditional) -> np.ndarray:
    """p_1..p_k at this level (broadcasts over level): the chance the first j drafts are all accepted."""
    steps = np.minimum(np.asarray(level, dtype=float)[..., None] * relative_shape(conditional, k), 1.0)
    return np.cumprod(steps, axis=-1)


def length(level, k: int, conditional, share: float = 1.0) -> np.ndarray:
    """AL at draft length k: 1 + share·Σ p_j, tokens per verification step (bonus included)."""
    return 1.0 + share * cumulative(level, k, conditional).sum(axis=-1)


def level_for(al, k: int, conditional, share: float = 1.0) -> np.ndarray:
    """The level whose AL at k is `al` (bisection: AL rises strictly in the level); 1 where even 1 falls short."""
    al = np.asarray(al, dtype=float)
    lo, hi = np.zeros(al.shape), np.ones(al.shape)
    for _ in range(50):
        mid = (lo + hi) / 2
        short = length(mid, k, conditional, share) < al
        lo, hi = np.where(short, mid, lo), np.where(short, hi, mid)
    return (lo + hi) / 2


def slope_from_pairs(pairs, k: int) -> float:
    """α's fractional loss from T = 0 to T = 1, least squares over published (AL at T=0, AL at T=1) pairs of the same
    heads at draft length k: α1 = (1 - slope)·α0, α from each AL by Leviathan's Eq. 1."""
    a0, a1 = (level_for(np.asarray(pairs, dtype=float)[:, i], k, (1.0,)) for i in (0, 1))
    return float(1.0 - np.dot(a0, a1) / np.dot(a0, a0))


def _from_levels(kind: Kind, lo80: float, point: float, hi80: float, share: float, conditional,
                 origin: PriorOrigin, source: str, notes: tuple[str, ...]) -> Acceptance:
    """An Acceptance whose 80% ends sit at these levels: its low/high (a 90% range) widened by Z90/Z80 each side."""
    widen = Z90 / Z80
    low, high = max(point - (point - lo80) * widen, 0.0), min(point + (hi80 - point) * widen, 1.0)
    flat = np.allclose(relative_shape(conditional, MAX_K), 1.0)
    per_position = None if flat else tuple(float(p) for p in cumulative(point, MAX_K, conditional))
    return Acceptance(float(point), float(low), float(high), source, per_position=per_position, prior=True,
                      match_share=share, temperature_slope=kind.temperature_slope,
                      temperature_basis=kind.temperature_basis, origin=origin, notes=notes)


def _around(low_al: float, high_al: float, min_half: float) -> tuple[float, float, float]:
    """(low, mid, high) AL: the range, widened about its middle to at least ±min_half."""
    mid = (low_al + high_al) / 2
    half = max((high_al - low_al) / 2, min_half)
    return max(mid - half, 1.0), mid, mid + half


def kind_prior(kind: Kind, task: str | None) -> Acceptance:
    """The kind's prior: its published spread for the task (or the task it is like; all of it when none is named)."""
    used, spread = kind.spread_for(task)
    share = kind.share_for(used)
    ends = _around(spread.low, spread.high, kind.min_half_width)
    lo80, point, hi80 = (float(level_for(al, SPREAD_K, kind.conditional, share)) for al in ends)
    span = f"{spread.low:.2f}" + (f"-{spread.high:.2f}" if spread.high > spread.low else "")
    published = f"AL {span} at k={SPREAD_K}"
    label = f"task '{task}'" + (f" (as '{used}': no figure of its own)" if used != task else "") if task else \
        "no task named"
    source = f"{kind.label} prior, {label}: {published} ({spread.source})"
    origin = PriorOrigin(kind=kind.label, drafter="", task=task or "", published=published, sources=(spread.source,))
    return _from_levels(kind, lo80, point, hi80, share, kind.conditional, origin, source,
                        () if task else (NO_TASK,))


def drafter_prior(kind: Kind, drafter: Drafter, task: str | None) -> Acceptance:
    """A known drafter's prior: its own figures (on this task where it has some; else all of them, moved by how far
    the kind's spread for the task lies from its general one), each carried to T = 0."""
    shape = drafter.conditional or kind.conditional
    on_task = [f for f in drafter.figures if task is not None and f.task == task]
    figures = on_task or list(drafter.figures)
    levels = [float(level_for(f.al, f.k, shape) / temperature_factor(f.temperature or 0.0, kind.temperature_slope))
              for f in figures]
    shift = 0.0
    if task is not None and not on_task:
        shift = float(level_for(_spread_mid(kind, task), SPREAD_K, kind.conditional)
                      - level_for(_spread_mid(kind, None), SPREAD_K, kind.conditional))
    als = [float(length(min(lv + shift, 1.0), SPREAD_K, shape)) for lv in levels]
    lo_al, mid_al, hi_al = _around(min(als), max(als), kind.min_half_width)
    lo80, point, hi80 = (float(level_for(al, SPREAD_K, shape)) for al in (lo_al, mid_al, hi_al))
    published = "; ".join(f.describe() for f in figures)
    sources = tuple(dict.fromkeys(f.source for f in figures if f.source != "same"))  # "same": as the row above
    what = f"task '{task}'" if on_task else (f"task '{task}' (its figures moved as its kind's spread moves there)"
                                             if task else "no task named")
    source = (f"{drafter.name} prior, {what}: {published} (AL {min(als):.2f}-{max(als):.2f} at k={SPREAD_K}, T=0; "
              f"{'; '.join(sources)})")
    origin = PriorOrigin(kind=kind.label, drafter=drafter.name, task=task or "", published=published,
                         sources=sources)
    return _from_levels(kind, lo80, point, hi80, 1.0, shape, origin, source, () if task else (NO_TASK,))


def _spread_mid(kind: Kind, task: str | None) -> float:
    spread = kind.spread_for(task)[1]
    return (spread.low + spread.high) / 2


def prior(kind: Kind, drafter: Drafter | None, task: str | None) -> Acceptance:
    """The prior for a pair: the drafter's own when the catalog knows it, else its kind's."""
    return kind_prior(kind, task) if drafter is None else drafter_prior(kind, drafter, task)


def al_interval(acc: Acceptance, k: int) -> tuple[float, float, float]:
    """(low, point, high) AL at k over an acceptance's 80% interval: α's ends pulled in from its 90% range by Z80/Z90
    on each side (as `uncertainty` reads the range)."""
    shrink = Z80 / Z90
    ends = (acc.alpha - (acc.alpha - acc.low) * shrink, acc.alpha, acc.alpha + (acc.high - acc.alpha) * shrink)
    low, point, high = (float(acc.expected_tokens(k, a)) for a in ends)
    return low, point, high


def mtp_beyond(found: Acceptance, known: int) -> Acceptance:
    """A measured MTP acceptance known for its first `known` draft positions, priced past them with
    `MTP_REUSE_DECAY` and saying so: the advisor chooses no k past them (`advise.candidates`) unless asked for one."""
    note = (f"acceptance known for k ≤ {known}; past it each position's acceptance is priced {MTP_REUSE_DECAY:g}x "
            "lower again (one MTP layer reused for later positions: published mean acceptance lengths 1.9/2.4/2.8 at "
            "k = 1/2/3, SGLang PR #3582 and a vLLM Qwen3.6 MTP run)")
    return replace(found, known_positions=known, beyond_decay=MTP_REUSE_DECAY, notes=(*found.notes, note))



def past_context(found: Acceptance, kind: Kind, context: int, floor_rate: float, floor_context: int,
                 floor_source: str) -> Acceptance:
    """A prior for requests of `context` tokens (prompt + output). Up to the longest context a published figure of
    its kind was measured at (`Kind.measured_context`), unchanged. No kind publishes how its acceptance falls with
    context, and one report saw it fall to `floor_rate` (accepted / drafted at k = SPREAD_K) at `floor_context`
    tokens (drafters/context.toml), so past it the point stays and the range's low end falls toward that rate: AL at
    k = SPREAD_K log-linearly in context from the prior's low end at the measured context to the floor at
    `floor_context` (at once past the measured context where that lies beyond `floor_context`), saying so."""
    measured = kind.measured_context
    if context <= measured or not found.prior:
        return found
    floor_al = 1.0 + SPREAD_K * floor_rate
    reach = 1.0 if floor_context <= measured else min(np.log(context / measured) / np.log(floor_context / measured), 1.0)
    low_al = float(found.expected_tokens(SPREAD_K, found.low))
    target = low_al - reach * (low_al - floor_al)
    if target >= low_al:
        return found
    lo, hi = 0.0, found.low  # the α at which the prior's own shape gives AL `target` at SPREAD_K (it rises in α)
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if float(found.expected_tokens(SPREAD_K, mid)) < target else (lo, mid)
    low = (lo + hi) / 2
    note = (f"acceptance past the context measured: {context:,} tokens, and no published figure of {kind.label} "
            f"beyond {measured:,} (drafters/{kind.name}.toml); the low end of its range falls "
            f"{'to' if reach >= 1.0 else 'toward'} the {floor_rate:.0%} per-draft rate seen at {floor_context:,} tokens "
            f"and beyond ({floor_source}): AL {target:.2f} at k={SPREAD_K}")
    return replace(found, low=low, notes=(*found.notes, note))
