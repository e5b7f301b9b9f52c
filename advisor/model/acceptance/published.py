"""Published acceptance, as the drafter catalog (profiles/drafters/*.toml) states it: each drafter's figures, and each
drafter kind's spread by task. Validated records only; advisor/model/acceptance/priors.py builds the priors from them,
and advisor/profiles/drafters.py reads the files.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.errors import InputError

# The kinds of traffic a prior can be named for (--task); "general" is what a prior spans when none is named
TASKS = ("chat", "summarization", "code", "math", "rag", "structured", "json", "sql", "creative")
STRUCTURED_TASKS = ("structured", "json", "sql")  # the TASKS whose requests carry a grammar (structured output)
GENERAL = "general"
TAGS = {"P": "primary", "A": "anecdotal", "D": "derived"}


def check_task(task: str | None) -> str | None:
    """`task` (a --task value; None when none is named), refused in one line unless it is one of TASKS."""
    if task is not None and task not in TASKS:
        raise InputError(f"unknown --task {task!r}; choose one of {', '.join((GENERAL, *TASKS))}")
    return task


@dataclass(frozen=True, slots=True)
class Figure:
    """One published acceptance: a drafter on one benchmark at one draft length."""

    task: str  # a TASKS name, or GENERAL (a mean over several benchmarks, or traffic no task describes)
    dataset: str  # what it was measured on (MT-Bench, HumanEval, ...)
    k: int  # draft tokens per verification step (a chain)
    al: float  # mean tokens per verification step, bonus token included (vLLM's mean acceptance length)
    source: str  # where it was read
    tag: str  # TAGS: primary, anecdotal, or derived by arithmetic on the source's numbers
    temperature: float | None = None  # sampling temperature; None: not stated (read as greedy)
    per_position: tuple[float, ...] | None = None  # vLLM's cumulative per-position rates, where published

    def __post_init__(self) -> None:
        if self.task not in (*TASKS, GENERAL):
            raise InputError(f"published figure: unknown task {self.task!r}; one of {', '.join(TASKS)} or general")
        if self.k < 1 or not 1.0 <= self.al <= self.k + 1:
            raise InputError(f"published figure {self.dataset}: AL {self.al} must lie in [1, k+1] at k = {self.k}")
        if self.tag not in TAGS or not self.source:
            raise InputError(f"published figure {self.dataset}: needs a source and a tag in {', '.join(TAGS)}")

    def describe(self) -> str:
        """'AL 2.65 at k=3 on HumanEval, T=0': the figure in words."""
        at = "" if self.temperature is None else f", T={self.temperature:g}"
        return f"AL {self.al:g} at k={self.k} on {self.dataset}{at}"


@dataclass(frozen=True, slots=True)
class Drafter:
    """A drafter people deploy, with what was published about its acceptance."""

    name: str  # its Hugging Face id where it has one, else a description
    kind: str  # the catalog file it sits in (eagle3, eagle, mtp, draft_model, ngram)
    target: str  # the model it drafts for (MTP layers: the model they belong to)
    figures: tuple[Figure, ...]  # at least one, each cited
    aliases: tuple[str, ...] = ()  # other names it is served under (a local directory's name matches too)
    note: str = ""  # what sets it apart (training, harness)
    conditional: tuple[float, ...] | None = None  # its own per-position shape, where its figures show one

    def __post_init__(self) -> None:
        if not self.figures:
            raise InputError(f"drafter {self.name!r}: the catalog lists only drafters with a published figure")


@dataclass(frozen=True, slots=True)
class Spread:
    """Where a kind's published acceptance lies for one task: the AL at k = 3 that a prior's 80% interval spans."""

    low: float  # AL at k = 3
    high: float  # AL at k = 3
    source: str  # the figures it spans

    def __post_init__(self) -> None:
        if not 1.0 <= self.low <= self.high <= 4.0:
            raise InputError(f"published spread {self.low}-{self.high}: need 1 <= low <= high <= 4 (AL at k = 3)")


@dataclass(frozen=True, slots=True)
class Kind:
    """A drafter kind: how its acceptance falls with the draft position, its published spread by task, its
    drafters."""

    name: str  # the catalog file's stem
    label: str  # in words ("EAGLE-3 heads")
    methods: tuple[str, ...]  # the vLLM methods that draft this way
    conditional: tuple[float, ...]  # conditional acceptance by position, relative to the first; the last ratio goes on
    temperature_slope: float  # α's fractional loss per unit of temperature for this kind
    temperature_basis: str  # where that slope comes from
    min_half_width: float  # a prior from one figure is at least this wide on each side (AL at k = 3)
    spreads: dict  # task (or GENERAL) -> Spread
    like: dict  # task without a published spread -> the task (or GENERAL) whose spread it takes
    drafters: tuple[Drafter, ...] = ()
    share: dict | None = None  # text lookups: task -> share of steps that find a match (the rest decode one token)
    # the longest context (prompt + output, tokens) a published figure of this kind was measured at, and where
    measured_context: int = 0
    measured_context_source: str = ""

    def __post_init__(self) -> None:
        if GENERAL not in self.spreads:
            raise InputError(f"drafter kind {self.name}: needs a general spread")
        missing = [t for t in TASKS if t not in self.spreads and self.like.get(t) not in self.spreads]
        if missing:
            raise InputError(f"drafter kind {self.name}: no spread for {', '.join(missing)}")
        if not self.conditional or any(not 0.0 < c <= 1.0 for c in self.conditional):
            raise InputError(f"drafter kind {self.name}: conditional rates must lie in (0, 1]")
        if self.measured_context < 1 or not self.measured_context_source:
            raise InputError(f"drafter kind {self.name}: needs the longest context its figures were measured at "
                             "(measured_context, with its source)")

    def spread_for(self, task: str | None) -> tuple[str, Spread]:
        """The task whose spread describes `task` (itself, the one it is like, or GENERAL for None) and the spread."""
        check_task(task)
        used = GENERAL if task is None else task if task in self.spreads else self.like[task]
        return used, self.spreads[used]

    def share_for(self, task: str) -> float:
        """The share of steps that draft at all for this task's traffic (1 for drafters that always draft)."""
        if self.share is None:
            return 1.0
        return self.share.get(task, self.share[GENERAL])
