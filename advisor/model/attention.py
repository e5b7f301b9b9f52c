"""What attention costs per token: the KV cache (or linear-attention state) it keeps, the bytes it reads per step,
and its FLOPs over the context. A mixin of ModelSpec (advisor.model.modelspec), whose fields it reads.

Per layer and cached token, a GQA layer keeps K and V, 2 · kv_heads · head_dim elements; an MLA layer keeps one
latent of kv_lora_rank + qk_rope_head_dim elements shared by every head (vLLM caches the compressed latent:
vllm/model_executor/layers/attention/mla_attention.py, `MLAAttention.__init__`: head_size = kv_lora_rank +
qk_rope_head_dim, num_kv_heads=1; with an fp8 KV cache dense MLA stores the same elements in one byte each). A sliding-window layer attends to at most `sliding_window` tokens, a chunked-local one (Llama-4) only
to the tokens of its own `attention_chunk`-token chunk, a Gated-DeltaNet layer to none: it carries a constant state.
"""

from __future__ import annotations

import numpy as np

# vLLM runs MLA in its weight-absorbed form for decode-like queries: one token, or up to 1 + k under speculation when
# the backend supports uniform multi-token queries (mla_attention.py `MLACommonMetadataBuilder.reorder_batch_threshold`
# and `query_len_support`); it expands the latent to per-head K/V for prefill chunks. Up to this many tokens a query
# counts as decode here (verification is at most 1 + MAX_K = 17).
MLA_DECODE_MAX_QUERY = 64


