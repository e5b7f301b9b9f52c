"""Acceptance far below published, and a head served under the wrong method: one line each, with likely causes."""

from advisor.model.acceptance.diagnosis import PairFacts, far_below, likely_causes, misserved_head

FACTS = PairFacts(method="eagle3", eagle3_head_as_eagle=False, target_quantized="", temperature=0.0,
                  published_temperature=0.0, prompt_len=1000, drafter_context=2048)


def test_a_measurement_inside_the_published_range_says_nothing():
    assert far_below(2.3, 3, 2.1, 2.9, "EAGLE-3 heads", "AL 2.20-2.80 at k=3", likely_causes(FACTS)) == ""


def test_far_below_names_the_range_and_the_usual_causes():
    line = far_below(1.05, 3, 2.12, 2.89, "EAGLE-3 heads", "AL 2.20-2.80 at k=3", likely_causes(FACTS))
    assert "\n" not in line
    assert "AL 1.05 at k=3 against 2.12-2.89 for EAGLE-3 heads" in line and "published AL 2.20-2.80 at k=3" in line
    for cause in ("method eagle", "chat template", "quantized target", "training context"):
        assert cause in line


def test_the_pairs_own_facts_come_first_said_as_found():
    facts = PairFacts(method="eagle", eagle3_head_as_eagle=True, target_quantized="fp8", temperature=1.0,
                      published_temperature=0.0, prompt_len=4000, drafter_context=2048)
    causes = likely_causes(facts)
    assert causes[:4] == ["this EAGLE-3 head was asked for as method eagle",
                          "the target is served quantized (fp8), and drafters are trained on 16-bit targets' outputs",
                          "it was measured at T=1, above the T≤0 of the figures",
                          "prompts of 4000 tokens are past the drafter's 2048-token training context"]


def test_mtp_names_its_own_failure():
    facts = PairFacts(method="mtp", eagle3_head_as_eagle=False, target_quantized="", temperature=0.0,
                      published_temperature=0.0, prompt_len=100, drafter_context=None)
    causes = likely_causes(facts)
    assert any("#55605" in c for c in causes) and not any("method eagle" in c for c in causes)


def test_a_misserved_head_says_what_to_do():
    assert "use --method eagle3" in misserved_head("EAGLE3-x")
