import pytest
from tests.model.shape.test_config_reader import TINY_MLA, TINY_NEXT, TINY_OSS

from advisor.model.cost import memory
from advisor.model.shape.config_reader import spec_from_config
from advisor.vllm.defaults import lookahead_slots


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
    assert "exceed the usable 11.9 GB by 131.7 GB" in budget.reason() and "--num-gpus" in budget.reason()
    assert budget.max_concurrency_baseline == 0


def test_tensor_parallel_shards_weights_and_kv(h100):
    from advisor.profiles.catalog import load_model

    big = load_model("llama-3.1-70b-instruct")
    one = memory.budget(big, None, "ngram", 0, h100, prompt_len=1000, out_len=100, tp=1)
    four = memory.budget(big, None, "ngram", 0, h100, prompt_len=1000, out_len=100, tp=4)
    assert not one.fits and four.fits
    assert four.target_weights == pytest.approx(big.weight_bytes() / 4)
    # 8 KV heads: at TP 16 each GPU keeps a replica of one, as at TP 8
    assert memory.kv_bytes_per_sequence_per_gpu(big, 16, 1) == memory.kv_bytes_per_sequence_per_gpu(big, 8, 1)


def test_lookahead_slots():
    # k verified draft tokens, plus vLLM 0.32's num_lookahead_tokens = k where the drafter keeps a KV cache
    assert lookahead_slots("draft_model", 4) == lookahead_slots("eagle", 4) == lookahead_slots("mtp", 4) == 4 + 4
    assert lookahead_slots("ngram", 4) == lookahead_slots("suffix", 4) == 4
    assert lookahead_slots("eagle", 0) == 0


def test_kv_cache_dtype_fp8_halves_kv_per_token(llama8b, rtx6000):
    auto = memory.budget(llama8b, None, "ngram", 0, rtx6000, prompt_len=8000, out_len=200)
    fp8 = memory.budget(llama8b, None, "ngram", 0, rtx6000, prompt_len=8000, out_len=200, kv_cache_dtype="fp8")
    assert auto.kv_per_token_baseline == 2 * 32 * 8 * 128 * 2  # K and V x layers x KV heads x dims x 2 bytes
    assert fp8.kv_per_token_baseline == 2 * 32 * 8 * 128 * 1


def test_sliding_layers_hold_their_window_plus_the_tokens_in_flight():
    oss = spec_from_config(TINY_OSS, "oss")  # 2 full + 2 sliding (128) layers, 2 x 2 x 8 elements a token, bf16
    # vLLM admits a sliding layer's window - 1 + in-flight tokens, + 1 block: ceil((127 + 16384) / 16) + 1 = 1033
    # blocks = 16,528 tokens when the request is longer than that
    assert memory.kv_bytes_per_sequence_per_gpu(oss, 1, 40_000, in_flight=16_384) == (2 * 40_000 + 2 * 16_528) * 64
    assert memory.kv_bytes_per_sequence_per_gpu(oss, 1, 3008, in_flight=16_384) == 4 * 3008 * 64  # no cap
    assert memory.in_flight_tokens("eagle3", 3, 8192) == 2 * 8192  # async scheduling: two batches in flight
    assert memory.in_flight_tokens("ngram", 3, 8192) == 8192


def test_linear_attention_state_per_sequence_grows_with_k():
    nxt = spec_from_config(TINY_NEXT, "next")
    # 1 full layer x 2 KV heads x 8 dims x 2 (K, V) x 2 bytes per token; 3 linear layers keep (2 + k) states of
    # (64 conv channels x (3 + k) + 4 x 8 x 8) bf16 elements (mamba_cache_mode "align" under prefix caching)
    k = 2
    assert memory.kv_bytes_per_sequence_per_gpu(nxt, 1, 1024, num_spec=k) == \
        1024 * 64 + 3 * (64 * (3 + k) + 256) * 2 * (2 + k)


def test_mla_cache_is_replicated_across_tensor_parallel_gpus():
    mla = spec_from_config(TINY_MLA, "mla")  # 4 layers x (8 + 4) latent elements x 2 bytes
    assert memory.kv_bytes_per_sequence_per_gpu(mla, 1, 1) == memory.kv_bytes_per_sequence_per_gpu(mla, 8, 1) \
        == 4 * 12 * 2
