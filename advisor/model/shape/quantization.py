"""Quantized weights and KV cache: bytes per stored value, the parts a checkpoint leaves in 16 bit, and the dtype the
matmuls run in.

A weight format is named by one string (the `weight_dtype` an EngineCost carries): "bf16", "fp16", "fp8", "nvfp4"
(W4A4), "nvfp4a16" (weight-only), "mxfp4", or "int{4,8}-g{group}" (AWQ/GPTQ style, "-sym" without zero points;
"int4": 16-bit scale and zero per 128). Bytes per weight include the per-group scales:
- NVFP4: 4-bit e2m1 values, one fp8 e4m3 scale per 16 (NVIDIA, "NVFP4" in the Transformer Engine / ModelOpt docs;
  vllm/model_executor/layers/quantization/utils/nvfp4_utils.py): 4 + 8/16 bits. The per-tensor fp32 scale is noise.
- MXFP4: 4-bit e2m1 values, one e8m0 scale per 32 (OCP Microscaling Formats v1.0, §5): 4 + 8/32 bits.
- AWQ / GPTQ: 4-bit values packed in int32, per group an fp16 scale and a 4-bit packed zero point (qweight, qzeros,
  scales: vllm/model_executor/layers/quantization/awq.py `AWQLinearMethod.create_weights`, gptq.py likewise):
  b + (16 + b)/group bits. Symmetric compressed-tensors weights store no zero point: b + 16/group.
- FP8: one byte; per-tensor, per-channel and 128x128-block scales (fp32 per 16,384 weights) are under 0.03 %.
Embeddings, the lm_head, MoE routers and norms stay 16 bit in every format here (vLLM quantizes LinearBase and
FusedMoE layers; ParallelLMHead and the routers' gates are built with quant_config=None or skipped).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from advisor.errors import InputError
from advisor.model.shape.mixed_precision import mixed_formats

PARTS = ("attention", "mlp", "experts")  # attention/linear mixers; dense MLPs and shared experts; routed experts


@dataclass(frozen=True, slots=True)
class WeightFormat:
    name: str
    bits: float  # bits per stored value
    group_size: int = 0  # values per scale (0: scales negligible)
    group_bits: float = 0.0  # bits of scale (+ zero point) per group
    compute: str = "bf16"  # the matmul dtype on a GPU with its tensor cores: "bf16", "fp8", "fp4"

    @property
    def bytes_per_weight(self) -> float:
        return (self.bits + (self.group_bits / self.group_size if self.group_size else 0.0)) / 8.0

    @property
    def quantized(self) -> bool:
        return self.bits < 16


_FIXED = {
    "bf16": WeightFormat("bf16", 16), "fp16": WeightFormat("fp16", 16),
    # W8A8: vLLM's Fp8LinearMethod quantizes activations too and runs fp8 GEMMs where the GPU has them (fp8.py)
    "fp8": WeightFormat("fp8", 8, compute="fp8"),
    "nvfp4": WeightFormat("nvfp4", 4, 16, 8, compute="fp4"),  # ModelOpt NVFP4 / compressed-tensors W4A4
    "nvfp4a16": WeightFormat("nvfp4a16", 4, 16, 8),
    # vLLM's MXFP4 MoE backends keep bf16 activations by default (fused_moe/oracle/mxfp4.py
    # `_get_priority_backends_for_gpt_oss`: FLASHINFER_TRTLLM_MXFP4_BF16 first, TRITON / MARLIN w4a16 on Hopper)
    "mxfp4": WeightFormat("mxfp4", 4, 32, 8),
    # OCP MXFP4 weights and activations (AMD Quark W4A4): fp4 GEMMs where the GPU has them (quark_ocp_mx.py)
    "mxfp4a4": WeightFormat("mxfp4a4", 4, 32, 8, compute="fp4"),
    # MXFP4 weights, static per-tensor fp8 activations (Quark W4A8: AITER Triton, quark_w4a8_mxfp4_fp8.py)
    "mxfp4a8fp8": WeightFormat("mxfp4a8fp8", 4, 32, 8, compute="fp8"),
    # int4 with a 16-bit scale and a 16-bit zero point per 128 (gpt-fast's int4 "scales_and_zeros", as the
    # published measurements in benchmarks/datasheet_fit/ ran it); AWQ/GPTQ checkpoints read as int4-g<group>
    "int4": WeightFormat("int4", 4, 128, 32),
}
_INT = re.compile(r"int(4|8)(?:-g(\d+))?(-sym)?(-a8int|-a8fp8)?")
# W4A8, int4 weights with 8-bit activations: "-a8fp8" runs fp8 GEMMs (CUTLASS W4A8, compressed_tensors_w4a8_fp8.py);
# "-a8int" int8 GEMMs (Humming, compressed_tensors_wNa8.py), whose rate no profile lists: priced at the 16-bit rate,
# which INT8 tensor cores at least match (decode streams the 4-bit weights either way).
_ACTIVATION_COMPUTE = {"-a8fp8": "fp8", "-a8int": "bf16", None: "bf16"}


def weight_format(name: str) -> WeightFormat:
    """The format a `weight_dtype` string names; InputError for one this tool does not know."""
    if name in _FIXED:
        return _FIXED[name]
    found = _INT.fullmatch(name)
    if found:
        bits, group = int(found[1]), int(found[2] or 128)
        return WeightFormat(name, bits, group, 16 if found[3] else 16 + bits, compute=_ACTIVATION_COMPUTE[found[4]])
    raise InputError(f"unknown weight format {name!r}; known: {', '.join(_FIXED)}, "
                     "int4/int8-g<group>[-sym][-a8int|-a8fp8]")


def bytes_per_weight(name: str) -> float:
    return weight_format(name).bytes_per_weight


def compute_dtype(name: str) -> str:
    """What `Hardware.peak_flops` is asked for: weight-only formats multiply in 16 bit."""
    return weight_format(name).compute


# --- the KV cache --------------------------------------------------------------------------------------------------
# vllm/config/cache.py `CacheDType`: "auto" is the model's dtype (16 bit here); fp8 is e4m3 on CUDA.
# NVFP4: per head of d values, d/2 bytes of e2m1 and d/16 of fp8 scales (vllm/utils/torch_utils.py
# `nvfp4_kv_cache_full_dim`); "nvfp4_4over6" picks each block's scale by search, same bytes. Where vLLM runs them:
# advisor/model/gpu/quant_support.py.
KV_CACHE_DTYPES = {"auto": 2.0, "bfloat16": 2.0, "float16": 2.0, "fp8": 1.0, "fp8_e4m3": 1.0, "fp8_e5m2": 1.0,
                   "nvfp4": 0.5 + 1 / 16, "nvfp4_4over6": 0.5 + 1 / 16}


def kv_bytes_per_element(kv_cache_dtype: str) -> float:
    if kv_cache_dtype not in KV_CACHE_DTYPES:
        raise InputError(f"--kv-cache-dtype {kv_cache_dtype!r} is not modelled; choose one of "
                         f"{', '.join(KV_CACHE_DTYPES)}")
    return KV_CACHE_DTYPES[kv_cache_dtype]


# --- vLLM's --quantization names -----------------------------------------------------------------------------------
# For a checkpoint without a quantization_config vLLM can only quantize online: fp8 (vllm/model_executor/layers/
# quantization/fp8.py, `Fp8Config` with is_checkpoint_fp8_serialized False; the fp8_per_* shorthands of
# vllm/config/quantization.py). AWQ, GPTQ, NVFP4 and MXFP4 need a checkpoint quantized that way: point --target at it.
ONLINE = {"fp8": "fp8", "fp8_per_tensor": "fp8", "fp8_per_block": "fp8", "fp8_per_channel": "fp8"}
# Names vLLM accepts for a checkpoint whose config says quant_method (its override_quantization_method hooks).
_COMPATIBLE = {"awq": {"awq", "awq_marlin", "auto_awq"}, "gptq": {"gptq", "gptq_marlin", "auto_gptq"},
               "modelopt": {"modelopt", "modelopt_fp4"}, "mxfp4": {"mxfp4", "gpt_oss_mxfp4"}}
# Which parts a format's vLLM method quantizes at all: MXFP4 only the routed experts (mxfp4.py
# `Mxfp4Config.get_quant_method`: every LinearBase gets UnquantizedLinearMethod).
_ONLY = {"mxfp4": ("experts",)}


@dataclass(frozen=True, slots=True)
class CheckpointQuantization:
    """A config.json's quantization_config, reduced to what costs bytes and FLOPs."""

    method: str  # quant_method as vLLM reads it
    weight_dtype: str  # the format of the quantized parts
    unquantized: tuple[str, ...] = ()  # PARTS the checkpoint leaves in 16 bit
    part_formats: tuple[tuple[str, str], ...] = ()  # mixed precision: (part, format) stored unlike weight_dtype


