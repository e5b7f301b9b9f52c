"""`specadvisor list methods`, `list models` and `list hardware`: what this project models, as lines of text."""

from __future__ import annotations

from collections.abc import Iterable

from advisor.model.gpu.hardware import FAMILY_NAMES
from advisor.model.gpu.kernels import floors_borrowed_from
from advisor.profiles.catalog import load_hardware, load_model, names
from advisor.vllm.methods import MODELLED, MTP_ALIASES, NOT_MODELLED


def method_lines() -> list[str]:
    """Every method vLLM 0.32 accepts: what drafts, and how it is modelled or why it is not."""
    lines = [f"{name:<14} {drafts}; {how}" for name, (drafts, how) in MODELLED.items()]
    lines.append(f"{'mtp aliases':<14} {', '.join(MTP_ALIASES)}: vLLM's deprecated names for mtp, pasted as mtp")
    lines += [f"{name:<14} not modelled: {why}" for name, why in NOT_MODELLED.items()]
    return lines


def model_lines(supported_types: Iterable[str] = ()) -> list[str]:
    """The shipped model profiles: kind, tokenizer family, parameters (total, and active where MoE), and notes; then
    the config.json model_types a model directory may have (`supported_types`)."""
    lines, width = [], max(len(name) for name in names("models"))
    for name in names("models"):
        spec = load_model(name)
        size = f"{spec.total_params / 1e9:.2f}B"
        if spec.active_params < spec.total_params and spec.num_experts > 1:
            size += f" ({spec.active_params / 1e9:.2f}B active)"
        notes = []
        if spec.trained_for:
            notes.append(f"for {spec.trained_for}")
        if spec.mtp_layers:
            notes.append(f"{spec.mtp_layers} MTP layer{'s' if spec.mtp_layers > 1 else ''}")
        if spec.num_experts > 1:
            notes.append(f"MoE {spec.experts_per_token} of {spec.num_experts} experts")
        if spec.linear_layers:
            notes.append(f"{spec.linear_layers} linear-attention layers")
        if spec.index_topk:
            notes.append(f"sparse attention top-{spec.index_topk}")
        lines.append(f"{name:<{width}} {spec.kind:<10} {spec.family:<12} {size:<22} {'; '.join(notes)}".rstrip())
    if supported_types:
        lines.append(f"config.json model_types read from a directory: {', '.join(sorted(supported_types))}; any "
                     "other whose layer kinds are all modelled (full, sliding, chunked, block-sparse and compressed "
                     "attention, MLA, Gated DeltaNet, KDA and Mamba2, dense and MoE MLPs) is read by them")
    return lines


def hardware_lines() -> list[str]:
    """The shipped GPU profiles: name, memory, bandwidth, family (and whose kernel floors it borrows when its own
    were never measured), and the figures its sources do not state."""
    lines, width = [], max(len(name) for name in names("hardware"))
    for name in names("hardware"):
        hw = load_hardware(name)
        family = f"{FAMILY_NAMES[hw.family]} {hw.architecture}"
        if floors_borrowed_from(hw):
            family += f", floors {FAMILY_NAMES[floors_borrowed_from(hw)]}'s"
        shared = " unified" if hw.unified_memory else ""
        notes = [f"{hw.memory_gib:g} GiB{shared} {hw.memory}, {hw.memory_bandwidth_gbs:g} GB/s", family]
        if hw.derived:
            notes.append("derived: " + ", ".join(d.figure.split("_")[0] for d in hw.derived))
        lines.append(f"{name:<{width}} {hw.name}; {'; '.join(notes)}")
    return lines
