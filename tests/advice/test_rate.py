"""advisor/advice/rate.py: `recommend --request-rate` on one GPU group, by review's queueing."""

import contextlib
import io

from advisor.advice.rate import at_rate, saturation
from advisor.advice.resolve import AcceptanceInput, build_scenario
from advisor.cli.app import main
from advisor.model.cost import capacity


def test_the_issues_swamped_server_is_prefill_saturated_first():
    """vLLM #43295's shape: 16K-token prompts at 20 requests/s on one GPU. The queue is prompts: said first, and
    speculation is not enabled (it was ENABLE 1.78x at a concurrency no one asked for)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["recommend", "--prompt-len", "16000", "--out-len", "4000", "--request-rate", "20"])
    text = out.getvalue()
    assert code == 0 and text.startswith("warning: prefill-saturated: 20 requests/s of 16000-token prompts")
    assert "verdict: DISABLE" in text and "--speculative-config" not in text


def test_an_unsaturated_rate_sets_the_concurrency_review_would():
    s = build_scenario(prompt_len=2000, out_len=400, acceptance=AcceptanceInput(alpha=0.7))
    r = at_rate(s, 0.5)
    assert not saturation(s, 0.5) and not any("saturated" in w for w in r.warnings)
    curve = capacity.load_curve(s.setup, [1.0], capacity.Shape(2000.0, 2000.0, 400.0), 256, speculative=False)
    expected = max(int(-(-capacity.concurrency_at(curve, 0.5) // 1)), 1)
    assert r.inputs.batch == expected and any("0.5 requests/s" in reason for reason in r.reasons)


def test_the_saturation_line_names_the_prefill_share_in_numbers():
    s = build_scenario(prompt_len=16000, out_len=4000, acceptance=AcceptanceInput(alpha=0.7))
    line = saturation(s, 20.0)
    busy = float(line.split("take ")[1].split(" s")[0])
    assert busy > 1 and saturation(s, 0.9 * 20.0 / busy) == ""
