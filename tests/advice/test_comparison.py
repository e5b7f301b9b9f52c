"""advisor/advice/comparison.py: which methods apply to a target, and the one rule that picks among them (issue 37)."""

import pytest

from advisor.advice.comparison import MethodRow, candidates, decide
from advisor.advice.recommendation_interval import Band
from advisor.profiles.catalog import load_model


def row(method: str, point: float, low: float, high: float, verdict: str = "enable",
        dominant: str = "acceptance") -> MethodRow:
    return MethodRow(method=method, draft=None, verdict=verdict, k=3, e2e=Band(point, low, high), memory_gb=0.0,
                     concurrency=10, fits=True, dominant=dominant, note="")


def test_the_catalog_drafters_of_the_family_heads_and_the_text_lookups_apply():
    found = candidates(load_model("llama-3.1-8b-instruct"))
    assert ("eagle", "eagle-llama3.1-instruct-8b") in found and ("eagle3", "eagle3-llama3.1-instruct-8b") in found
    assert ("draft_model", "llama-3.2-1b-instruct") in found
    assert [m for m, _ in found][-3:] == ["ngram", "ngram_gpu", "suffix"]
    assert "mtp" not in [m for m, _ in found]  # Llama has no MTP layers


def test_a_model_with_mtp_layers_compares_them():
    target = load_model("qwen3-next-80b-a3b-instruct")
    assert target.mtp_layers and ("mtp", None) in candidates(target)


def test_the_users_own_draft_joins_as_its_kind():
    found = candidates(load_model("vicuna-7b-v1.3"), "vicuna-68m")
    assert found.count(("draft_model", "vicuna-68m")) == 1


def test_an_interval_clear_of_the_runner_up_is_picked():
    c = decide([row("ngram", 1.3, 1.2, 1.4), row("eagle3", 2.0, 1.8, 2.2)], 100)
    assert c.decision == "pick" and c.picked == "eagle3" and c.rows[0].method == "eagle3" and not c.tied


def test_overlapping_intervals_tie_and_say_what_would_separate_them():
    c = decide([row("ngram", 1.8, 1.6, 1.95), row("eagle3", 2.0, 1.9, 2.2, dominant="cost model"),
                row("draft_model", 1.2, 1.1, 1.3)], 100)
    assert c.decision == "tie" and c.tied == ("eagle3", "ngram") and c.picked == "eagle3"
    assert "measuring acceptance" in c.separate and "ngram" in c.separate
    assert "specadvisor calibrate" in c.separate and "eagle3" in c.separate


@pytest.mark.parametrize("verdict", ["disable"])
def test_no_method_that_gains_leaves_speculation_off(verdict):
    c = decide([row("ngram", 0.9, 0.8, 1.0, verdict), row("eagle3", 0.95, 0.9, 1.0, verdict)], 100)
    assert c.decision == "off" and c.picked == ""


def test_a_method_that_does_not_gain_is_never_picked_over_one_that_does():
    c = decide([row("ngram", 1.3, 1.25, 1.4, "marginal"), row("eagle3", 1.5, 1.0, 2.0, "disable")], 100)
    assert c.decision == "pick" and c.picked == "ngram"
