"""From what a user types (names, flags) to a validated Scenario. The CLI and the review both come through here."""

from __future__ import annotations

from dataclasses import replace

from advisor.advice.resolve_acceptance import DEFAULT_TASK, AcceptanceInput, MetricsReader, Pair, resolve_acceptance
from advisor.advice.scenario import Scenario
from advisor.errors import InputError
from advisor.model.acceptance.diagnosis import drafter_warnings, misserved_head, past_trained_context
from advisor.model.cost.drafters import mtp_head
from advisor.model.cost.enginecost import EngineCost, is_cpu
from advisor.model.cost.engines import ENGINES, SERVED, VLLM, priced_for
from advisor.model.cost.speculative import Setup
from advisor.model.error.borrowed import caveats, mark, synchronous_host
from advisor.model.gpu.hardware import Hardware
from advisor.model.gpu.quant_support import check_kv_cache, check_weights
from advisor.model.shape.modelspec import ModelSpec
from advisor.model.shape.quantization import (
    CheckpointQuantization,
    compute_dtype,
    kv_bytes_per_element,
    served_weight_dtype,
)
from advisor.model.uncertainty import CostError
from advisor.profiles.calibrated import costs_from, profile_for
from advisor.profiles.catalog import load_hardware, load_model, names, slug
from advisor.profiles.localgpu import resolve_gpu
from advisor.profiles.model_error import (
    DATASHEET,
    datasheet,
    engine_note,
    extrapolating,
    from_profile,
    speedup_error,
)
from advisor.vllm.defaults import GPU_MEMORY_UTILIZATION, check_scheduler
from advisor.vllm.methods import TEXT_LOOKUP, canonical

DEFAULT_TARGET = "llama-3.1-8b-instruct"
DEFAULT_GPU = "rtx-pro-6000-blackwell"
__all__ = ["DEFAULT_TASK", "AcceptanceInput", "build_scenario", "check_pair", "default_draft", "engine_costs"]


def default_draft(target: ModelSpec, method: str) -> str | None:
    """The draft a user would most likely pair: for EAGLE, the head trained for this target (eagle3: an EAGLE-3
    head; eagle: an EAGLE-1 head where one ships, Llama-3.1-8B having both); for a draft model, the largest
    same-family profile at most 1/8 of the target's size (an MoE's active size; smaller drafts are cheaper but
    accept less). A text lookup and an MTP layer need no profile (None)."""
    if method in TEXT_LOOKUP or method == "mtp":
        return None
    drafts: list[tuple[int, int, str]] = []  # (params, context, name): same family and vocabulary, <= 1/3 the size
    heads: list[tuple[bool, bool, str]] = []  # (not the method's own kind of head, drafts in parallel, name)
    # A draft's pass costs its whole weights; an MoE target's step reads only the experts its tokens touch, so it is
    # sized against the target's active parameters (a 30B-A3B is a 3B-class target for a dense draft).
    size = target.active_params + target.embedding_params if target.moe_layers else target.total_params
    for name in names("models"):
        candidate = load_model(name)
        if candidate.family != target.family or candidate.vocab_size != target.vocab_size:
            continue
        trained = slug(candidate.trained_for) == slug(target.name)
        if (method in ("eagle", "eagle3") and candidate.kind == "eagle_head" and (method == "eagle" or
                                                                                 candidate.is_eagle3) and trained):
            heads.append((candidate.is_eagle3 != (method == "eagle3"), candidate.block is not None, name))
        if method in ("dflash", "dspark") and candidate.kind == "block_head" and trained and \
                candidate.block.method == method:
            heads.append((False, True, name))
        if method == "draft_model" and candidate.kind == "model" and candidate.total_params * 3 <= size:
            drafts.append((candidate.total_params, candidate.max_context or 0, name))
    if heads:
        return min(heads)[-1]
    if not drafts:
        what = {"eagle": "EAGLE head", "eagle3": "EAGLE-3 head", "dflash": "DFlash head",
                "dspark": "DSpark head"}.get(method, "draft model")
        mtp = ", or --method mtp (its own MTP layers)" if target.mtp_layers else ""
        raise InputError(f"no {what} profile matches {target.name}: pass --draft NAME|DIR{mtp}")
    # Smaller drafts are cheaper but accept less: the largest at most 1/8 of the target (a 1B for an 8B's size
    # class, an 8B for a 70B), else the smallest of the family (a 2B for a 9B); among equals, the longest context.
    small = [d for d in drafts if d[0] * 8 <= size]
    return max(small)[2] if small else min(drafts, key=lambda d: (d[0], -d[1]))[2]


