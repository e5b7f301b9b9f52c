"""The calibration grid: valid shapes for vLLM, held-out points inside the range, and the time budget."""

import pytest

from advisor.model.cost.enginecost import EngineCost
from advisor.profiles.catalog import load_hardware
from calibration.calibrate import bench
from calibration.calibrate.grid import Grid, describe, fittable, shrink_to_budget


@pytest.fixture(scope="module")
def pair(llama8b, llama1b):
    return {"target": llama8b, "draft": llama1b}


def test_grid_shapes_are_valid_for_the_engine():
    points = Grid(max_batch=64, max_context=4096, max_k=7, dummy_weights=True, seed=0).points("target")
    assert {p.kind for p in points} == set(bench.KINDS)
    assert all(p.context % bench.PLAN_BLOCK == 0 for p in points)  # whole KV blocks: prefix-cache hits are exact
    assert all(p.batch * p.new_tokens <= bench.PLAN_CHUNK for p in points if p.kind != "decode")  # one step each
    assert {p.new_tokens for p in points if p.kind == "verify"} >= {1, 2, 8}  # q = 1 .. k+1 measured, not assumed
    assert max(p.batch for p in points) == 64 and max(p.context for p in points) == 4096


@pytest.mark.parametrize("max_k", [1, 2, 3, 4, 7])
def test_a_gpu_grid_times_no_verification_wider_than_max_k_plus_one(max_k):
    """On a GPU each verification width of the target is one engine start (15-75 s): the grid keeps the widths a
    speculative step of at most max_k drafts verifies; a CPU grid, timed in one engine, keeps its q = 5 beside them."""
    def widths(**flags):
        grid = Grid(max_batch=16, max_context=1024, max_k=max_k, dummy_weights=True, seed=0, **flags)
        return {p.new_tokens for p in grid.points("target") if p.kind == "verify"}

    gpu, cpu = widths(uniform_verify=True), widths()
    assert max(gpu) == max_k + 1 and gpu == {q for q in cpu if q <= max_k + 1}
    assert 5 in cpu and {1, 2, max_k + 1} <= gpu


def test_held_out_points_cover_every_kind_and_lie_inside_the_range():
    points = Grid(max_batch=16, max_context=1024, max_k=7, dummy_weights=True, seed=0).points("target")
    held = bench.held_out(points)
    assert 0.15 < sum(held) / len(points) < 0.35
    for kind in bench.KINDS:
        mine = [p for p, h in zip(points, held) if p.kind == kind]
        out = [p for p, h in zip(points, held) if p.kind == kind and h]
        assert out and mine[0] not in out  # the smallest shape of each kind is always fitted


def test_default_grid_for_8b_and_1b_fits_two_minutes_on_an_h100(pair):
    cost = EngineCost.from_datasheet(load_hardware("h100-sxm"))
    grid, seconds = shrink_to_budget(Grid(64, 4096, 7, True, 0), pair, cost, 3, 120.0)
    assert seconds < 120.0
    assert grid.max_batch == 64 and grid.max_context == 4096  # the full default grid fits: nothing shrunk


def test_a_tight_budget_shrinks_the_grid_until_it_fits(pair):
    cost = EngineCost.from_datasheet(load_hardware("l4"))
    full = Grid(64, 4096, 7, True, 0)
    grid, seconds = shrink_to_budget(full, pair, cost, 3, 30.0)
    assert seconds <= 30.0 < full.estimate(pair, cost, 3)
    assert grid.max_context < 4096 or grid.max_batch < 64
    assert "about" in describe(grid, pair, seconds, 3, 20.0, "the l4 datasheet")


def test_the_estimate_counts_each_model_at_least_its_minimum_time(pair):
    cost = EngineCost.from_datasheet(load_hardware("h100-sxm"))
    grid = Grid(4, 256, 3, True, 0)
    alone = {role: grid.estimate({role: spec}, cost, 3) for role, spec in pair.items()}
    assert max(alone.values()) < 20.0  # a grid this small takes under the floor on an H100
    assert grid.estimate(pair, cost, 3, min_seconds=20.0) == 20.0 * len(pair)
    assert grid.estimate(pair, cost, 3, min_seconds=0.0) == sum(alone.values())


def test_decode_points_are_predicted_at_their_mean_context(llama8b):
    cost = EngineCost.from_datasheet(load_hardware("h100-sxm"))
    decode, verify = bench.Point("decode", 4, 1, 1024), bench.Point("verify", 4, 1, 1024)
    d, v = bench.predict(llama8b, cost, [decode, verify], 8192)
    assert d > v  # decode's steps run at contexts L+1 .. L+steps, past the verify step's L
    assert decode.model_context() == pytest.approx(1024 + 1 + (bench.DECODE_STEPS - 1) / 2)


def test_points_reject_impossible_shapes():
    with pytest.raises(ValueError):
        bench.Point("decode", 0, 1, 128)
    with pytest.raises(ValueError):
        bench.Point("sample", 1, 1, 128)


def test_no_budget_shrinks_a_grid_below_what_the_fit_needs(pair):
    """A 1 s budget cannot be met; the grid stops shrinking where the draft still has 2 points per unknown
    (at 256 tokens of context on a CPU the draft's grid had 14 for 16 and its calibration was refused)."""
    cost = EngineCost.from_datasheet(load_hardware("l4"))
    grid, seconds = shrink_to_budget(Grid(16, 1024, 7, True, 0), pair, cost, 5, 1.0)
    assert fittable(grid, pair) and seconds > 1.0
    assert not fittable(Grid(16, 256, 7, True, 0), pair)
    assert (grid.max_batch, grid.max_context) == (16, 512)
