"""The serving engines the datasheet fit prices, each by what its build pays beyond the physics every engine shares
(bandwidth, matmul efficiency, kernel floors: enginecost.py). Per engine: a cost per engine step, per token per
step and draft pass, per drafter launch and per speculative step (bookkeeping, rejection sampling), fitted on that
engine's published rows alone by benchmarks/datasheet_fit/ (docs/datasheet-fit.md, "By engine"; issue 33: what one
engine needs must not move the rates every other prediction uses). vLLM's are EngineCost's own defaults;
`recommend --engine` prices another engine with its terms in their place. Data only.
"""

from __future__ import annotations

from dataclasses import dataclass

TERMS = ("step_overhead", "token_overhead", "draft_pass_overhead", "spec_overhead")  # EngineCost fields, s


@dataclass(frozen=True, slots=True)
class Engine:
    slug: str  # what --engine takes, and the fit's name for the engine
    name: str  # in words
    terms: dict  # field of TERMS -> s, in place of vLLM's defaults; a field not named keeps vLLM's
    sources: tuple  # the published sources its terms were fitted on (docs/datasheet-fit.md's S numbers)
    served: bool = True  # offered by --engine; False: a research or retired build, fitted to keep its rows apart

    def __post_init__(self) -> None:
        if set(self.terms) - set(TERMS) or any(v < 0 for v in self.terms.values()) or not self.sources:
            raise ValueError(f"Engine {self.slug}: terms among {TERMS}, none negative, and at least one source")


VLLM = "vllm"
# Rounded from the fit (benchmarks/datasheet_fit/, its Parameters table: "<term>@<engine>")
ENGINES = {e.slug: e for e in (
    Engine(VLLM, "vLLM (V1 engine, 0.10-0.32)", {}, ("S1", "S6", "S7", "S9", "S11")),
    Engine("sglang", "SGLang", {"step_overhead": 1.21e-3, "token_overhead": 31e-6, "draft_pass_overhead": 0.0,
                                "spec_overhead": 0.23e-3}, ("S2", "S4", "S8", "S10")),
    Engine("vllm-0.6", "vLLM 0.6.3 (V0 engine)", {"step_overhead": 0.0, "token_overhead": 19e-6}, ("S5",),
           served=False),
    Engine("trtllm", "TensorRT-LLM", {"step_overhead": 2.14e-3, "draft_pass_overhead": 0.46e-3,
                                      "spec_overhead": 1.2e-3}, ("S12",)),
    Engine("gpt-fast", "gpt-fast (torch.compile)", {"step_overhead": 0.89e-3}, ("S3",), served=False),
    Engine("ssd", "SSD (FlashInfer-ROCm)", {"step_overhead": 1.19e-3}, ("S13",), served=False),
)}
SERVED = tuple(slug for slug, e in ENGINES.items() if e.served)


def priced_for(slug: str, *costs):
    """The EngineCosts (None stays None) with engine `slug`'s terms in place of vLLM's: what its build pays beyond
    the physics, on every pass of the target and of a draft model, as the fit priced its rows."""
    terms = ENGINES[slug].terms
    return tuple(None if c is None else c.with_overheads(**terms) for c in costs)


def terms_in_words(slug: str) -> str:
    """An engine's terms, e.g. "per step 1.21 ms, per token 31 µs"."""
    words = {"step_overhead": "per step", "token_overhead": "per token", "draft_pass_overhead": "per draft pass",
             "spec_overhead": "per speculative step"}
    return ", ".join(f"{words[t]} {x * 1e3:.3g} ms" if x >= 1e-4 else f"{words[t]} {x * 1e6:.3g} µs"
                     for t, x in ENGINES[slug].terms.items())
