"""A review deployment with `method = "compare"` (advisor/review/evaluate.py `compared`): one deployment per method
that applies to its target, each sized like any other; a measured acceptance cannot stand for all of them."""

import pytest

from advisor.advice.comparison import candidates
from advisor.errors import InputError
from advisor.profiles.catalog import load_model
from advisor.review.evaluate import review
from advisor.review.plan import load_plan

PLAN = """
[[workload]]
name = "chat"
rate = 2.0
prompt = {{ mean = 800 }}
output = {{ mean = 200 }}
acceptance = {acceptance}
slo = {{ ttft_ms = 2000, tpot_ms = 40 }}

[[deployment]]
name = "pro6000"
gpu = "rtx-pro-6000-blackwell"
count = 2
target = "vicuna-7b-v1.3"
method = "compare"
"""


def test_every_method_is_a_deployment_of_its_own(tmp_path):
    path = tmp_path / "plan.toml"
    path.write_text(PLAN.format(acceptance='{ task = "chat" }'))
    r = review(load_plan(path), path)
    wanted = candidates(load_model("vicuna-7b-v1.3"))
    assert [d.method for d in r.plan.deployment] == [m for m, _ in wanted]
    assert len(r.cells) == len(wanted) and all(c.deployment.startswith("pro6000: ") for c in r.cells)
    assert {c.recommendation for c in r.cells} <= {"enable", "marginal", "disable"}
    ngram = r.cell("chat", "pro6000: ngram_gpu")
    assert ngram.base is not None and ngram.base.gpus is not None  # sized as any deployment is


def test_a_measured_acceptance_is_refused_with_compare(tmp_path):
    path = tmp_path / "plan.toml"
    path.write_text(PLAN.format(acceptance="{ alpha = 0.7 }"))
    with pytest.raises(InputError, match="task prior"):
        review(load_plan(path), path)
