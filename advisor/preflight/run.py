"""`specadvisor preflight`: a command's settings and its models' profiles through every check, in one order."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from advisor.errors import InputError
from advisor.model.cost.enginecost import is_cpu
from advisor.preflight import checks, drafting_checks, refusals, scheduling
from advisor.preflight.checks import Context, Finding
from advisor.preflight.command import Serve
from advisor.profiles.catalog import load_hardware, load_model
from advisor.profiles.drafters import kind_for, match
from advisor.profiles.localgpu import resolve_gpu
from advisor.vllm.defaults import MAX_K
from advisor.vllm.methods import MODELLED, MTP_ALIASES, NOT_MODELLED

# every check, in the order its line is printed: refusals and wrong drafters first, then costs
CHECKS = (*refusals.CHECKS, checks.vocab_mismatch, checks.eagle3_as_eagle, drafting_checks.fused_dspark,
          drafting_checks.model_runner, drafting_checks.parallel_token, drafting_checks.draft_attention_backend,
          drafting_checks.block_k, scheduling.async_off, checks.head_context, checks.draft_context,
          scheduling.k_beyond_measured, scheduling.schedule_data_parallel,
          scheduling.schedule_graph_mode, scheduling.deepep_token_cap, scheduling.token_budget,
          checks.hybrid_prefix_cache, checks.structured_ngram)


@dataclass(frozen=True, slots=True)
class Report:
    findings: tuple[Finding, ...]  # what the checks found, in CHECKS order
    skipped: tuple[str, ...]  # what could not be checked, and why

    @property
    def failed(self) -> bool:
        return any(f.problem for f in self.findings)


@cache
def _profile(name: str):
    """A model's profile by name, Hugging Face id or directory; None when it is none of them (kept: a miss reads
    every profile's aliases)."""
    try:
        return load_model(name)
    except InputError:
        return None


def _published_k(method: str | None, target, draft) -> int | None:
    """The longest k of the drafter catalog's figures for the served drafter (None: not in the catalog)."""
    if target is None or method not in ("eagle", "eagle3", "mtp", "draft_model", "dflash", "dspark"):
        return None
    found = match(kind_for(method, draft is not None and draft.block is not None), draft, target)
    return max(f.k for f in found.figures) if found is not None else None


def _check_config(serve: Serve) -> None:
    """The speculative config's shape, as vLLM's own parser would refuse it (one line)."""
    method, k = serve.method, serve.speculative.get("num_speculative_tokens") if serve.speculative else None
    if not serve.speculative:
        return
    if method not in MODELLED and method not in NOT_MODELLED and method not in MTP_ALIASES:
        raise InputError(f"--speculative-config method {method!r} is not one vLLM 0.32 knows")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InputError(f"--speculative-config num_speculative_tokens must be a whole number >= 1, got {k!r}")


def preflight(serve: Serve, *, gpu: str, measured_k: int | None = None) -> Report:
    """Every check over one command. Model checks need the target's (and draft's) profile; without one they are
    skipped and said so. A config without "method" is checked as the method vLLM infers (said in a note)."""
    inferred = refusals.infer(serve)
    if inferred is not None:
        serve = replace(serve, speculative={**serve.speculative, "method": inferred})
    _check_config(serve)
    if measured_k is not None and not 1 <= measured_k <= MAX_K:
        raise InputError(f"--measured-k must be in 1..{MAX_K}, got {measured_k}")
    hw = load_hardware(resolve_gpu(gpu))
    target = _profile(serve.model)
    model = serve.speculative.get("model") if serve.speculative else None
    draft = _profile(str(model)) if model else None
    skipped = []
    if target is None:
        skipped.append(f"{serve.model} is not a shipped profile or a directory with config.json: the checks of its "
                       "context, vocabulary and layers are skipped")
    if model and draft is None:
        skipped.append(f"the draft {model} is not a profile: the checks of its context and vocabulary are skipped")
    ctx = Context(serve=serve, target=target, draft=draft, gpu=hw, cpu=is_cpu(hw), measured_k=measured_k,
                  published_k=_published_k(serve.method, target, draft))
    found = tuple(f for f in (refusals.missing_method(ctx, inferred), *(check(ctx) for check in CHECKS))
                  if f is not None)
    return Report(findings=found, skipped=tuple(skipped))
