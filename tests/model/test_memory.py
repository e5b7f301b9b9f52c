import pytest

from advisor.model import memory
from advisor.vllm import lookahead_slots


def test_draft_costs_weights_kv_and_lookahead(llama8b, llama1b, rtx6000):
    base = memory.budget(llama8b, None, "ngram", 0, rtx6000, prompt_len=8000, out_len=200)
    spec = memory.budget(llama8b, llama1b, "draft_model", 4, rtx6000, prompt_len=8000, out_len=200)
    assert spec.draft_weights == pytest.approx(llama1b.weight_bytes())
    assert spec.kv_per_token_spec == llama8b.kv_bytes_per_token() + llama1b.kv_bytes_per_token()
    assert spec.tokens_per_sequence_spec >= spec.tokens_per_sequence  # k + 1 lookahead slots, in 16-token blocks
    assert spec.max_concurrency_spec < spec.max_concurrency_baseline == base.max_concurrency_baseline
    assert spec.fits and spec.fits_spec and spec.reason() == ""


def test_does_not_fit_is_a_reason_not_a_crash(rtx6000):
    from advisor.profiles.catalog import load_hardware, load_model

    big = load_model("llama-3.1-70b-instruct")
    budget = memory.budget(big, None, "ngram", 0, load_hardware("rtx-3060-12gb"), prompt_len=1000, out_len=100)
    assert not budget.fits
    # the weights alone exceed memory: say by how much, and what would fit
    assert "exceed the usable 11.6 GB by 131.9 GB" in budget.reason() and "--num-gpus" in budget.reason()
    assert budget.max_concurrency_baseline == 0


def test_tensor_parallel_shards_weights_and_kv(h100):
    from advisor.profiles.catalog import load_model

    big = load_model("llama-3.1-70b-instruct")
    one = memory.budget(big, None, "ngram", 0, h100, prompt_len=1000, out_len=100, tp=1)
    four = memory.budget(big, None, "ngram", 0, h100, prompt_len=1000, out_len=100, tp=4)
    assert not one.fits and four.fits
    assert four.target_weights == pytest.approx(big.weight_bytes() / 4)
    assert memory.kv_bytes_per_token_per_gpu(big, 16) == memory.kv_bytes_per_token_per_gpu(big, 8)  # 8 KV heads


def test_lookahead_slots():
    assert lookahead_slots("draft_model", 4) == 5
    assert lookahead_slots("ngram", 4) == 4
    assert lookahead_slots("eagle", 0) == 0
