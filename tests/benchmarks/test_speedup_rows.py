"""benchmarks/speedup_rows.py: the published speedups with an acceptance, and §8.1's hybrid setups as they ran."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from advisor.advice.resolve_acceptance import AcceptanceInput, Pair, resolve_acceptance  # noqa: E402
from advisor.errors import InputError  # noqa: E402
from advisor.profiles.catalog import load_hardware, load_model  # noqa: E402
from benchmarks import speedup_rows as sr  # noqa: E402
from benchmarks.datasheet_fit import SHIPPED  # noqa: E402


@pytest.mark.parametrize("k, al, tok_s", sr.HYBRID_A100)
def test_the_a100_hybrid_rows_predict_a_slowdown_as_their_vllm_ran_them(k, al, tok_s):
    # §8.1: Qwen3.8-27B (qwen3.5-27b's layout), W4A16, ~29K prompt, MTP k at its measured AL, vLLM 0.27.1
    predicted = sr.hybrid_decode_speedup(SHIPPED, k, al)
    assert predicted < 1.0
    assert abs(predicted / (tok_s / sr.HYBRID_A100_BASE) - 1.0) < 0.25  # published 0.71 / 0.63 / 0.57


def test_the_dgx_spark_row_predicts_a_slowdown_at_the_mtp_prior():
    # §8.1: unsloth/Qwen3.8-27B-NVFP4 on a GB10, MTP k=2, vLLM 0.22.1: 0.80x; no acceptance published, so the
    # prior's whole range is priced, its high end included
    target = load_model("qwen3.5-27b")
    acc = resolve_acceptance(AcceptanceInput(), 0.0, pair=Pair(method="mtp", target=target, draft=None,
                                                               prompt_len=1000, out_len=500))
    s = sr.hybrid_as_published(SHIPPED, 2, hw=load_hardware("dgx-spark"), target=target, dtype="nvfp4", seqs=None)
    context = 1000 + 250
    for alpha in (acc.low, acc.alpha, acc.high):
        speedup = float(acc.expected_tokens(2, alpha) * s.decode_step(1, context) / s.iteration_time(2, 1, context))
        assert speedup < 1.0


def test_glm_ocr_is_not_expressible_and_says_why():
    # §8.1's third setup (GLM-OCR, 0.62x on the CUDA-graph path): no profile of the model
    with pytest.raises(InputError):
        load_model("glm-ocr")
    assert any("GLM-OCR" in what for what, _ in sr.LEFT_OUT)


def test_every_row_is_a_speedup_with_its_acceptance_and_one_kind_each():
    rows = sr.rows()
    assert len({r.id for r in rows}) == len(rows)
    for r in rows:
        assert 0.3 < r.published < 4.0 and r.acceptance
        assert r.model_class in ("dense", "moe", "hybrid") and r.gpu in ("ampere", "hopper", "blackwell", "cdna3")
    # the hybrid rows ran before vLLM 0.32's one-pass verification: they do not count as its runs
    assert {r.as_served for r in rows if r.model_class == "hybrid"} == {False}
    assert all(r.as_served for r in rows if r.model_class != "hybrid")