def served_weight_dtype(checkpoint: CheckpointQuantization | None, flag: str | None, model: str) -> str:
    """The format vLLM serves `model` in: the checkpoint's own, or --quantization NAME on an unquantized one. A
    name that contradicts the checkpoint's quantization_config is refused, as vLLM refuses it
    (vllm/config/model.py `_verify_quantization`)."""
    if flag is None:
        return checkpoint.weight_dtype if checkpoint else "bf16"
    if checkpoint is not None:
        if flag == checkpoint.method or flag in _COMPATIBLE.get(checkpoint.method, ()):
            return checkpoint.weight_dtype
        raise InputError(f"--quantization {flag} contradicts {model}'s config.json (quant_method "
                         f"{checkpoint.method!r}): vLLM refuses it; drop the flag")
    if flag not in ONLINE:
        raise InputError(f"--quantization {flag} needs a checkpoint quantized that way, and {model}'s config.json "
                         f"has no quantization_config: point --target/--draft at the quantized checkpoint, or use "
                         f"vLLM's online {' / '.join(ONLINE)}")
    return ONLINE[flag]


def quantized_parts(weight_dtype: str, unquantized: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The PARTS stored in `weight_dtype` (the rest, and embeddings, lm_head and routers, stay 16 bit)."""
    if not weight_format(weight_dtype).quantized:
        return ()
    return tuple(p for p in _ONLY.get(weight_dtype, PARTS) if p not in unquantized)


def _parts_named(patterns: list[str]) -> tuple[str, ...]:
    """The PARTS that a modules_to_not_convert / ignore / exclude_modules list leaves unquantized in every layer.
    Patterns naming one layer (model.layers.3.self_attn) are a sliver of the weights and are not counted."""
    found = set()
    for pattern in patterns:
        text = str(pattern)
        if re.search(r"layers\.\d+\.", text):
            continue
        if "attn" in text or "attention" in text:
            found.add("attention")
        if "shared_expert" in text:
            found.add("mlp")
        elif re.search(r"\.mlp[*$]*$", text):  # a whole MLP block: its dense MLP or its experts
            found.update(("mlp", "experts"))
        elif ".experts" in text:
            found.add("experts")
    return tuple(p for p in PARTS if p in found)


def from_quantization_config(qc: dict[str, Any], model: str) -> CheckpointQuantization:
    """Read config.json's quantization_config: fp8, compressed-tensors, modelopt (FP8 / NVFP4), mxfp4, awq, gptq."""
    method = str(qc.get("quant_method", "")).lower()
    ignore = list(qc.get("modules_to_not_convert") or qc.get("ignore") or qc.get("exclude_modules") or
                  qc.get("ignored_layers") or [])
    if method == "fp8":
        return CheckpointQuantization("fp8", "fp8", _parts_named(ignore))
    if method == "mxfp4":
        return CheckpointQuantization("mxfp4", "mxfp4", _parts_named(ignore))
    if method in ("awq", "gptq"):
        bits, group = int(qc.get("bits", qc.get("w_bit", 4))), int(qc.get("group_size", qc.get("q_group_size", 128)))
        return CheckpointQuantization(method, f"int{bits}-g{group}", _parts_named(ignore))  # both store qzeros
    if method.startswith("modelopt"):
        inner = qc.get("quantization") if isinstance(qc.get("quantization"), dict) else qc
        algo = str(inner.get("quant_algo", "")).upper()
        ignore = list(inner.get("exclude_modules") or ignore)
        if algo in ("FP8", "NVFP4"):
            return CheckpointQuantization("modelopt", "fp8" if algo == "FP8" else "nvfp4", _parts_named(ignore))
        if algo == "MIXED_PRECISION":
            main, others, unquantized = mixed_formats(inner, model)
            return CheckpointQuantization("modelopt", main, unquantized, others)
        raise InputError(f"{model}: modelopt quant_algo {algo!r} is not modelled (FP8, NVFP4 and MIXED_PRECISION are)")
    if method == "quark":
        return CheckpointQuantization(method, _quark_format(qc, model), _parts_named(list(qc.get("exclude") or [])))
    if method == "compressed-tensors":
        return CheckpointQuantization(method, _compressed_tensors_format(qc, model), _parts_named(ignore))
    raise InputError(f"{model}: quantization_config quant_method {method!r} is not modelled; modelled: fp8, "
                     "compressed-tensors, modelopt (FP8, NVFP4), mxfp4, quark (MXFP4, FP8), awq, gptq")


def _compressed_tensors_format(qc: dict[str, Any], model: str) -> str:
    """The first config group's weights (and input activations) -> a format name. compressed-tensors schemes:
    vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py `_get_scheme_from_parts`."""
    groups = list((qc.get("config_groups") or {}).values())
    if not groups or not isinstance(groups[0].get("weights"), dict):
        raise InputError(f"{model}: compressed-tensors quantization_config without config_groups weights")
    weights, acts = groups[0]["weights"], groups[0].get("input_activations") or {}
    bits, kind = int(weights.get("num_bits", 16)), str(weights.get("type", "int"))
    if kind == "float" and bits == 8:
        return "fp8"
    if kind == "float" and bits == 4 and int(weights.get("group_size") or 16) == 16:
        return "nvfp4" if int(acts.get("num_bits", 16)) == 4 else "nvfp4a16"
    if kind == "float" and bits == 4 and int(weights.get("group_size") or 0) == 32 and not acts:
        return "mxfp4"  # mxfp4-pack-quantized W4A16 (compressed_tensors_w4a16_mxfp4.py): Kimi-K3's experts
    if kind == "int" and bits in (4, 8):
        group = int(weights.get("group_size") or 0)
        if not group:
            raise InputError(f"{model}: compressed-tensors int{bits} per-channel weights are not modelled")
        name = f"int{bits}-g{group}" + ("-sym" if weights.get("symmetric", True) else "")
        if not acts:
            return name  # W4A16 / W8A16 (compressed_tensors_wNa16.py), Kimi-K2's int4 experts
        act_bits, act_kind = int(acts.get("num_bits", 16)), str(acts.get("type", "int"))
        if bits == 4 and act_bits == 8 and acts.get("dynamic"):  # W4A8 (compressed_tensors.py `_get_scheme_from_parts`)
            if act_kind == "int" and (groups[0].get("format") or qc.get("format")) != "pack-quantized":
                raise InputError(f"{model}: compressed-tensors W4A8 int outside pack-quantized format runs in vLLM "
                                 "0.32 only on CPUs (CompressedTensorsW4A8Int: Dynamic4bitLinearKernel)")
            return name + ("-a8fp8" if act_kind == "float" else "-a8int")
        if bits == 8 and act_bits == 8 and act_kind == "int":
            raise InputError(f"{model}: compressed-tensors W8A8 int8 is not modelled")
        raise InputError(f"{model}: compressed-tensors int{bits} weights with {act_bits}-bit {act_kind} "
                         "activations are not modelled")
    raise InputError(f"{model}: compressed-tensors weights of {bits}-bit {kind} are not modelled")


def _quark_format(qc: dict[str, Any], model: str) -> str:
    """AMD Quark's global_quant_config -> a format name: OCP MXFP4 (fp4 per group of 32, e8m0 scales) weights with
    MXFP4 or fp8 activations, FP8, or int4 weight-only (vllm/model_executor/layers/quantization/quark/quark.py
    `_get_scheme_from_config`)."""
    glob = qc.get("global_quant_config") or {}
    weight, acts = glob.get("weight") or {}, glob.get("input_tensors") or {}
    if isinstance(weight, list) or isinstance(acts, list):
        raise InputError(f"{model}: quark with two-level weight scales (W4A8 int4/fp8, NVFP4) is not modelled")
    if weight.get("dtype") == "fp8_e4m3":
        return "fp8"
    if weight.get("dtype") == "fp4" and weight.get("group_size") == 32:
        if acts.get("dtype") == "fp8_e4m3":
            return "mxfp4a8fp8"
        if acts.get("dtype") != "fp4":
            raise InputError(f"{model}: quark MXFP4 weights with {acts.get('dtype') or '16-bit'} activations run as "
                             "simulated dequantization in vLLM 0.32 (quark_ocp_mx.py): not modelled")
        return "mxfp4a4"
    if weight.get("dtype") in ("int4", "uint4") and not acts and weight.get("group_size"):  # `_is_w4a16_int4`
        return f"int4-g{weight['group_size']}" + ("-sym" if weight.get("symmetric") else "")
    raise InputError(f"{model}: quark {weight.get('dtype')!r} weights are not modelled (MXFP4, FP8 and int4 are)")
