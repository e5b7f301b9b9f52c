"""The kernels the cost model prices, timed with torch alone (no vLLM), beside what the model assumes for this GPU:
GEMMs by rows (1 to 8192 tokens) at Llama-3.1-8B's weight shapes and at one Qwen3-30B-A3B expert's, a grouped GEMM
over few tokens per expert (every expert of a MoE layer, as a verification step touches them), and the small-kernel
floor (an RMSNorm, a rotary embedding). For a GPU machine with torch and Triton but no vLLM, where gpu_smoke.sh cannot
run; about a minute on one GPU.
    python benchmarks/gpu_kernels.py                       (CUDA: the GPU's hardware profile found by its name)
    python benchmarks/gpu_kernels.py --smoke --gpu h100-sxm (tiny sizes on the CPU: that it runs, not what it reads)
The model column is the advisor's own arithmetic on the datasheet costs (EngineCost.from_datasheet): a GEMM streams
its weights and runs its FLOPs under the p-norm of advisor.model.cost.costmodel.forward_pass; a grouped GEMM is bounded
below by the MoE kernel floor; a small kernel takes layer_floor_graph / DENSE_LAYER_KERNELS. A pass's other costs
(attention, the all-reduce, the host) are not here.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import torch

from advisor.model.cost.costmodel import pnorm
from advisor.model.cost.enginecost import EngineCost
from advisor.model.gpu.kernels import DENSE_LAYER_KERNELS
from advisor.profiles.catalog import load_hardware, load_model
from advisor.profiles.localgpu import match_profile

DENSE, MOE = "llama-3.1-8b-instruct", "qwen3-30b-a3b"
ROWS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
SMOKE_ROWS = (1, 4, 16)
TOKENS_PER_EXPERT = (1, 2, 4, 8)


@dataclass(frozen=True, slots=True)
class Row:
    """One timed kernel and the model's time for it."""

    kernel: str  # what ran, with its shape
    measured_s: float  # median seconds per call
    model_s: float  # the cost model's seconds for it


def gemm_shapes(smoke: bool) -> dict[str, tuple[int, int]]:
    """(K, N) of the weight matrices timed, from the shipped model profiles (tiny stand-ins with --smoke)."""
    if smoke:
        return {"tiny qkv": (64, 96), "tiny expert gate_up": (32, 48)}
    dense, moe = load_model(DENSE), load_model(MOE)
    h, kv = dense.hidden_size, dense.num_kv_heads * dense.head_dim
    return {"8B qkv_proj": (h, dense.num_heads * dense.head_dim + 2 * kv), "8B o_proj": (h, h),
            "8B gate_up_proj": (h, 2 * dense.intermediate_size), "8B down_proj": (dense.intermediate_size, h),
            "MoE expert gate_up": (moe.hidden_size, 2 * moe.intermediate_size),
            "MoE expert down": (moe.intermediate_size, moe.hidden_size)}


def timed(call, device: torch.device, repeats: int) -> float:
    """Median seconds of `call` over `repeats` runs after two warm-ups (CUDA events on a GPU)."""
    for _ in range(2):
        call()
    samples = []
    for _ in range(repeats):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            torch.cuda.synchronize()
            samples.append(start.elapsed_time(end) / 1e3)
        else:
            began = time.perf_counter()
            call()
            samples.append(time.perf_counter() - began)
    return sorted(samples)[len(samples) // 2]


def gemm_model(cost: EngineCost, rows: float, k: int, n: int, element_bytes: int) -> float:
    """The model's GEMM: its weights streamed at the bandwidth and its 2·rows·K·N FLOPs, combined by the p-norm."""
    return float(pnorm(k * n * element_bytes / cost.bandwidth, 2.0 * rows * k * n / cost.flops,
                       cost.overlap_exponent))


def measure(cost: EngineCost, device: torch.device, dtype: torch.dtype, smoke: bool, repeats: int) -> list[Row]:
    rows_out, size = [], torch.tensor([], dtype=dtype).element_size()
    for name, (k, n) in gemm_shapes(smoke).items():
        weight = torch.randn(k, n, device=device, dtype=dtype)
        for rows in SMOKE_ROWS if smoke else ROWS:
            x = torch.randn(rows, k, device=device, dtype=dtype)
            rows_out.append(Row(f"GEMM {name} {rows}x{k}x{n}", timed(lambda: x @ weight, device, repeats),
                                gemm_model(cost, rows, k, n, size)))
    moe = load_model(MOE)
    experts = 4 if smoke else moe.num_experts
    k, n = (32, 48) if smoke else (moe.hidden_size, 2 * moe.intermediate_size)
    weights = torch.randn(experts, k, n, device=device, dtype=dtype)
    for per_expert in TOKENS_PER_EXPERT:
        x = torch.randn(experts, per_expert, k, device=device, dtype=dtype)
        model = pnorm(gemm_model(cost, experts * per_expert, k, n * experts, size), cost.moe_kernel_floor,
                      cost.floor_exponent)
        rows_out.append(Row(f"grouped GEMM {experts} experts x {per_expert} tokens, {k}x{n}",
                            timed(lambda: torch.bmm(x, weights), device, repeats), float(model)))
    hidden = 64 if smoke else load_model(DENSE).hidden_size
    floor = cost.layer_floor_graph / DENSE_LAYER_KERNELS
    for tokens in (1, 64):
        x = torch.randn(tokens, hidden, device=device, dtype=dtype)
        gamma = torch.ones(hidden, device=device, dtype=dtype)
        rows_out.append(Row(f"RMSNorm {tokens}x{hidden}", timed(lambda: torch.nn.functional.rms_norm(
            x, (hidden,), gamma, 1e-6), device, repeats), floor))
        cos, sin = torch.randn(tokens, hidden // 2, device=device, dtype=dtype), torch.randn(
            tokens, hidden // 2, device=device, dtype=dtype)

        def rotary(x=x, cos=cos, sin=sin):
            a, b = x[..., ::2], x[..., 1::2]
            return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)
        rows_out.append(Row(f"rotary {tokens}x{hidden}", timed(rotary, device, repeats), floor))
    return rows_out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes on the CPU: checks that it runs")
    parser.add_argument("--gpu", help="hardware profile for the model column (default: the CUDA GPU's, by its name)")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)
    cuda = torch.cuda.is_available() and not args.smoke
    if not cuda and not args.gpu:
        parser.error("no CUDA GPU here: give --gpu PROFILE for the model column (and --smoke on a CPU)")
    device = torch.device("cuda" if cuda else "cpu")
    name = torch.cuda.get_device_name(0) if cuda else "the CPU"
    slug = args.gpu or match_profile(name, torch.cuda.get_device_properties(0).total_memory)
    cost = EngineCost.from_datasheet(load_hardware(slug))
    dtype = torch.bfloat16 if cuda else torch.float32
    print(f"kernels on {name} (torch {torch.__version__}, {str(dtype).removeprefix('torch.')}); the model: {slug}'s "
          f"datasheet costs ({cost.bandwidth / 1e9:.0f} GB/s, {cost.flops / 1e12:.0f} TFLOP/s effective)")
    print(f"{'kernel':<58} {'measured us':>12} {'model us':>10} {'ratio':>6}")
    for row in measure(cost, device, dtype, args.smoke, args.repeats):
        print(f"{row.kernel:<58} {row.measured_s * 1e6:>12.4g} {row.model_s * 1e6:>10.4g} "
              f"{row.measured_s / row.model_s:>6.3g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
