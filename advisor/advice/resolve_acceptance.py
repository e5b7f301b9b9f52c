"""From the acceptance flags to one Acceptance: a measurement when one is given (checked against what the drafter
reaches elsewhere), else the prior the drafter catalog gives this pair and task. `resolve.build_scenario` calls it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from advisor.errors import InputError
from advisor.model.acceptance import conventions as acc_mod
from advisor.model.acceptance import priors
from advisor.model.acceptance.conventions import Acceptance
from advisor.model.acceptance.diagnosis import PairFacts, far_below, likely_causes
from advisor.model.acceptance.published import GENERAL, Drafter, Kind
from advisor.model.acceptance.temperature import MAX_TEMPERATURE
from advisor.model.shape.modelspec import ModelSpec
from advisor.model.shape.quantization import weight_format
from advisor.profiles.drafters import kind_for, long_context_floor, match
from advisor.vllm.methods import TEXT_LOOKUP

DEFAULT_TASK = GENERAL  # no task named: the kind's (or drafter's) whole published spread
# (source URL or file, served temperature, temperature it was measured at) -> Acceptance
MetricsReader = Callable[[str, float, "float | None"], Acceptance]


@dataclass(frozen=True, slots=True)
class AcceptanceInput:
    """The acceptance flags as typed; at most one source may be given (a prior is the fallback)."""

    alpha: float | None = None  # --alpha
    rate: float | None = None  # --acceptance-rate (vLLM accepted/drafted)
    length: float | None = None  # --acceptance-length (mean tokens per step, bonus included)
    measured_k: int | None = None  # --measured-k: the k that rate/length were measured at
    per_position: str | None = None  # --acceptance-per-pos "a1,a2,..."
    task: str | None = None  # --task ("general", or none: the general prior)
    metrics: str | None = None  # --metrics URL|FILE: vLLM spec-decode counters (a server, or a saved measurement)
    measured_temperature: float | None = None  # --measured-temperature (defaults to the served temperature)


@dataclass(frozen=True, slots=True)
class Pair:
    """What the prior and the diagnosis need of the resolved pair."""

    method: str  # the canonical vLLM method it drafts as (an EAGLE-3 head asked for as eagle: eagle3, as pasted)
    target: ModelSpec
    draft: ModelSpec | None  # None for text lookups and MTP
    misserved: bool = False  # an EAGLE-3 head asked for as --method eagle
    target_dtype: str = "bf16"  # the target's served weight format
    prompt_len: int = 0  # tokens per prompt
    out_len: int = 0  # tokens per output


def _measured(inp: AcceptanceInput, read_metrics: MetricsReader | None, temperature: float) -> Acceptance | None:
    """The measurement the flags give, at the temperature it was measured at; None when none was given."""
    if inp.rate is not None or inp.length is not None:
        if inp.measured_k is None:
            flag = "--acceptance-rate" if inp.rate is not None else "--acceptance-length"
            raise InputError(f"{flag} depends on the k it was measured at: add --measured-k K")
        if inp.rate is not None:
            alpha = acc_mod.alpha_from_rate(inp.rate, inp.measured_k)
            return acc_mod.from_point(alpha, f"--acceptance-rate {inp.rate:g} at k={inp.measured_k} -> α {alpha:.3f}")
        alpha = acc_mod.alpha_from_length(inp.length, inp.measured_k)
        return acc_mod.from_point(alpha, f"--acceptance-length {inp.length:g} at k={inp.measured_k} -> α {alpha:.3f}")
    if inp.alpha is not None:
        return acc_mod.from_point(inp.alpha, f"--alpha {inp.alpha:g}")
    if inp.metrics is not None:
        if read_metrics is None:
            raise InputError("--metrics needs a reader: pass read_metrics=acceptance_from_metrics "
                             "(advisor.measured.from_metrics)")
        return read_metrics(inp.metrics, temperature, inp.measured_temperature)
    if inp.per_position is not None:
        try:
            rates = [float(x) for x in inp.per_position.split(",") if x.strip()]
        except ValueError:
            raise InputError(f"--acceptance-per-pos takes comma-separated numbers, got {inp.per_position!r}") from None
        return acc_mod.from_per_position(rates)
    return None


def _check_flags(inp: AcceptanceInput, temperature: float) -> None:
    given = [name for name, value in (("--alpha", inp.alpha), ("--acceptance-rate", inp.rate),
                                      ("--acceptance-length", inp.length), ("--acceptance-per-pos", inp.per_position),
                                      ("--task", inp.task), ("--metrics", inp.metrics)) if value is not None]
    if len(given) > 1:
        raise InputError(f"give one acceptance source, not {' and '.join(given)}")
    for flag, value in (("--temperature", temperature), ("--measured-temperature", inp.measured_temperature)):
        if value is not None and not 0.0 <= value <= MAX_TEMPERATURE:  # NaN fails too
            raise InputError(f"{flag} must be in [0, {MAX_TEMPERATURE:g}] (what vLLM samples at), got {value}")
    if inp.measured_k is not None and inp.rate is None and inp.length is None:
        raise InputError(f"--measured-k {inp.measured_k} names the k an --acceptance-rate or --acceptance-length was "
                         "measured at, and neither was given: add one, or drop --measured-k (--metrics and "
                         "--acceptance-per-pos carry their own k)")


def resolve_acceptance(inp: AcceptanceInput, temperature: float, read_metrics: MetricsReader | None = None,
                       pair: Pair | None = None) -> Acceptance:
    """The one Acceptance the flags describe. --metrics is read by `read_metrics` (the caller passes
    `measured.from_metrics.acceptance_from_metrics`: it imports scipy, which nothing else here needs). With nothing
    measured, the catalog's prior for the pair (its drafter's figures, else its kind's spread) and the task, carried
    from T = 0 to the served temperature; a measurement is held against the same prior and flagged when far below.
    `pair` None: a draft model with no catalog drafter (what a bare `Pair` would give)."""
    _check_flags(inp, temperature)
    method = pair.method if pair else "draft_model"
    kind = kind_for(method, pair is not None and pair.draft is not None and pair.draft.block is not None)
    drafter = match(kind, pair.draft, pair.target) if pair else None
    found = _measured(inp, read_metrics, temperature)
    if found is None:
        task = None if inp.task in (None, GENERAL) else inp.task
        found = priors.prior(kind, drafter, task)
        if drafter is None and pair is not None and pair.draft is not None and kind.drafters:
            note = f"{pair.draft.name} has no published figure (`specadvisor list drafters`): its kind's stands in"
            found = replace(found, notes=(*found.notes, note))
        if pair is not None:
            found = priors.past_context(found, kind, pair.prompt_len + pair.out_len, *long_context_floor())
        return found.at_temperature(temperature, 0.0)
    known = inp.measured_k or len(found.per_position or ()) or None  # the draft positions measured (--alpha: none)
    k = known or priors.SPREAD_K
    if inp.metrics is not None:  # read already carried to the served temperature
        return replace(found, warnings=_diagnose(found, k, kind, drafter, pair, temperature))
    measured_at = temperature if inp.measured_temperature is None else inp.measured_temperature
    found = replace(found, warnings=_diagnose(found, k, kind, drafter, pair, measured_at))
    if method == "mtp":  # one reused MTP layer accepts less past the positions measured
        found = priors.mtp_beyond(found, known or 1)
    return found.at_temperature(temperature, measured_at)


def _diagnose(found: Acceptance, k: int, kind: Kind, drafter: Drafter | None, pair: Pair | None,
              measured_at: float) -> tuple[str, ...]:
    """One line when the measurement lies below the published prior's range at its k and temperature (learned
    drafters only: a text lookup's acceptance is the text's, and its published figures count steps differently)."""
    if pair is None or pair.method in TEXT_LOOKUP:
        return found.warnings
    ref = priors.prior(kind, drafter, None).at_temperature(measured_at, 0.0)
    low, high = (float(ref.expected_tokens(k, a)) for a in (ref.low, ref.high))
    figures = drafter.figures if drafter else ()
    published_t = max((f.temperature or 0.0 for f in figures), default=0.0)
    draft = pair.draft
    facts = PairFacts(method=pair.method, eagle3_head_as_eagle=pair.misserved,
                      # MTP layers ship in the target's checkpoint, quantized with it: no mismatch to point at
                      target_quantized=pair.target_dtype if weight_format(pair.target_dtype).quantized
                      and pair.method != "mtp" else "",
                      temperature=measured_at, published_temperature=published_t, prompt_len=pair.prompt_len,
                      drafter_context=draft.max_context if draft is not None else None)
    line = far_below(float(found.expected_tokens(k)), k, low, high, drafter.name if drafter else kind.label,
                     ref.origin.published, likely_causes(facts))
    return (*found.warnings, line) if line else found.warnings
