"""Speed of the core, run by hand (never in CI): `python benchmarks/bench_core.py`.

1. Cold start: wall time of a fresh `specadvisor recommend --prompt-len 8000 --out-len 200` process (target < 0.5 s).
2. Vectorized API: (α, k, B, L) configurations per second through `tpot_speedup_alpha` (target ≥ 1,000,000/s), for
   unbounded outputs and for 200-token ones (the exact step count of `advisor.model.acceptance.truncation` on every (α,
   k)).
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from advisor.advice.resolve import build_scenario


def cold_start(runs: int = 15) -> list[float]:
    exe = shutil.which("specadvisor") or str(Path(sys.executable).parent / "specadvisor")
    cmd = [exe, "recommend", "--prompt-len", "8000", "--out-len", "200"]
    subprocess.run(cmd, check=True, capture_output=True)  # warm the OS file cache once
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return times


def grid_throughput(decode_tokens=None, repeats: int = 5) -> tuple[int, float]:
    from advisor.model.cost.speculative import tpot_speedup_alpha

    setup = build_scenario(prompt_len=8000, out_len=200).setup
    alpha = np.linspace(0.0, 1.0, 101)[:, None, None, None]
    k = np.arange(1, 17)[None, :, None, None]
    batch = np.geomspace(1, 512, 25)[None, None, :, None]
    context = np.geomspace(128, 131072, 25)[None, None, None, :]
    configs = alpha.size * k.size * batch.size * context.size
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        out = tpot_speedup_alpha(setup, alpha, k, batch, context, decode_tokens)
        best = min(best, time.perf_counter() - start)
    assert out.size == configs
    return configs, best


if __name__ == "__main__":
    times = cold_start()
    print(f"cold start `specadvisor recommend --prompt-len 8000 --out-len 200`: "
          f"min {min(times):.3f} s, median {statistics.median(times):.3f} s, max {max(times):.3f} s over {len(times)} runs")
    for decode_tokens, outputs in ((None, "unbounded outputs"), (199, "200-token outputs")):
        configs, seconds = grid_throughput(decode_tokens)
        print(f"vectorized tpot_speedup_alpha, {outputs}: {configs:,} (α, k, B, L) configurations in "
              f"{seconds * 1e3:.1f} ms = {configs / seconds / 1e6:.2f} M configurations/s (best of 5)")
