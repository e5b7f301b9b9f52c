"""advisor/vllm/drafting.py against the installed vLLM 0.32's own config code: its methods called on plain namespaces
that carry the fields they read (no engine, no model files)."""

import inspect
from types import SimpleNamespace

import pytest

from advisor.vllm.defaults import lookahead_slots
from advisor.vllm.drafting import (
    NON_CAUSAL_BACKENDS,
    drafts_fixed_k,
    lookahead,
    new_slots,
    query_tokens,
    trained_length,
    v1_only,
    v2_only,
)

CASES = [("eagle3", False), ("eagle3", True), ("dflash", False), ("dspark", False), ("mtp", False),
         ("draft_model", False), ("draft_model", True), ("ngram", False)]


def _spec(method: str, k: int, parallel: bool, anchor: bool = True):
    """A namespace with what SpeculativeConfig's methods read, those methods bound to it."""
    from vllm.config import SpeculativeConfig

    spec = SimpleNamespace(method=method, num_speculative_tokens=k, parallel_drafting=parallel or method in (
        "dflash", "dspark"), draft_model_config=SimpleNamespace(hf_config=SimpleNamespace(sample_from_anchor=anchor)),
        enable_adaptive_verification=False, num_speculative_tokens_per_batch_size=None,
        use_heterogeneous_vocab=False)
    for name in ("use_dflash", "use_dspark", "use_eagle", "uses_draft_model"):
        setattr(spec, name, getattr(SpeculativeConfig, name).__get__(spec))
    return spec


@pytest.mark.parametrize("method, parallel", CASES)
@pytest.mark.parametrize("k", [1, 3, 7, 15])
def test_scheduler_slots_are_vllms(method, parallel, k):
    from vllm.config import SpeculativeConfig

    vllm = SpeculativeConfig.max_num_new_slots_for_drafting.fget(_spec(method, k, parallel))
    assert new_slots(method, k, parallel) == vllm


@pytest.mark.parametrize("method, parallel", CASES)
@pytest.mark.parametrize("anchor", [True, False])
def test_kv_lookahead_is_vllms(method, parallel, anchor):
    from vllm.config import VllmConfig

    spec = _spec(method, 5, parallel, anchor)
    config = SimpleNamespace(speculative_config=spec, num_speculative_tokens=5, diffusion_config=None)
    vllm = VllmConfig.num_lookahead_tokens.fget(config)
    assert lookahead(method, 5, anchor_sampled=anchor, text_lookup=method == "ngram") == vllm
    assert lookahead_slots(method, 5, anchor_sampled=anchor) == 5 + vllm  # the 5 verified drafts, then the lookahead


@pytest.mark.parametrize("method, parallel, mixed", [("dspark", False, False), ("dflash", False, True),
                                                     ("dflash", False, False), ("eagle3", True, False),
                                                     ("eagle3", False, False)])
def test_which_runner_serves_each_is_vllms(method, parallel, mixed):
    from vllm.config import VllmConfig

    spec = _spec(method, 3, parallel)
    types = ["sliding_attention", "full_attention"] if mixed else ["full_attention"] * 2
    spec.draft_model_config = SimpleNamespace(hf_config=SimpleNamespace(layer_types=types, sample_from_anchor=True),
                                              architectures=["DFlashDraftModel"])
    config = SimpleNamespace(speculative_config=spec, model_config=None,
                             parallel_config=SimpleNamespace(distributed_executor_backend="mp",
                                                             pipeline_parallel_size=1, use_ubatching=False,
                                                             prefill_context_parallel_size=1,
                                                             enable_batch_sharded_sampling=False),
                             scheduler_config=SimpleNamespace(async_scheduling=True))
    for name in ("_dflash_needs_multi_kv_group", "_is_dflash_candidate_draft"):
        setattr(config, name, getattr(VllmConfig, name).__get__(config))
    v2_refuses = VllmConfig._get_v2_model_runner_unsupported_features(config)
    v1_refuses = VllmConfig._get_v1_model_runner_unsupported_features(config)
    assert bool(v2_refuses) == v1_only(method, parallel)
    assert bool(v1_refuses) == v2_only(method, mixed_windows=mixed)


SAFE_TO_IMPORT = ("FLASH_ATTN", "FLASH_ATTN_DIFFKV", "TRITON_ATTN", "TRITON_ATTN_DIFFKV", "TRITON_FLASH_ATTN",
                  "ROCM_ATTN", "ROCM_SEGMENTED_ATTN", "ROCM_AITER_FA")


@pytest.mark.parametrize("name", SAFE_TO_IMPORT)
def test_the_backends_that_run_a_non_causal_draft_are_vllms(name):
    """The GQA backends this CPU build imports without a GPU library; FlashInfer, Flex and the CPU backend are read
    from their files (`supports_non_causal` returns True in flashinfer.py, flex_attention.py, cpu_attn.py)."""
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    assert AttentionBackendEnum[name].get_class().supports_non_causal() == (name in NON_CAUSAL_BACKENDS)


def test_unimportable_backends_are_read_from_their_source():
    import vllm.v1.attention.backends as backends

    folder = inspect.getfile(backends).rsplit("/", 1)[0]
    for name, file in (("FLASHINFER", "flashinfer.py"), ("FLEX_ATTENTION", "flex_attention.py"),
                       ("CPU_ATTN", "cpu_attn.py"), ("ROCM_AITER_UNIFIED_ATTN", "rocm_aiter_unified_attn.py")):
        text = open(f"{folder}/{file}").read()
        body = text.split("def supports_non_causal(cls) -> bool:", 1)[1].split("\n\n", 1)[0]
        assert ("return True" in body) == (name in NON_CAUSAL_BACKENDS), name


def test_a_block_drafters_one_forward_and_its_fixed_k():
    """DFlash drafts 1 + k queries and DSpark k from its anchor, sized once at construction, and `propose` leaves
    its num_speculative_tokens argument unused (so a per-batch schedule cannot shorten the drafting)."""
    from vllm.v1.worker.gpu.spec_decode.dflash import speculator as dflash
    from vllm.v1.worker.gpu.spec_decode.dspark import speculator as dspark

    dflash_src, dspark_src = inspect.getsource(dflash.DFlashSpeculator), inspect.getsource(dspark.DSparkSpeculator)
    assert "self.num_query_per_req = 1 + self.num_speculative_steps" in dflash_src
    assert "self.num_query_per_req = self.num_speculative_steps" in dspark_src
    body = inspect.getsource(dflash.DFlashSpeculator.propose).split(") -> torch.Tensor:", 1)[1]
    assert "num_speculative_tokens" not in body
    assert (query_tokens("dflash", 7), query_tokens("dspark", 7), query_tokens("dspark", 7, anchor_sampled=False),
            query_tokens("eagle3", 7)) == (8, 7, 8, 14)
    assert drafts_fixed_k("dflash") and drafts_fixed_k("dspark") and not drafts_fixed_k("eagle3")


def test_the_trained_length_of_a_block():
    assert (trained_length("dflash", 16), trained_length("dspark", 7)) == (15, 7)
    assert trained_length("dspark", 7, anchor_sampled=False) == 6
    assert trained_length("eagle3", 0) is None and trained_length("dflash", 0) is None
