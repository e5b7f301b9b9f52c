"""Which quantized formats vLLM 0.32 runs on which GPU: a weight format or KV-cache dtype it would refuse there, or
only emulate (dequantizing every step, a cost this model does not price), is one InputError line naming why.

- W4A8 with fp8 activations (int4 weights): CUTLASS kernels for compute capability 9.0 only, group size 128
  (compressed_tensors.py `_is_fp8_w4a8_sm90`; kernels/linear/mixed_precision/cutlass.py `can_implement`).
- W4A8 with int8 activations (pack-quantized): the Humming kernel, CUDA only and the optional `humming` package
  installed (compressed_tensors_wNa8.py; mixed_precision/humming.py "Humming is only supported on CUDA").
- MXFP4 weights and activations (Quark W4A4): native on gfx950 (MI350X/MI355X); on any other GPU vLLM dequantizes
  the weights and fake-quantizes the activations in 16 bit (quark_ocp_mx.py: "Simulated weight dequantization").
  Quark W4A8 (MXFP4 weights, fp8 activations) likewise: AITER's Triton kernel where `supports_mx`, else emulation
  (quark_w4a8_mxfp4_fp8.py).
  gpt-oss's `mxfp4` (W4A16 experts) runs everywhere: AITER CK on gfx950, Triton on MI300, Marlin/Triton on CUDA.
- NVFP4 KV cache: only the FlashInfer backend stores it (v1/attention/backends/flashinfer.py), a CUDA backend and
  not an MLA one; "nvfp4" on compute capability 8.x, 9.x, 10.x and 12.x, "nvfp4_4over6" (its scale search) only
  through TRT-LLM on 10.x (`FlashInferBackend.supports_kv_cache_dtype`). On 8.x/9.x/12.x it refuses head size 64
  and attention sinks (`supports_combination`).
"""

from __future__ import annotations

from advisor.errors import InputError
from advisor.model.gpu.hardware import Hardware
from advisor.model.shape.modelspec import ModelSpec
from advisor.model.shape.quantization import weight_format
from advisor.vllm.runner import data_center_blackwell, hopper_sm90, rocm_gfx950


def check_weights(weight_dtype: str, hw: Hardware, model: str) -> None:
    """Refuse a weight format vLLM 0.32 does not run natively on `hw`."""
    fmt = weight_format(weight_dtype)
    if weight_dtype.endswith("-a8fp8") and (not hopper_sm90(hw.architecture) or fmt.group_size != 128):
        raise InputError(f"{model}: W4A8 (int4 weights, fp8 activations) runs in vLLM 0.32 only on compute "
                         f"capability 9.0 (H100/H200) at group size 128, not on {hw.name} at {fmt.group_size}")
    if weight_dtype.endswith("-a8int") and hw.vendor != "nvidia":
        raise InputError(f"{model}: W4A8 (int4 weights, int8 activations) runs in vLLM 0.32 only through the "
                         f"Humming kernel on NVIDIA GPUs, not on {hw.name}")
    if weight_dtype in ("mxfp4a4", "mxfp4a8fp8") and not rocm_gfx950(hw.architecture):
        raise InputError(f"{model}: MXFP4 {'W4A4' if weight_dtype == 'mxfp4a4' else 'W4A8'} (Quark) runs natively in "
                         f"vLLM 0.32 only on gfx950 (MI350X/MI355X); on {hw.name} it dequantizes every step "
                         "(emulation), which is not modelled")


def check_kv_cache(kv_cache_dtype: str, hw: Hardware, model: ModelSpec) -> None:
    """Refuse an NVFP4 KV cache where vLLM 0.32 has no attention backend that stores it for `model` on `hw`."""
    if not kv_cache_dtype.startswith("nvfp4"):
        return
    why = None
    if hw.vendor != "nvidia":
        why = f"FlashInfer, the only backend that stores it, runs on NVIDIA GPUs, not on {hw.name}"
    elif model.is_mla:
        why = f"{model.name} uses MLA, whose attention backends do not store it (FlashInfer's does, for GQA)"
    elif kv_cache_dtype == "nvfp4_4over6" and not data_center_blackwell(hw.architecture):
        why = f"its scale search runs only in TRT-LLM attention on compute capability 10.x (B200/B300), not {hw.name}"
    elif not data_center_blackwell(hw.architecture) and model.head_dim == 64:
        why = f"FlashInfer's FA2 prefill misreads it at head size 64 ({model.name}) on {hw.name}"
    if why:
        raise InputError(f"--kv-cache-dtype {kv_cache_dtype}: {why} (vLLM 0.32)")
