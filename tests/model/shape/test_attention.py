"""advisor/model/shape/attention.py: what a hybrid's linear-attention layers read and write per pass."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from advisor.profiles.catalog import load_model
from advisor.vllm.defaults import MAX_K


def test_a_verification_writes_one_linear_state_per_verified_position():
    # vLLM 0.32's GDN spec-decode path loads the state at num_accepted_tokens - 1 and stores one per token
    # (fused_sigmoid_gating.py): decode moves 2 states, verifying k drafts k + 2, a prefill chunk 2
    hybrid = load_model("qwen3.5-27b")
    assert list(hybrid.states_moved(np.array([1.0, 2.0, 4.0, 1.0 + MAX_K, 4096.0]))) == [2, 3, 5, 2 + MAX_K, 2]
    state = hybrid.linear_state_bytes()
    # Qwen3.5-27B: 48 GDN layers of a 48 x 128 x 128 fp32 state (mamba_ssm_dtype float32) and a bf16 conv state of
    # 10,240 channels x (kernel 4 - 1)
    assert state == 48 * (48 * 128 * 128 * 4 + 10240 * 3 * 2)
    extra = hybrid.kv_bytes_read_per_gpu(1000.0 + 4, 2.0, 1, 4.0) - hybrid.kv_bytes_read_per_gpu(1000.0 + 4, 2.0, 1)
    assert np.isclose(extra, 3 * state)  # k = 3: three more states than a one-token pass at the same context


@given(st.floats(1.0, 17.0), st.integers(1, 8))
def test_a_dense_model_moves_no_state_and_tp_shards_a_hybrids(q, tp):
    dense, hybrid = load_model("llama-3.1-8b-instruct"), load_model("qwen3.5-27b")
    assert dense.kv_bytes_read_per_gpu(512.0, 2.0, tp, q) == dense.kv_bytes_read_per_gpu(512.0, 2.0, tp)
    whole = hybrid.kv_bytes_read_per_gpu(0.0, 2.0, 1, q)
    assert np.isclose(hybrid.kv_bytes_read_per_gpu(0.0, 2.0, tp, q), whole / tp, rtol=1e-9)
