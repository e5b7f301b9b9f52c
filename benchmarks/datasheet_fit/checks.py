"""The checks the report prints beside the rows: issue 13's on one H100 with Llama-3.1-8B, §5's depth-vs-size
draft, the curve of compute that decode hides, the best k by batch, and what sets S8 and S4 apart."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from advisor.model.acceptance.conventions import expected_tokens
from advisor.model.cost import enginecost as ec
from advisor.model.cost.costmodel import draft_pass, step_time
from advisor.model.cost.enginecost import EngineCost
from advisor.model.cost.speculative import Setup
from advisor.model.gpu.kernels import kernels_per_pass
from advisor.profiles.catalog import load_model

from .params import engine_cost
from .sources import (
    A100_80,
    B200,
    B300,
    B300_TOK_S,
    D1,
    DFLASH_B200,
    DSV3,
    DSV32,
    E3,
    E8,
    F_PER_TOKEN_S,
    H100,
    L_IC,
    MI300X,
    MI300X_MTP,
    T8,
    f_eagle,
    f_target,
)


def checks(v: dict) -> dict[str, tuple[float, float, str]]:
    """(predicted, reference, what the reference is) for the three H100 checks."""
    c = engine_cost(H100, v)
    eagle = Setup(T8, c, "eagle", E8, c, drafter_graphs=False)  # §1 measured the V1 runner: piecewise
    decode = float(eagle.decode_step(1, L_IC))
    ratio = float(draft_pass(D1, c, 1, 1, L_IC) / decode)
    kv = 8 * L_IC  # N_kv held fixed, as §1 separates it: 8 sequences x 512 tokens, N = 8 -> 256
    slope = float(step_time(T8, c, 8, 32, kv / 8) - step_time(T8, c, 8, 1, kv / 8)) / 248
    return {"(i) EAGLE proposal, k = 3, B = 1 [ms]": (float(eagle.draft_time(3, 1, L_IC)) * 1e3,
                                                       f_eagle(L_IC, 3) * 1e3, "§1 formula; within 25%"),
            "(ii) Llama-3.2-1B pass / Llama-3.1-8B step": (ratio, 0.375, "published ~37.5%; 30-45%"),
            "(iii) per batched token, N = 8 -> 256 at fixed N_kv [µs]": (slope * 1e6, F_PER_TOKEN_S * 1e6,
                                                                           "§1 formula; within 25%")}


def overlap_curve(v: dict) -> list[tuple[int, float, float]]:
    """(N, §1 formula, model) in ms: the 8B target step on one H100 at N_kv = 4096 (8 sequences × 512), N = 1..1024."""
    c = engine_cost(H100, v)
    out = []
    for n in (1, 2, 4, 8, 16, 32, 64, 128, 192, 256, 384, 512, 768, 1024):
        b = min(n, 8)
        out.append((n, f_target(4096, n) * 1e3, float(step_time(T8, c, b, n / b, 4096 / b)) * 1e3))
    return out


def best_k_by_batch(v: dict, alpha: float = 0.8, context: int = 1024) -> list[tuple[int, int, float]]:
    """(batch, best k in 0..8, its TPOT speedup): an EAGLE-3 head on Llama-3.1-8B, H100, i.i.d. α."""
    c = engine_cost(H100, v)
    s = Setup(T8, c, "eagle", E3, c)
    out = []
    for b in (1, 8, 16, 32, 64, 128, 256, 512):
        speed = [1.0] + [float(s.decode_step(b, context) * expected_tokens(alpha, k) / s.iteration_time(k, b, context))
                         for k in range(1, 9)]
        out.append((b, int(np.argmax(speed)), max(speed)))
    return out


def yan_check(v: dict) -> tuple[float, float]:
    """§5: a 5-layer 4096-wide 796M draft's pass vs a 24-layer 2048-wide 1.3B draft's, on H100 and A100 (latency
    change; published -49%). Shapes assumed: OPT's vocabulary (50272); the 1.3B as OPT-1.3B (12 h² a layer), the
    796M with an MLP of width h (7 h² a layer)."""
    wide = replace(D1, name="5L-4096", vocab_size=50272, hidden_size=4096, num_layers=5, num_heads=32,
                   num_kv_heads=32, head_dim=128, intermediate_size=4096, tied_embeddings=False)
    deep = replace(D1, name="24L-2048", vocab_size=50272, hidden_size=2048, num_layers=24, num_heads=32,
                   num_kv_heads=32, head_dim=64, intermediate_size=4 * 2048 * 2 // 3, tied_embeddings=False)
    out = []
    for hw in (H100, A100_80):
        c = engine_cost(hw, v)
        out.append(float(draft_pass(wide, c, 1, 1, 512) / draft_pass(deep, c, 1, 1, 512)) - 1.0)
    return out[0], out[1]


def _jump(m: float) -> str:
    """What decode step 513 costs over step 512 (past the CUDA-graph capture size) for Llama-3.3-70B on 4 H100s."""
    c = replace(EngineCost.from_datasheet(H100), floor_exponent=m)
    big = load_model("llama-3.3-70b-instruct")
    before, after = (float(step_time(big, c, b, 1, 1000, tp=4)) for b in (512, 513))
    return f"+{(after - before) * 1e3:.1f} ms on a {before * 1e3:.0f} ms step"


def islands() -> tuple[list[tuple], tuple[float, float], tuple[float, float, float]]:
    """What sets S8 and S4 apart, from their own published numbers: (per-layer rows for S8 and S9, each priced from
    the other's time per kernel, S4's step growth). A row: (source, setup, ms per output token, µs per layer, µs of
    weight streaming per layer at the datasheet's peak, small and MoE kernels per layer (`kernels.kernels_per_pass`),
    µs per kernel of the rest). S4: (µs a B200 SGLang step grows per added sequence, §1's µs per batched token on an
    H100 under vLLM, µs an 8B token's matmuls take at B200's datasheet peak x flops_efficiency)."""
    out = []
    for source, what, model, hw, per_token in [
            ("S8", "DeepSeek-V3, 8×MI300X, SGLang 0.4.10", DSV3, MI300X, MI300X_MTP[0][1] / 1024),
            ("S9", "DeepSeek-V3.2, 8×B300, vLLM", DSV32, B300, 1e3 / B300_TOK_S[0])]:
        layer = per_token / model.num_layers * 1e3
        weights = float(model.layer_weight_bytes_read(1, "fp8")) / model.num_layers / (8 * hw.bandwidth_bytes_per_s)
        weights *= 1e6
        kernels = sum(kernels_per_pass(model)) / model.layers_per_pass
        out.append((source, what, per_token, layer, weights, kernels, (layer - weights) / kernels))
    (_, _, _, l8, w8, k8, r8), (_, _, _, l9, w9, k9, r9) = out
    cross = ((w8 + k8 * r9) / l8 - 1, (w9 + k9 * r8) / l9 - 1)
    (b1, tps1), (b2, tps2) = DFLASH_B200[0], DFLASH_B200[-1]  # a step = concurrency / tok/s
    growth = (b2 / tps2 - b1 / tps1) / (b2 - b1) * 1e6
    compute = 2 * T8.active_params / (B200.peak_flops("bf16") * ec.DEFAULT_FLOPS_EFFICIENCY) * 1e6
    return out, cross, (growth, F_PER_TOKEN_S * 1e6, compute)

