"""The advisor at scale against the per-GPU decode throughput rows of scale-notes.md §2.4 whose setup it can
express (no MTP in any of them: k = 0, the baseline speculation is compared against). Nothing is fitted to these
rows: the all-to-all link is fitted to DeepEP's kernel table only (`advisor.model.scale.DEEPEP_LL`), the GPUs'
rates are their datasheet defaults, so every row is held out. `python benchmarks/scale_rows.py` prints the table
that docs/scale.md quotes."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.model.deployment import Deployment  # noqa: E402
from advisor.scale_advise import advise_scale  # noqa: E402
from tests.scale_scenarios import scenario  # noqa: E402

# (row, source, gpu, EP = DP ranks, nodes, requests per rank, prompt, output, DBO, published decode tok/s/GPU)
ROWS = [
    ("6a", "vLLM 2025-12-17 (llm-d), H200 EP32", "h200", 32, 4, 256, 2000, 2000, True, 2180),
    ("6b", "vLLM 2025-12-17 (llm-d), H200 EP72", "h200", 72, 9, 256, 2000, 2000, True, 2070),
    ("6c", "vLLM 2025-12-17 (llm-d), H200 EP96", "h200", 96, 12, 256, 2000, 2000, True, 1970),
    ("2", "SGLang 2025-05-05, H100 EP72, TBO", "h100-sxm", 72, 9, 256, 2000, 100, True, 2785),
    ("1", "DeepSeek day 6, H800 EP144", "h800", 144, 18, 128, 4989, 2, True, 1850),
]


def predict(gpu, ranks, nodes, per_rank, prompt, out, dbo) -> float:
    """Decode tok/s per GPU at k = 0 of a PD decode pool, DeepEP low-latency, its token cap raised to the batch."""
    s = scenario(gpu=gpu, batch=ranks * per_rank, prompt_len=prompt, out_len=out)
    d = Deployment(data_parallel_size=ranks, enable_expert_parallel=True, nodes=nodes, disaggregated=True,
                   all2all_backend="deepep_low_latency", enable_dbo=dbo, max_num_batched_tokens=max(per_rank, 256))
    return advise_scale(s, d).row(0).decode_tokens_per_gpu


def table() -> tuple[list[str], float]:
    lines = ["| # | source | published tok/s/GPU | predicted | error |", "|---|---|---:|---:|---:|"]
    errors = []
    for row, source, gpu, ranks, nodes, per_rank, prompt, out, dbo, published in ROWS:
        got = predict(gpu, ranks, nodes, per_rank, prompt, out, dbo)
        errors.append(abs(got / published - 1))
        lines.append(f"| {row} | {source} | {published:,} | {got:,.0f} | {got / published - 1:+.0%} |")
    return lines, statistics.median(errors)


if __name__ == "__main__":
    found, median = table()
    print("\n".join(found))
    print(f"\nmedian absolute error {median:.0%}")
