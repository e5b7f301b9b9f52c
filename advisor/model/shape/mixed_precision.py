"""A mixed-precision checkpoint: ModelOpt's MIXED_PRECISION quant_algo, whose `quantized_layers` give each linear
layer its own algorithm (vllm/model_executor/layers/quantization/modelopt.py `ModelOptMixedPrecisionConfig`: per
prefix, FP8 or NVFP4 with or without 4-bit activations), read into one format per quantization part. NVIDIA's
Qwen3.6 re-exports keep the attention and linear-attention projections in FP8 and the MLPs and experts in
W4A16 NVFP4.
"""

from __future__ import annotations

from typing import Any

from advisor.errors import InputError

# ModelOpt quant_algo -> advisor.model.shape.quantization's format name
ALGOS = {"FP8": "fp8", "NVFP4": "nvfp4", "W4A16_NVFP4": "nvfp4a16"}
_ORDER = ("experts", "mlp", "attention")  # the part whose format stands for the checkpoint: the one with most bytes


def _part(layer: str) -> str | None:
    """Which part (quantization.PARTS) a linear layer's name is in; None: outside the decoder layers (lm_head)."""
    if ".experts" in layer:
        return "experts"
    if "attn" in layer or "attention" in layer:
        return "attention"
    if ".mlp." in layer or "shared_expert" in layer:
        return "mlp"
    return None


def mixed_formats(qc: dict[str, Any], model: str) -> tuple[str, tuple[tuple[str, str], ...], tuple[str, ...]]:
    """(the checkpoint's format, (part, format) of the parts stored otherwise, the parts left 16 bit)."""
    layers = qc.get("quantized_layers")
    if not isinstance(layers, dict) or not layers:
        raise InputError(f"{model}: modelopt MIXED_PRECISION without quantized_layers")
    found: dict[str, set[str]] = {}
    for layer, spec in layers.items():
        algo = str((spec or {}).get("quant_algo", "")).upper() if isinstance(spec, dict) else ""
        if algo not in ALGOS:
            raise InputError(f"{model}: modelopt quant_algo {algo!r} of {layer} is not modelled "
                             f"({', '.join(ALGOS)} are)")
        part = _part(str(layer))
        if part is not None:
            found.setdefault(part, set()).add(ALGOS[algo])
    if any(len(formats) > 1 for formats in found.values()):
        raise InputError(f"{model}: modelopt MIXED_PRECISION with two formats in one part is not modelled")
    formats = {part: next(iter(fmts)) for part, fmts in found.items()}
    if not formats:
        raise InputError(f"{model}: modelopt MIXED_PRECISION quantizes no decoder layer")
    main = formats[next(p for p in _ORDER if p in formats)]
    others = tuple((p, f) for p, f in formats.items() if f != main)
    return main, others, tuple(p for p in ("attention", "mlp", "experts") if p not in formats)
