"""The review's document: its advice line gives each interval at the k it was taken at."""

from advisor.render.review_document import blocks
from advisor.review.evaluate import review
from advisor.review.plan import Plan

# α 0.05: the advice leaves speculation off (k = 0), and its interval is k = 1's (what turning it on would give)
POOR = Plan.model_validate({
    "workload": [dict(name="poor", rate=1.0, prompt={"mean": 1000}, output={"mean": 300}, acceptance={"alpha": 0.05},
                      slo={"ttft_ms": 5000, "tpot_ms": 200})],
    "deployment": [dict(name="one", gpu="h100-sxm", count=2, target="llama-3.1-8b-instruct",
                        draft="llama-3.2-1b-instruct")]})


def test_an_advice_left_off_says_its_interval_is_at_k_1(tmp_path):
    r = review(POOR, source=tmp_path / "plan.toml")
    a = r.cells[0].advice
    assert a.best_k == 0 and a.per_k[1].fits
    line = next(item for kind, *rest in blocks(r, {}) if kind == "ul" for item in rest[0]
                if item.startswith("at the planned load"))
    assert f"disable, k=0, at k=1 end-to-end {a.per_k[1].e2e_speedup:.2f}x ({a.per_k[1].e2e_low:.2f}-" in line, line