def check_pair(target: ModelSpec, draft: ModelSpec | None, method: str, tp: int, tp_flag: str = "") -> None:
    """Refuse what vLLM would refuse to load. `tp_flag` names where the GPU count came from (default --num-gpus)."""
    method = canonical(method)
    if target.num_heads % tp or (draft is not None and draft.num_heads % tp):
        raise InputError(f"{tp_flag or f'--num-gpus {tp}'} must divide the attention heads ({target.num_heads} in "
                         f"{target.name}" + (f", {draft.num_heads} in {draft.name})" if draft is not None else ")"))
    if draft is None:
        return
    if draft.kind == "block_head" and method != draft.block.method:
        raise InputError(f"{draft.name} is a {draft.block.method} head: use --method {draft.block.method}")
    if method in ("dflash", "dspark"):
        check_block_head(target, draft, method)
        return
    if method in ("eagle", "eagle3") and draft.kind != "eagle_head":
        raise InputError(f"--method {method} needs an EAGLE head as --draft, and {draft.name} is a full model")
    if method == "eagle3" and not draft.is_eagle3:
        raise InputError(f"{draft.name} is an EAGLE-1 head (no reduced draft vocabulary, draft_vocab_size): use "
                         "--method eagle")
    if method in ("eagle", "eagle3") and (draft.hidden_size, draft.vocab_size) != (target.hidden_size, target.vocab_size):
        raise InputError(f"{draft.name} is an EAGLE head for hidden size {draft.hidden_size} and a "
                         f"{draft.vocab_size}-token vocabulary, but {target.name} has {target.hidden_size} and "
                         f"{target.vocab_size}: vLLM cannot load it on this target; pass the head trained for "
                         f"{target.name} (--draft)")
    if method == "draft_model" and draft.kind == "eagle_head":
        raise InputError(f"{draft.name} is an EAGLE head: use --method eagle")
    if draft.kind == "mtp_head" and method != "mtp":
        raise InputError(f"{draft.name} is an MTP layer: use --method mtp")
    if draft.kind == "model" and draft.total_params >= target.total_params:
        raise InputError(f"the draft ({draft.name}, {draft.total_params / 1e9:.2f}B) is not smaller than the target "
                         f"({target.name}, {target.total_params / 1e9:.2f}B): swap them, or pick a smaller draft")
    if method == "draft_model" and draft.vocab_size != target.vocab_size:
        raise InputError(f"vocabulary mismatch: vLLM's draft_model needs the same vocab_size, but {draft.name} has "
                         f"{draft.vocab_size} and {target.name} has {target.vocab_size}; pick a same-family draft "
                         "or use --method ngram")


def check_block_head(target: ModelSpec, draft: ModelSpec, method: str) -> None:
    """A DFlash or DSpark head vLLM can load on `target`: one of its own kind, reading the target's hidden states
    (its fc is taps x the target's width) and sharing its embedding and lm_head (one vocabulary)."""
    if draft.kind != "block_head":
        raise InputError(f"--method {method} needs a {method} head as --draft (`specadvisor list models`), and "
                         f"{draft.name} is {'an EAGLE head' if draft.kind == 'eagle_head' else 'a full model'}")
    if (draft.hidden_size, draft.vocab_size) != (target.hidden_size, target.vocab_size):
        raise InputError(f"{draft.name} is a {method} head for hidden size {draft.hidden_size} and a "
                         f"{draft.vocab_size}-token vocabulary, but {target.name} has {target.hidden_size} and "
                         f"{target.vocab_size}: it reads and shares the target's, so vLLM cannot load it here; pass "
                         f"the head trained for {target.name} (--draft)")


