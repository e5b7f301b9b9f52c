"""advisor/render/comparison.py: compare's decision line says exactly what was compared (issue 49: "lies above every
other method's" was printed where the pick's interval overlapped rows that read disable, 22 of 406 compares)."""

from advisor.advice.comparison import decide
from advisor.render.comparison import decision
from tests.advice.test_comparison import row


def test_the_pick_names_what_it_was_compared_with_and_what_it_was_not():
    refused = row("suffix", 1.0, 1.0, 1.0, "refused")
    c = decide([row("eagle3", 1.5, 1.4, 1.6), row("ngram", 1.1, 1.0, 1.2, "marginal"),
                row("draft_model", 1.0, 0.9, 1.45, "disable"), refused], 100)  # draft_model's interval overlaps
    said = decision(c)[0]
    assert said.startswith("pick: eagle3: its 80% interval (1.40-1.60x) lies above those of the other methods that "
                           "gain here (ngram)")
    assert "draft_model, suffix gain at no k, do not fit or are refused, so they were not compared" in said
    assert "every other method" not in said


def test_a_pick_alone_among_the_gaining_says_so():
    c = decide([row("eagle3", 1.5, 1.4, 1.6), row("ngram", 0.9, 0.8, 1.55, "disable")], 100)
    assert decision(c)[0] == ("pick: eagle3: the only method that gains here; ngram gains at no k, does not fit or "
                              "is refused, so it was not compared (it is never picked)")
