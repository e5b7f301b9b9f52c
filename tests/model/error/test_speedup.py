"""advisor/model/error/speedup.py: a speedup's spread by target class, and what no published run supports."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.model.error.speedup import CLASSES, NEIGHBOURS, UNPUBLISHED, SpeedupSpread, model_class, spread_for
from advisor.profiles.catalog import load_model

SPREAD = SpeedupSpread(sigma={"dense": 0.1, "moe": 0.2, "hybrid": 0.4}, borrowed={c: None for c in CLASSES},
                       widest=0.4, classes_seen=("dense", "moe"), methods_seen=("draft_model", "eagle", "mtp"),
                       median_error={c: 0.1 for c in CLASSES}, rows={c: 8 for c in CLASSES})


@pytest.mark.parametrize("name, cls", [("llama-3.1-8b-instruct", "dense"), ("qwen3-30b-a3b", "moe"),
                                       ("qwen3.5-27b", "hybrid"), ("qwen3-next-80b-a3b-instruct", "hybrid"),
                                       ("deepseek-v3", "moe")])
def test_a_targets_class_is_hybrid_before_moe_before_dense(name, cls):
    assert model_class(load_model(name)) == cls


def test_the_neighbours_are_one_step_apart_both_ways():
    assert all(c in NEIGHBOURS[n] for c in CLASSES for n in NEIGHBOURS[c])


@given(st.sampled_from(CLASSES), st.sampled_from(("draft_model", "eagle", "eagle3", "mtp", "ngram", "suffix")))
def test_a_kind_no_published_run_measured_takes_the_widest_spread_and_says_so(cls, method):
    sigma, line = spread_for(SPREAD, cls, method)
    unseen = cls not in SPREAD.classes_seen or method not in SPREAD.methods_seen
    assert line.startswith(UNPUBLISHED) == unseen
    assert sigma == (SPREAD.widest if unseen else SPREAD.sigma[cls])
    assert sigma <= SPREAD.widest


def test_a_spread_wider_than_its_widest_is_refused():
    with pytest.raises(ValueError):
        SpeedupSpread(sigma={"dense": 0.5, "moe": 0.2, "hybrid": 0.4}, borrowed={}, widest=0.4, classes_seen=(),
                      methods_seen=(), median_error={}, rows={})