def build_scenario(*, target: str = DEFAULT_TARGET, draft: str | None = None, method: str = "draft_model",
                   gpu: str = DEFAULT_GPU, num_gpus: int = 1, batch: int = 1, prompt_len: int, out_len: int,
                   temperature: float = 0.0, k: int | None = None, gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION,
                   acceptance: AcceptanceInput = AcceptanceInput(), cost_ratio: float | None = None,
                   calibration: str | None = None, weight_dtype: str | None = None,
                   quantization: str | None = None, draft_quantization: str | None = None,
                   kv_cache_dtype: str = "auto", max_num_seqs: int | None = None, max_num_batched_tokens: int | None = None,
                   read_metrics: MetricsReader | None = None, tp_flag: str = "", k_limit: int | None = None,
                   engine: str = VLLM) -> Scenario:
    """The Scenario the flags describe, or one InputError line naming what vLLM (or the model) would refuse."""
    method = canonical(method)  # vLLM's MTP aliases (deepseek_mtp, ...) are its "mtp", as pasted
    if num_gpus < 1:
        raise InputError(f"--num-gpus must be at least 1, got {num_gpus}")
    check_engine(engine, calibration)
    if cost_ratio is not None and not 0.0 < cost_ratio < 10.0:
        raise InputError(f"--cost-ratio (draft step / target step) must be in (0, 10), got {cost_ratio}")
    if method in TEXT_LOOKUP and draft is not None:
        raise InputError(f"--method {method} drafts from the text itself and takes no --draft ({draft}): drop it, "
                         "or use --method draft_model")
    if method == "mtp" and draft is not None:
        raise InputError(f"--method mtp drafts with the target's own MTP layers and takes no --draft ({draft}): "
                         "drop it")
    target_spec = load_model(target)
    if target_spec.kind == "eagle_head":
        raise InputError(f"{target_spec.name} is an EAGLE draft head, not a target model")
    longest = prompt_len + out_len
    if target_spec.max_context is not None and longest > target_spec.max_context:
        raise InputError(f"--prompt-len {prompt_len} + --out-len {out_len} = {longest} tokens is beyond "
                         f"{target_spec.name}'s context of {target_spec.max_context} tokens (max_position_embeddings):"
                         f" vLLM refuses --max-model-len {longest} for it")
    hw = load_hardware(resolve_gpu(gpu))
    if method in TEXT_LOOKUP:
        draft_spec = None
    elif method == "mtp":
        draft_spec = mtp_head(target_spec)
    else:
        if method == "dspark" and draft is None and target_spec.dspark_block:
            raise InputError(f"{target_spec.name}'s own DSpark stages (vLLM's dspark without a model) are not "
                             "priced here: pass a DSpark head with --draft, or check the command with `specadvisor "
                             "preflight`")
        draft_spec = load_model(draft or default_draft(target_spec, method))
    if method == "eagle" and draft_spec.kind == "model" and draft_spec.num_layers == 1:
        draft_spec = replace(draft_spec, kind="eagle_head")  # an EAGLE-1 head's config reads as a 1-layer model
    check_pair(target_spec, draft_spec, method, num_gpus, tp_flag)
    for flag, value in (("--max-num-seqs", max_num_seqs), ("--max-num-batched-tokens", max_num_batched_tokens)):
        if value is not None and value < 1:
            raise InputError(f"{flag} must be at least 1, got {value}")
    if weight_dtype is not None and quantization is not None:
        raise InputError("give the target's quantization once: --quantization, not also a weight dtype")
    kv_bytes_per_element(kv_cache_dtype)  # refuses a --kv-cache-dtype vLLM does not spell so
    target_dtype = weight_dtype or served_weight_dtype(checkpoint_of(target_spec), quantization, target_spec.name)
    misserved = method == "eagle" and draft_spec.is_eagle3  # pasted as eagle3 (advisor.vllm.command): it drafts as one
    pair = Pair(method="eagle3" if misserved else method, target=target_spec,
                draft=None if method == "mtp" else draft_spec, target_dtype=target_dtype, prompt_len=prompt_len,
                out_len=out_len, misserved=misserved)
    acc = resolve_acceptance(acceptance, temperature, read_metrics, pair)
    if misserved:  # said before any number: a server running it as EAGLE-1 would not serve it as trained
        acc = replace(acc, warnings=(misserved_head(draft_spec.name), *acc.warnings))
    trained = draft_spec.max_context if draft_spec is not None and draft_spec.kind == "eagle_head" else None
    if trained is not None and longest > trained:  # the pasted --max-model-len is prompt + output
        acc = replace(acc, warnings=(*acc.warnings, past_trained_context(draft_spec.name, trained, longest)))
    acc = replace(acc, warnings=(*acc.warnings, *drafter_warnings(draft_spec, method, k)))
    draft_dtype = "bf16"
    if draft_spec is not None and draft_spec.kind == "mtp_head":
        draft_dtype = target_dtype  # MTP layers ship in the target's checkpoint, quantized with it
    elif draft_spec is not None:
        draft_dtype = served_weight_dtype(checkpoint_of(draft_spec), draft_quantization, draft_spec.name)
    check_weights(target_dtype, hw, target_spec.name)
    check_kv_cache(kv_cache_dtype, hw, target_spec)
    if draft_spec is not None and draft_spec.kind != "mtp_head":
        check_weights(draft_dtype, hw, draft_spec.name)
        check_kv_cache(kv_cache_dtype, hw, draft_spec)
    target_cost, draft_cost, source, cost_error = engine_costs(
        hw, target_spec, draft_spec, DATASHEET if engine != VLLM else calibration, target_dtype, max_num_seqs,
        max_num_batched_tokens, tp=num_gpus, draft_weight_dtype=draft_dtype, kv_cache_dtype=kv_cache_dtype)
    if engine != VLLM:
        target_cost, draft_cost = priced_for(engine, target_cost, draft_cost)
    check_scheduler(target_cost.max_num_seqs, target_cost.max_num_batched_tokens,
                    "" if max_num_seqs is not None else hw.name)
    setup = Setup(target=target_spec, target_cost=target_cost, method=method, draft=draft_spec,
                  draft_cost=draft_cost, tp=num_gpus, cost_ratio=cost_ratio, draft_share=acc.match_share)
    if cost_ratio is not None:
        source += f"; draft/target step ratio overridden to {cost_ratio:g}"
    notes = caveats(hw, compute_dtype(target_dtype), datasheet=cost_error.kind == "datasheet", tp=num_gpus)
    notes += tuple(filter(None, [synchronous_host(setup) if engine == VLLM else None]))
    if engine != VLLM:
        notes += (engine_note(engine),)
    cost_error, outside = extrapolating(cost_error, hw, target_spec, batch, longest, engine)
    notes += (outside,) if outside else ()
    cost_error, unpublished = speedup_error(cost_error, hw, target_spec, pair.method)
    return Scenario(setup=setup, hardware=hw, acceptance=acc, prompt_len=prompt_len, out_len=out_len, batch=batch,
                    temperature=temperature, k=k, gpu_memory_utilization=gpu_memory_utilization, cost_source=source,
                    k_limit=k_limit, cost_error=cost_error, gpu_caveats=notes, engine=engine, unpublished=unpublished)


