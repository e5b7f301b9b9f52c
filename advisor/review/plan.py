"""The capacity-planning input (`specadvisor review plan.toml`): workloads and candidate deployments.

pydantic validates the file at the edge; a malformed plan is one InputError naming the file, the field and the
problem. Names (GPUs, models, task priors) are not checked here: an unknown one is reported in the review for
the deployment or workload it belongs to, and the rest of the review still runs. See profiles/plans/*.toml.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from advisor.errors import InputError
from advisor.fileio.toml_input import read_toml
from advisor.vllm.defaults import GPU_MEMORY_UTILIZATION, MAX_K


class Strict(BaseModel):
    # strict: `rate = true` is not 1 req/s, nor "6" six (TOML has numbers); an integer is still a float
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=True)


# A name is one line of printable text: it becomes a heading and a table cell in review.md (a newline in it wrote a
# heading of its own).
Name = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")]
# $ per GPU-hour: clouds charge a few dollars; past a million it is a typo, and a price of 1e308 printed $inf.
MAX_USD_PER_GPU_HOUR = 1e6


class Bucket(Strict):
    tokens: int = Field(gt=0)  # length of the requests in this bucket
    share: float = Field(gt=0)  # relative weight (normalised over the buckets)


class Lengths(Strict):
    """A length distribution: `mean` (and optionally `p90`, default = mean), or a list of `buckets`."""

    mean: float | None = Field(None, gt=0)  # tokens
    p90: float | None = Field(None, gt=0)  # tokens; the review checks TTFT at this prompt length
    buckets: list[Bucket] | None = None

    @model_validator(mode="after")
    def _one_form(self) -> "Lengths":
        if (self.buckets is None) == (self.mean is None):
            raise ValueError("give either mean (and optionally p90) or buckets")
        if self.buckets is not None and (self.p90 is not None or not self.buckets):
            raise ValueError("buckets carry their own p90; give a non-empty list and no p90")
        if self.mean is not None and self.p90 is not None and self.p90 < self.mean:
            raise ValueError(f"p90 ({self.p90:g}) is below the mean ({self.mean:g})")
        return self

    def stats(self) -> tuple[float, float]:
        """(mean, p90) in tokens; a bucket list's p90 is the smallest bucket length covering 90% of the share."""
        if self.buckets is None:
            return float(self.mean), float(self.p90 if self.p90 is not None else self.mean)
        total = sum(b.share for b in self.buckets)
        mean = sum(b.tokens * b.share for b in self.buckets) / total
        covered = 0.0
        for b in sorted(self.buckets, key=lambda b: b.tokens):
            covered += b.share / total
            if covered >= 0.9 - 1e-12:
                return mean, float(b.tokens)
        return mean, float(max(b.tokens for b in self.buckets))


class AcceptanceSource(Strict):
    """Where α comes from: exactly one of task, alpha, acceptance_rate / acceptance_length (with measured_k),
    per_position, or metrics (a Prometheus text file scraped from a vLLM server with speculation on)."""

    task: str | None = None  # general (no task), or a `specadvisor list tasks` name: chat, code, math, ...
    alpha: float | None = Field(None, ge=0, le=1)
    acceptance_rate: float | None = Field(None, ge=0, le=1)
    acceptance_length: float | None = Field(None, ge=1)
    measured_k: int | None = Field(None, ge=1, le=MAX_K)
    per_position: list[Annotated[float, Field(ge=0, le=1)]] | None = Field(None, min_length=1, max_length=MAX_K)
    measured_temperature: float | None = Field(None, ge=0, le=2)
    metrics: str | None = None  # path, relative to the plan file

    @model_validator(mode="after")
    def _one_source(self) -> "AcceptanceSource":
        given = [n for n in ("task", "alpha", "acceptance_rate", "acceptance_length", "per_position", "metrics")
                 if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one acceptance source (task, alpha, acceptance_rate, acceptance_length, "
                             f"per_position or metrics), got {', '.join(given) or 'none'}")
        if self.per_position and any(b > a for a, b in zip(self.per_position, self.per_position[1:])):
            raise ValueError("per_position must not rise with the position: vLLM's rates are unconditional (position "
                             "i counts steps whose first i+1 drafts were all accepted)")
        return self


class SLO(Strict):
    ttft_ms: float = Field(gt=0)  # time to first token, p90 prompt
    tpot_ms: float = Field(gt=0)  # time per output token after the first


class Workload(Strict):
    name: Name
    rate: float = Field(gt=0)  # requests per second, the whole workload
    prompt: Lengths
    output: Lengths
    temperature: float = Field(0.0, ge=0, le=2)
    acceptance: AcceptanceSource
    slo: SLO


class Deployment(Strict):
    name: Name
    gpu: str  # hardware profile name
    count: int = Field(gt=0)  # GPUs in this candidate pool
    tensor_parallel: int = Field(1, gt=0)  # GPUs per vLLM instance (replica)
    target: str  # model profile name or directory
    draft: str | None = None  # draft model / EAGLE head (default: chosen as `recommend` does)
    # any method `specadvisor list methods` models (resolve refuses the others), or "compare": one deployment per
    # method that applies to the target (review.evaluate.compared)
    method: str = "draft_model"
    usd_per_gpu_hour: float | None = Field(None, ge=0, le=MAX_USD_PER_GPU_HOUR)
    gpu_memory_utilization: float = Field(GPU_MEMORY_UTILIZATION, gt=0, le=1)
    # caps concurrency per replica; None: what `vllm serve` sets for the GPU's class
    # (advisor.vllm.defaults.batch_defaults)
    max_num_seqs: int | None = Field(None, gt=0)
    calibration: str | None = None  # calibration profile from `specadvisor calibrate`, relative to the plan


class Plan(Strict):
    title: Name = "capacity plan"
    description: str = ""
    workload: list[Workload] = Field(min_length=1)  # [[workload]] tables
    deployment: list[Deployment] = Field(min_length=1)  # [[deployment]] tables

    @model_validator(mode="after")
    def _unique_names(self) -> "Plan":
        for kind, items in (("workload", self.workload), ("deployment", self.deployment)):
            names = [i.name for i in items]
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                raise ValueError(f"{kind} names must be unique; repeated: {', '.join(dup)}")
        return self


def _where(error: dict) -> str:
    """pydantic's location ('workload', 0, 'rate') as the TOML reader sees it: workload[0].rate."""
    out = ""
    for part in error["loc"]:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def load_plan(path: str | Path) -> Plan:
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such plan file")
    data = read_toml(path, "a plan (`specadvisor review`)")
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        message = first["msg"].removeprefix("Value error, ")
        raise InputError(f"{path}: {_where(first)}: {message}{more}") from None
