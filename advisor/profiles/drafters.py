"""The drafter catalog: profiles/drafters/*.toml (one file per drafter kind) read into
`advisor.model.acceptance.published` records, and a resolved pair matched to its catalog drafter by name, Hugging Face
id or alias.

Only the kind a --method needs is parsed (and the learned heads' temperature pairs), keeping `recommend` quick.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

from advisor.errors import InputError
from advisor.model.acceptance.priors import SPREAD_K, length, slope_from_pairs
from advisor.model.acceptance.published import Drafter, Figure, Kind, Spread
from advisor.model.acceptance.temperature import TEMPERATURE_BASIS, TEMPERATURE_SLOPE
from advisor.model.shape.modelspec import ModelSpec
from advisor.profiles.catalog import profiles_dir, slug

# files, in the order `list drafters` shows them; "peagle" (EAGLE-3 heads drafting in parallel) is asked for by name
KIND_ORDER = ("eagle3", "peagle", "eagle", "mtp", "dflash", "dspark", "draft_model", "ngram")
PARALLEL_EAGLE = "peagle"
HEADS, LEVIATHAN = "heads", "leviathan"  # a kind's `temperature`: the heads' published pairs, or Leviathan's slope
# A kind whose file states no `measured_context`: the benchmarks' prompts, as for the kinds that state one so
UNSTATED_CONTEXT = {"tokens": 2048, "source": "no figure of this kind states its context: a benchmark's prompt of a "
                                              "few thousand tokens at most taken"}


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"{path}: unreadable drafter catalog ({exc})") from None


@cache
def heads_temperature() -> tuple[float, str]:
    """(slope, basis) fitted to the published T = 0 / T = 1 pairs of the same heads (temperature.toml)."""
    data = _read(profiles_dir() / "drafters" / "temperature.toml")
    slope = slope_from_pairs(data["pairs"], int(data["k"]))
    return slope, f"the same heads at T=0 and T=1 lose {slope:.1%} of α per unit of T ({data['source']})"


@cache
def long_context_floor() -> tuple[float, int, str]:
    """(accepted / drafted tokens at k = 3, the context in tokens it was seen at, its source): what acceptance fell to
    at long context (context.toml), where a prior's range reaches down to past the context its kind was measured at
    (`priors.past_context`)."""
    data = _read(profiles_dir() / "drafters" / "context.toml")
    try:
        rate, context, source = float(data["rate"]), int(data["context"]), str(data["source"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"drafters/context.toml: malformed ({exc!r})") from None
    if not 0.0 <= rate < 1.0 or context < 1:
        raise InputError(f"drafters/context.toml: rate must be in [0, 1) and context positive, got {rate}, {context}")
    return rate, context, source


def _figure(raw: dict) -> Figure:
    per_pos = raw.get("per_position")
    return Figure(task=raw["task"], dataset=raw["dataset"], k=int(raw["k"]), al=float(raw["al"]),
                  source=raw["source"], tag=raw["tag"], temperature=raw.get("temperature"),
                  per_position=None if per_pos is None else tuple(per_pos))


def _spread(raw: dict, conditional) -> Spread:
    """A spread as written: AL at k = 3, or (draft models) the papers' i.i.d. α read as AL at k = 3."""
    if "alpha" in raw:
        low, high = (float(length(a, SPREAD_K, conditional)) for a in raw["alpha"])
        return Spread(round(low, 4), round(high, 4), f"α {raw['alpha'][0]:g}-{raw['alpha'][1]:g}, {raw['source']}")
    return Spread(float(raw["al"][0]), float(raw["al"][1]), raw["source"])


@cache
def load_kind(name: str) -> Kind:
    """One kind's file: its shape, spreads and drafters."""
    path = profiles_dir() / "drafters" / f"{name}.toml"
    data = _read(path)
    try:
        k = data["kind"]
        conditional = tuple(float(c) for c in k["conditional"])
        slope, basis = heads_temperature() if k["temperature"] == HEADS else (TEMPERATURE_SLOPE, TEMPERATURE_BASIS)
        drafters = tuple(Drafter(name=d["name"], kind=name, target=d.get("target", ""),
                                 figures=tuple(_figure(f) for f in d["figures"]), aliases=tuple(d.get("aliases", ())),
                                 note=d.get("note", ""),
                                 conditional=tuple(d["conditional"]) if "conditional" in d else None)
                         for d in data.get("drafter", ()))
        return Kind(name=name, label=k["label"], methods=tuple(k["methods"]), conditional=conditional,
                    temperature_slope=slope, temperature_basis=basis, min_half_width=float(k["min_half_width"]),
                    spreads={task: _spread(raw, conditional) for task, raw in k["spread"].items()},
                    like=dict(k.get("like", {})), drafters=drafters, share=k.get("share"),
                    measured_context=int(k.get("measured_context", UNSTATED_CONTEXT)["tokens"]),
                    measured_context_source=str(k.get("measured_context", UNSTATED_CONTEXT)["source"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{path}: malformed drafter catalog ({exc!r})") from None


def kind_for(method: str, parallel_drafting: bool = False) -> Kind:
    """The kind a (canonical) vLLM method drafts as: an EAGLE-3 head that drafts in parallel is a P-EAGLE head."""
    if method == "eagle3" and parallel_drafting:
        return load_kind(PARALLEL_EAGLE)
    for name in KIND_ORDER:
        kind = load_kind(name)
        if method in kind.methods:
            return kind
    raise InputError(f"no drafter kind in profiles/drafters/ covers --method {method}")


def all_kinds() -> list[Kind]:
    return [load_kind(name) for name in KIND_ORDER]


def _keys(*names: str) -> set[str]:
    """The forms a name is matched in: whole, and its last path part (a local directory, an org/repo id)."""
    found = set()
    for name in names:
        if name:
            found |= {slug(name), slug(Path(name).name)}
    return found


def match(kind: Kind, draft: ModelSpec | None, target: ModelSpec) -> Drafter | None:
    """The catalog drafter of a resolved pair: for MTP, the one of the target's own layers; else the draft's, by its
    name, Hugging Face id or a local directory's name against each drafter's name and aliases. None: not listed."""
    if kind.name == "mtp":
        wanted = _keys(target.name, target.hf_id)
        return next((d for d in kind.drafters if _keys(d.target, *d.aliases) & wanted), None)
    if draft is None:
        return None
    wanted = _keys(draft.name, draft.hf_id)
    return next((d for d in kind.drafters if _keys(d.name, *d.aliases) & wanted), None)