class AttentionCost:
    __slots__ = ()

    # --- the cache ------------------------------------------------------------------------------------------------
    @property
    def kv_elements_per_layer_token(self) -> int:
        """Cached elements per token in one attention layer: 2 · kv_heads · head_dim (GQA), or the MLA latent."""
        if self.is_mla:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.num_kv_heads * self.head_dim

    def kv_elements_per_layer_token_per_gpu(self, tp: int) -> float:
        """Tensor parallelism shards KV heads; with fewer KV heads than GPUs each GPU keeps a replica of one head.
        The MLA latent is one head: every GPU keeps all of it (vLLM's MLA cache has num_kv_heads 1)."""
        if self.is_mla:
            return float(self.kv_elements_per_layer_token)
        return 2 * max(self.num_kv_heads / tp, 1.0) * self.head_dim

    def kv_bytes_per_token(self, kv_dtype_bytes: float = 2.0) -> float:
        """Cache bytes one token adds across the attention layers (before any window caps them), e.g. DeepSeek-V3:
        61 layers x (512 + 64) x 2 bytes = 70,272 B in bf16."""
        return self.kv_layers * self.kv_elements_per_layer_token * kv_dtype_bytes

    def linear_state_bytes(self, num_spec: int = 0, state_bytes: float = 2.0) -> float:
        """One sequence's state in all linear-attention layers: the causal conv's last kernel - 1 (+ num_spec) inputs
        and the recurrent v_heads x v_dim x k_dim matrix, in the model's dtype (vllm/model_executor/layers/mamba/
        mamba_utils.py `MambaStateShapeCalculator.gated_delta_net_state_shape`, `gated_delta_net_state_dtype`: the
        mamba cache dtype "auto" is the model's, whatever --kv-cache-dtype says)."""
        conv = self.linear_conv_channels * (self.linear_conv_kernel - 1 + num_spec)
        return self.linear_layers * (conv + self.linear_state_elements) * state_bytes

    # --- one step's reads ----------------------------------------------------------------------------------------
    def attended_tokens(self, context: np.ndarray | float) -> np.ndarray:
        """Context tokens summed over the attention layers one pass runs: a sliding-window layer looks back at most
        `sliding_window` tokens; a chunked-local one sees its chunk so far, on average half a chunk once past the
        first (a decode position's offset in its chunk is uniform over a long output)."""
        context = np.asarray(context, dtype=float)
        full = self.kv_layers - self.sliding_layers - self.chunked_layers
        total = full * context
        if self.sliding_layers:
            total = total + self.sliding_layers * np.minimum(context, self.sliding_window)
        if self.chunked_layers:
            chunk = float(self.attention_chunk)
            total = total + self.chunked_layers * np.where(context < chunk, context, chunk / 2.0)
        return total * self.pass_fraction

    def kv_bytes_read(self, context: np.ndarray | float, kv_dtype_bytes: float = 2.0) -> np.ndarray:
        """Bytes one sequence reads per pass at `context` tokens: every attention layer its window of the cache,
        every linear-attention layer its state, read and written back."""
        kv = self.attended_tokens(context) * self.kv_elements_per_layer_token * kv_dtype_bytes
        return kv + 2.0 * self.linear_state_bytes() * self.pass_fraction

    def kv_bytes_read_per_gpu(self, context: np.ndarray | float, kv_dtype_bytes: float, tp: int) -> np.ndarray:
        """`kv_bytes_read` on one of `tp` GPUs: each reads the KV heads it keeps (all of an MLA latent, a replica of
        one head when there are fewer KV heads than GPUs) and its shard of the linear-attention state."""
        kv = self.attended_tokens(context) * self.kv_elements_per_layer_token_per_gpu(tp) * kv_dtype_bytes
        return kv + 2.0 * self.linear_state_bytes() * self.pass_fraction / tp

    # --- FLOPs ---------------------------------------------------------------------------------------------------
    def attention_flops_per_context_token(self, query_len: np.ndarray | float = 1.0) -> np.ndarray:
        """FLOPs per query token, layer and attended token. GQA: QKᵀ and AV, 2 · d_attn each (PaLM App. B).
        MLA at decode runs the absorbed form: each head's query is mapped into the latent, scores against
        kv_lora_rank + qk_rope_head_dim elements and sums kv_lora_rank-wide values, 2 · (r + rope) + 2 · r per head
        (DeepSeek-V2, arXiv 2405.04434, §2.1.2 "absorb"; the absorptions themselves are kv_b_proj's parameters,
        counted with the weights). Prefill expands the latent: 2 · (nope + rope) + 2 · v_head_dim per head."""
        if not self.is_mla:
            return np.full_like(np.asarray(query_len, dtype=float), 4.0 * self.num_heads * self.head_dim)
        absorbed = 2.0 * (self.kv_lora_rank + self.qk_rope_head_dim) + 2.0 * self.kv_lora_rank
        expanded = 2.0 * self.head_dim + 2.0 * self.v_head_dim
        return self.num_heads * np.where(np.asarray(query_len) <= MLA_DECODE_MAX_QUERY, absorbed, expanded)

    def flops_per_token(self, context: np.ndarray | float, query_len: np.ndarray | float = 1.0) -> np.ndarray:
        """Forward FLOPs for one token attending to `context` tokens (PaLM App. B): 2·N_active + attention,
        logits and fusion included."""
        return self.layer_flops_per_token(context, query_len) + 2.0 * (self.lm_head_params + self.fusion_params)

    def layer_flops_per_token(self, context: np.ndarray | float, query_len: np.ndarray | float = 1.0) -> np.ndarray:
        """The decoder layers' share: 2 FLOPs per active parameter, attention over the context, and the Gated-DeltaNet
        recurrence: per token about four state-sized multiply-adds (decay, S·k, the rank-1 update, S·q; Yang et al.
        2024, Gated Delta Networks, eq. 10), 8 FLOPs per state element."""
        active = self.decoder_params(self.experts_per_token) * self.pass_fraction
        attention = self.attention_flops_per_context_token(query_len) * self.attended_tokens(context)
        return 2.0 * active + attention + 8.0 * self.linear_layers * self.linear_state_elements * self.pass_fraction

    def activation_bytes_per_token(self, act_dtype_bytes: float = 2.0) -> float:
        """Hidden-state traffic per token through the decoder layers, unfused: each layer's six kernels (qkv,
        attention, o, gate/up, act, down) read and write about 9·h + 6·I elements. Small next to weights except in
        prefill. (The fp32 logits are written per sampled row: `logits_bytes_per_row`.)"""
        inter = self.intermediate_size * self.experts_per_token + self.shared_expert_intermediate_size
        return self.layers_per_pass * (9 * self.hidden_size + 6 * inter) * act_dtype_bytes

    def logits_bytes_per_row(self) -> float:
        """fp32 logits written for one sampled position. An EAGLE-3 head's draft-vocabulary logits are then scattered
        into a full target-vocabulary row of -inf (vllm/model_executor/models/llama_eagle3.py `compute_logits`: the
        d2t map, `logits_new[:, targets] = logits`), so it writes both."""
        return 4.0 * (self.lm_head_vocab + self.vocab_size if self.lm_head_vocab else self.vocab_size)
