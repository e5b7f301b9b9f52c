"""The review's pictures (advisor/render/review_plots.py): each latency curve marks the load the plan puts on one
replica, inside the drawn range."""

from pathlib import Path

import pytest

from advisor.render.review_plots import curves_figure
from advisor.review.evaluate import review
from advisor.review.plan import load_plan

PLAN = Path(__file__).resolve().parents[2] / "profiles/plans/code-assistant.toml"


@pytest.fixture(scope="module")
def example():
    return review(load_plan(str(PLAN)), PLAN)


def test_every_curve_marks_the_planned_load_per_replica(example):
    fig = curves_figure(example)
    panels = iter(fig.axes)
    marked = 0
    for w in example.plan.workload:
        for d in example.plan.deployment:
            ax = next(panels)
            if example.cell(w.name, d.name).base is None:
                continue  # the pair could not be evaluated: its panel says why instead
            load = w.rate / (d.count // d.tensor_parallel)
            assert [line.get_xdata()[0] for line in ax.lines if line.get_linestyle() == "-."] == [load]
            assert ax.get_xlim()[1] > load
            assert any(t.get_text() == f" planned {load:.2g} req/s" for t in ax.texts)
            marked += 1
    assert marked >= 5  # the example plan's pairs are mostly servable
