"""`specadvisor list drafters` and `list tasks`: the drafter catalog (profiles/drafters/) and the priors it gives."""

from __future__ import annotations

from advisor.model.acceptance import priors
from advisor.model.acceptance.published import GENERAL, TAGS, TASKS
from advisor.profiles.drafters import all_kinds


def _al(acc) -> str:
    low, point, high = priors.al_interval(acc, priors.SPREAD_K)
    return f"AL {point:.2f} ({low:.2f}-{high:.2f})"


def drafter_lines() -> list[str]:
    """Each kind with its no-task prior, then each drafter with its published figures and where they were read."""
    lines = []
    for kind in all_kinds():
        lines.append(f"{kind.label} ({', '.join(kind.methods)}): no-task prior {_al(priors.kind_prior(kind, None))} "
                     f"at k={priors.SPREAD_K}, 80% interval; {len(kind.drafters)} drafters with published figures")
        for d in kind.drafters:
            target = f" for {d.target}" if d.target else ""
            tags = {f.tag for f in d.figures}
            figures = "; ".join(f.describe() + (f" [{TAGS[f.tag]}]" if len(tags) > 1 else "") for f in d.figures)
            figures += f" [{TAGS[tags.pop()]}]" if len(tags) == 1 else ""
            sources = " | ".join(dict.fromkeys(f.source for f in d.figures if f.source != "same"))
            note = f" ({d.note})" if d.note else ""
            lines.append(f"  {d.name}{target}{note}: {figures}. Source: {sources}")
    return lines


def task_lines() -> list[str]:
    """Per --task, each kind's prior: AL at k = 3 and its 80% interval (its published spread, or the one it is like)."""
    kinds = all_kinds()
    lines = [f"{'task':<14} AL at k={priors.SPREAD_K} (80% interval) by drafter kind, when no drafter of the catalog "
             "is known: " + ", ".join(k.label for k in kinds)]
    for task in (GENERAL, *TASKS):
        prior_task = None if task == GENERAL else task
        lines.append(f"{task:<14} " + "; ".join(f"{k.name} {_al(priors.kind_prior(k, prior_task))}" for k in kinds))
    return lines
