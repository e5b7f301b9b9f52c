"""A draft timed on a GPU, fitted as vLLM 0.32's Model Runner V2 runs a draft model: without CUDA graphs.

`StandaloneARSpeculator` runs every pass of a separate draft model eagerly (v1/worker/gpu/spec_decode/standalone_ar/
speculator.py `_run_model`: cudagraph_runtime_mode NONE), so calibrate times the draft in an engine with
cudagraph_mode NONE (calibration/calibrate/measure.py `engine_jobs`). Each of that engine's steps is the engine's own
work (scheduling, inputs, sampling, output processing) and one eager pass. In a speculative step the engine's work
is paid once, in the target's step, and the pass k times (advisor.model.cost.costmodel `draft_pass`): so the draft's
fit holds its step overhead at the engine's (`engine_step`) and solves for the pass's host work beyond its kernels'
floors, `draft_pass_overhead`, instead (`eager_grid`). A one-layer draft's steps are mostly that pass.
"""

from __future__ import annotations

from advisor.model.cost.enginecost import DEFAULT_HOST_STEP_S, calibrated_fields

PASS = next(f for f in calibrated_fields() if f.name == "draft_pass_overhead")  # what an eager draft's fit solves for
# why an eager draft's fit holds its step overhead
ENGINE_STEP = ("held at the engine's own step, the target's (at least vLLM's scheduler's): a speculative step pays "
               "it once; the draft's eager steps pay it and one pass, whose rest is draft_pass_overhead (high by any "
               "engine work the target's steps hide under their GPU time)")


def eager_steps(role: str, points, cpu: bool) -> bool:
    """Whether a model's measured points are a draft's eager steps on a GPU: every one ran with graph mode NONE."""
    return role == "draft" and not cpu and all(m.graph_mode == "NONE" for m in points)


def eager_grid(grid: tuple) -> tuple:
    """`grid` (fitted fields) for an eager draft: the per-step constant it solves for is the pass's."""
    return tuple(PASS if f.name == "step_overhead" else f for f in grid)


def engine_step(target_fit) -> float:
    """Seconds of the engine's own work per step beside a pass: what the target's steps show beyond their graphs
    (its fitted step_overhead; None: no fit), and at least what vLLM's scheduler alone takes (DEFAULT_HOST_STEP_S).
    One vLLM on one host runs both engines, sampling the same vocabulary (draft_model requires it:
    vllm/config/speculative.py)."""
    return max(0.0 if target_fit is None else float(target_fit.step_overhead), DEFAULT_HOST_STEP_S)