def check_engine(engine: str, calibration: str | None) -> None:
    """--engine: one that the fit priced and users serve; its terms sit on the datasheet's costs, not on a
    calibration of vLLM."""
    if engine not in SERVED:
        raise InputError(f"unknown --engine {engine!r}; choose one of {', '.join(SERVED)}")
    if engine != VLLM and calibration not in (None, DATASHEET):
        raise InputError(f"--engine {engine} prices {ENGINES[engine].name}'s own terms on the datasheet's costs; "
                         "a calibration measured vLLM: drop --calibration")


def checkpoint_of(spec: ModelSpec) -> CheckpointQuantization | None:
    """The quantization a model's config.json declares, if any."""
    if spec.quantization is None:
        return None
    return CheckpointQuantization(spec.quantization, spec.quantized_dtype or "bf16", spec.unquantized)


def engine_costs(hw: Hardware, target: ModelSpec, draft: ModelSpec | None, calibration: str | None,
                 weight_dtype: str = "bf16", max_num_seqs: int | None = None,
                 max_num_batched_tokens: int | None = None, tp: int = 1, *, draft_weight_dtype: str = "bf16",
                 kv_cache_dtype: str = "auto") -> tuple[EngineCost, EngineCost | None, str, CostError]:
    """Measured costs when a calibration applies (given, or found in profiles/calibrations: the one measured at
    `tp` GPUs, else the nearest), else (or with --calibration datasheet) the datasheet's; either under vLLM's
    limits on `hw` (its device-class defaults, or the flags' values), with the served --kv-cache-dtype. Each
    model's costs take its own weight format: vLLM loads a draft as its own config.json says unless the
    speculative config quantizes it. Last, the costs' own error: the calibration's held-out error (from the
    profile as read for the costs), else the datasheet fit's."""
    found = None if calibration == DATASHEET else profile_for(calibration, target, draft, hw, tp)
    if found is not None:
        cost, draft_cost, source = costs_from(*found, target, draft, hw, tp, auto=calibration is None)
        return (replace(cost.for_hardware(hw, max_num_seqs, max_num_batched_tokens), kv_cache_dtype=kv_cache_dtype),
                replace(draft_cost.for_hardware(hw, max_num_seqs, max_num_batched_tokens),
                        kv_cache_dtype=kv_cache_dtype) if draft_cost else None, source, from_profile(*found))
    cost = EngineCost.from_datasheet(hw, weight_dtype, kv_cache_dtype).for_hardware(hw, max_num_seqs,
                                                                                     max_num_batched_tokens)
    draft_cost = (EngineCost.from_datasheet(hw, draft_weight_dtype, kv_cache_dtype).for_hardware(
        hw, max_num_seqs, max_num_batched_tokens) if draft is not None else None)
    compute = compute_dtype(weight_dtype)
    # a rate no source states is marked "(derived)": the report's notes say how (Scenario.gpu_caveats)
    peak = f"{hw.peak_flops(compute) / 1e12:g} TFLOP/s" + (f" ({compute})" if compute != "bf16" else "")
    peak += mark(hw, hw.rate_field(compute))
    # the shares of the peaks the costs stream and compute at, as from_datasheet set them for this GPU's kind
    streams, computes = cost.bandwidth / hw.bandwidth_bytes_per_s, cost.flops / hw.peak_flops(compute)
    return cost, draft_cost, (
        f"datasheet roofline ({hw.name}: {hw.memory_bandwidth_gbs:g} GB/s{mark(hw, 'memory_bandwidth_gbs')} x "
        f"{streams:.2g}, {peak} x {computes:.2g}; run `specadvisor calibrate` for measured costs)"), datasheet(
        None if is_cpu(hw) else hw.vendor)
