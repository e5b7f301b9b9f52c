"""The per-draft slope (what one more draft token adds to a speculative step at batch 1) on the datasheet path,
against every published row that has one (../shared/reference/gpu-measurements.md §1, §6, §7; issue 33 item 4).

    python benchmarks/draft_slope.py

Prints one line per row: published ms, predicted ms, error. Rows the model cannot express are listed with why.
"""

from __future__ import annotations

from dataclasses import replace

from advisor.model.cost.enginecost import EngineCost
from advisor.model.cost.speculative import Setup
from advisor.profiles.catalog import load_hardware, load_model

# §1: EAGLE proposal (all of a step's draft passes), s, at N_kv = B·512 (InstructCoder), N_spec = B·k
L_IC = 512
EAGLE_PROPOSAL_S = {1: 2.37768493e-9 * L_IC + 8.41429603e-7 * 3 + 2.13526175e-3,
                    32: 2.37768493e-9 * 32 * L_IC + 8.41429603e-7 * 96 + 2.13526175e-3}
# §7: DeepSeek-R1 on 8×B200 (TensorRT-LLM), ms per verify step at MTP k = 0..5 (AL / tok/s per user)
DSR1_STEP_MS = (9.01, 9.70, 10.32, 11.15, 12.20, 12.59)
DSR1_CONTEXT = 1024 + 1024  # ISL 1K, OSL 2K: mean context

NOT_EXPRESSED = (
    ("§6 Qwen3.6-27B MTP k = 1-3 on a Radeon 8060S (vLLM 0.26 ROCm): ~14.5 ms per draft on a 92 ms step",
     "no RDNA 3.5 (gfx1151) hardware profile or architecture family"),
    ("§6 Qwen3-8B + EAGLE-3 trees (SGLang): steps 4 -> 8 at 16 draft tokens", "trees, and no acceptance length"),
    ("§6 DeepSeek-V4-Flash MTP k = 2 (4×B200)", "one k only, and no profile of its architecture"),
    ("§7 Inkling, 8 MTP heads on 4×GB200: 7.14 -> 11.84 ms (0.59 ms per draft)", "no profile of its architecture"),
)


def eagle_rows() -> list[tuple[str, float, float]]:
    """§1: EAGLE-1 on Llama-3.1-8B, one H100, vLLM 0.10.1 (V1 runner: synchronous, piecewise drafts), k = 3: the
    proposal's time per draft pass."""
    hw, target, head = load_hardware("h100-sxm"), load_model("llama-3.1-8b-instruct"), load_model(
        "eagle-llama3.1-instruct-8b")
    cost = EngineCost.from_datasheet(hw)
    setup = Setup(target, cost, "eagle", head, cost, async_scheduling=False, drafter_graphs=False)
    return [(f"§1 EAGLE-1 proposal per pass, k = 3, B = {b} (H100, vLLM 0.10.1)", published * 1e3 / 3,
             float(setup.draft_time(3, b, L_IC)) * 1e3 / 3) for b, published in EAGLE_PROPOSAL_S.items()]


def eagle3_slopes() -> list[tuple[str, float]]:
    """EAGLE-3 on Llama-3.1-8B, one H100, batch 1, context 1024: ms per extra draft (k = 3 -> 4) under vLLM 0.32
    and under the V1 runner. No published row in the reference; the issue quotes ~1 ms from runs it holds out."""
    hw, target = load_hardware("h100-sxm"), load_model("llama-3.1-8b-instruct")
    head, cost = load_model("eagle3-llama3.1-instruct-8b"), EngineCost.from_datasheet(hw)
    out = []
    for label, graphs, overlap in (("vLLM 0.32", None, None), ("V1 runner", False, False)):
        setup = Setup(target, cost, "eagle3", head, cost, async_scheduling=overlap, drafter_graphs=graphs)
        slope = float(setup.iteration_time(4, 1, 1024) - setup.iteration_time(3, 1, 1024)) * 1e3
        out.append((f"EAGLE-3 per extra draft, H100, {label}", slope))
    return out


def dsr1_rows() -> list[tuple[str, float, float]]:
    """§7: DeepSeek-R1 (NVFP4 MoE, BF16 attention and MTP) on 8×B200, TensorRT-LLM priced as vLLM 0.32 (full
    graphs, async), TP8: what each MTP draft adds to the verify step, k-1 -> k."""
    target = load_model("deepseek-v3")  # R1's architecture
    target = replace(target, name="DeepSeek-R1 NVFP4", unquantized=tuple(sorted({*target.unquantized, "attention"})))
    hw = load_hardware("b200")
    setup = Setup(target, EngineCost.from_datasheet(hw, "nvfp4"), "mtp", target.mtp_draft(),
                  EngineCost.from_datasheet(hw, "bf16"), tp=8)
    steps = [float(setup.iteration_time(k, 1, DSR1_CONTEXT)) * 1e3 for k in range(len(DSR1_STEP_MS))]
    rows = [(f"§7 DeepSeek-R1 MTP k = {k - 1} -> {k} (8×B200)", DSR1_STEP_MS[k] - DSR1_STEP_MS[k - 1],
             steps[k] - steps[k - 1]) for k in range(1, len(DSR1_STEP_MS))]
    n = len(DSR1_STEP_MS) - 1
    rows.append(("§7 DeepSeek-R1 MTP mean per draft, k = 0 -> 5", (DSR1_STEP_MS[-1] - DSR1_STEP_MS[0]) / n,
                 (steps[-1] - steps[0]) / n))
    return rows


def main() -> int:
    print("| row | published ms | predicted ms | error |\n|---|---|---|---|")
    for what, published, predicted in eagle_rows() + dsr1_rows():
        print(f"| {what} | {published:.3f} | {predicted:.3f} | {predicted / published - 1:+.0%} |")
    for what, slope in eagle3_slopes():
        print(f"| {what} (issue 33: ~1 ms published) | | {slope:.3f} | |")
    print("\nNot expressed:")
    for what, why in NOT_EXPRESSED:
        print(f"- {what}: {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
