"""What attention costs per token: its projections, the KV cache (or linear-attention state) it keeps, the bytes it
reads per step, and its FLOPs over the context. A mixin of ModelSpec (advisor.model.shape.modelspec), whose fields it
reads.

Per layer and cached token, a GQA layer keeps K and V, 2 · kv_heads · head_dim elements; an MLA layer keeps one
latent of kv_lora_rank + qk_rope_head_dim elements shared by every head (vLLM caches the compressed latent:
vllm/model_executor/layers/attention/mla_attention.py, `MLAAttention.__init__`: head_size = kv_lora_rank +
qk_rope_head_dim, num_kv_heads=1; with an fp8 KV cache dense MLA stores the same elements in one byte each). A
sliding-window layer attends to at most `sliding_window` tokens, a chunked-local one (Llama-4) only to the tokens of
its own `attention_chunk`-token chunk, a Gated-DeltaNet layer to none: it carries a constant state. Full-attention
layers may be shaped unlike the windowed ones (Gemma-4: fewer, wider KV heads). DeepSeek sparse attention (DSA) adds
an indexer cache per indexer layer and attends only the index_topk tokens its indexer picks.
"""

from __future__ import annotations

import numpy as np

from advisor.vllm.defaults import MAX_K

# vLLM runs MLA in its weight-absorbed form for decode-like queries: one token, or up to 1 + k under speculation when
# the backend supports uniform multi-token queries (mla_attention.py `MLACommonMetadataBuilder.reorder_batch_threshold`
# and `query_len_support`); it expands the latent to per-head K/V for prefill chunks. Up to this many tokens a query
# counts as decode here (verification is at most 1 + MAX_K = 17).
MLA_DECODE_MAX_QUERY = 64
# The DSA indexer caches its keys in fp8 with one fp32 scale per 128 values whatever --kv-cache-dtype says
# (vllm/models/deepseek_v32/attention.py `DeepseekV32Indexer`: k_cache of head_dim + head_dim // 128 * 4 uint8).
INDEX_QUANT_BLOCK = 128
SCALE_BYTES = 4  # one fp32 scale
# Sparse MLA's fp8 cache row (FlashMLA sparse "FP8 with scale", v1/attention/backends/mla/flashmla_sparse.py): the
# latent in fp8 with an fp32 scale per 128, the rope part left bf16: 512 + 16 + 128 = 656 bytes for DeepSeek-V3.2.
ROPE_BYTES = 2.0


class AttentionCost:
    __slots__ = ()

    # --- layers and projections -----------------------------------------------------------------------------------
    @property
    def windowed_layers(self) -> int:
        return self.sliding_layers + self.chunked_layers

    @property
    def full_layers(self) -> int:
        """Attention layers that see the whole context (a DSA layer: the index_topk tokens its indexer picks)."""
        return self.kv_layers - self.windowed_layers

    def _shape(self, full: bool) -> tuple[int, int]:
        """(KV heads, head size) of a full-attention layer, or of a windowed one."""
        if full:
            return self.global_kv_heads or self.num_kv_heads, self.global_head_dim or self.head_dim
        return self.num_kv_heads, self.head_dim

    def _attention_params(self, full: bool) -> int:
        """GQA: q, k, v, o projections (Gemma-4's full layers keep the V slot even where the checkpoint ships K only:
        gemma4.py loads k_proj into both). MLA: q_a/q_b (or q), kv_a_proj_with_mqa (latent + rope key), kv_b (latent
        to per-head key and value), o (deepseek_v2.py `DeepseekV2MLAAttention.__init__`)."""
        h, heads = self.hidden_size, self.num_heads
        if self.is_mla:
            q = h * self.q_lora_rank + self.q_lora_rank * heads * self.head_dim if self.q_lora_rank else \
                h * heads * self.head_dim
            nope = self.head_dim - self.qk_rope_head_dim
            gate = h * heads * self.v_head_dim if self.gated_attention else 0  # Kimi-K3's g_proj
            return (q + h * (self.kv_lora_rank + self.qk_rope_head_dim)
                    + self.kv_lora_rank * heads * (nope + self.v_head_dim) + heads * self.v_head_dim * h + gate)
        kv_heads, head_dim = self._shape(full)
        q_out, kv_out = heads * head_dim, kv_heads * head_dim
        return h * (q_out * (2 if self.gated_attention else 1) + 2 * kv_out) + q_out * h

    @property
    def _eagle3_input_params(self) -> int:
        """An EAGLE-3 head's first layer reads [embedding, fused state], 2h wide: its qkv projection's second h
        rows (vllm/model_executor/models/llama_eagle3.py `LlamaDecoderLayer`: qkv input 2h at layer 0 only)."""
        if not self.is_eagle3:
            return 0
        kv_heads, head_dim = self._shape(True)
        return self.hidden_size * (self.num_heads * head_dim * (2 if self.gated_attention else 1)
                                   + 2 * kv_heads * head_dim)

    @property
    def attention_params_per_layer(self) -> int:
        """One full-attention layer's projections."""
        return self._attention_params(True)

    @property
    def indexer_params(self) -> int:
        """One DSA indexer: wq_b (q_lora_rank x heads · head_dim) and wk_weights_proj (hidden x (head_dim + heads))
        (deepseek_v32/attention.py `DeepseekV32Indexer.__init__`); without a query latent (MiniMax-M3's index_q in
        its fused qkv_proj, Qwen4-exp's QSA) the queries come from the hidden state."""
        return (self.q_lora_rank or self.hidden_size) * self.index_heads * self.index_head_dim + \
            self.hidden_size * (self.index_head_dim + self.index_heads)

    @property
    def attention_params(self) -> int:
        """Every attention layer's projections and indexers."""
        return (self.full_layers * self._attention_params(True) + self.windowed_layers * self._attention_params(False)
                + self.index_layers * self.indexer_params + self._eagle3_input_params)

    @property
    def kv_layer_shapes(self) -> tuple[tuple[int, int, int], ...]:
        """(layers, KV heads, head size) of the full and of the windowed GQA layers."""
        return ((self.full_layers, *self._shape(True)), (self.windowed_layers, *self._shape(False)))

    # --- the cache ------------------------------------------------------------------------------------------------
    @property
    def kv_elements_per_layer_token(self) -> int:
        """Cached elements per token in one full-attention layer: 2 · kv_heads · head_dim (GQA), or the MLA latent."""
        if self.is_mla:
            return self.kv_lora_rank + self.qk_rope_head_dim
        kv_heads, head_dim = self._shape(True)
        return 2 * kv_heads * head_dim

    def kv_elements_per_layer_token_per_gpu(self, tp: int, full: bool = True) -> float:
        """Tensor parallelism shards KV heads; with fewer KV heads than GPUs each GPU keeps a replica of one head.
        The MLA latent is one head: every GPU keeps all of it (vLLM's MLA cache has num_kv_heads 1)."""
        if self.is_mla:
            return float(self.kv_elements_per_layer_token)
        kv_heads, head_dim = self._shape(full)
        return 2 * max(kv_heads / tp, 1.0) * head_dim

    @property
    def index_row_bytes(self) -> float:
        """Bytes one token adds to one indexer layer's cache: fp8 keys and their scales (132 B for head_dim 128)."""
        return self.index_head_dim + self.index_head_dim // INDEX_QUANT_BLOCK * SCALE_BYTES

    def _cache_row_bytes(self, kv_dtype_bytes: float, tp: int, full: bool) -> float:
        """One token's row in one attention layer's cache on one of `tp` GPUs. A sparse MLA layer in fp8 keeps the
        rope part in bf16 and an fp32 scale per 128 latent values. A model that fixes its own row format
        (DeepSeek-V4's fp8_ds_mla) keeps it whatever --kv-cache-dtype says."""
        if self.fixed_kv_row_bytes:
            return float(self.fixed_kv_row_bytes)
        if self.index_topk and self.is_mla and kv_dtype_bytes < 2.0:
            return self.kv_lora_rank * (kv_dtype_bytes + SCALE_BYTES / INDEX_QUANT_BLOCK) + \
                self.qk_rope_head_dim * ROPE_BYTES
        return self.kv_elements_per_layer_token_per_gpu(tp, full) * kv_dtype_bytes

    def kv_row_bytes(self, kv_dtype_bytes: float, tp: int = 1, full: bool = True) -> float:
        """Cache bytes one token adds to one attention layer on one of `tp` GPUs."""
        return self._cache_row_bytes(kv_dtype_bytes, tp, full)

    def extra_cache_bytes(self, tokens: float, kv_dtype_bytes: float, tp: int = 1) -> float:
        """What a `tokens`-token sequence holds beyond its full and windowed layers' rows: the compressed caches
        (one row per `ratio` tokens in each such layer) and the indexers' keys (one per `index_compress` tokens,
        replicated on every GPU)."""
        rows = sum(cached * tokens / ratio for ratio, _, cached, _ in self.compressed)
        index = self.index_layers * tokens / self.index_compress * self.index_row_bytes
        return rows * self._cache_row_bytes(kv_dtype_bytes, tp, True) + index

    def kv_bytes_per_token(self, kv_dtype_bytes: float = 2.0) -> float:
        """Cache bytes one token adds across the attention layers (before any window caps them), e.g. DeepSeek-V3:
        61 layers x (512 + 64) x 2 bytes = 70,272 B in bf16."""
        return (self.full_layers * self.kv_row_bytes(kv_dtype_bytes) +
                self.windowed_layers * self.kv_row_bytes(kv_dtype_bytes, full=False)
                + self.extra_cache_bytes(1.0, kv_dtype_bytes))

    def linear_state_bytes(self, num_spec: int = 0, conv_bytes: float = 2.0) -> float:
        """One sequence's state in all linear-attention layers: the causal conv's last kernel - 1 (+ num_spec) inputs
        in the model's dtype and the recurrent v_heads x v_dim x k_dim matrix in linear_state_dtype_bytes
        (vllm/model_executor/layers/mamba/mamba_utils.py `MambaStateShapeCalculator.gated_delta_net_state_shape`,
        `_mamba_state_dtype`: the mamba cache dtype "auto" is the model's whatever --kv-cache-dtype says, the
        temporal state's is mamba_ssm_cache_dtype, which Qwen3.5 sets from its config's mamba_ssm_dtype:
        vllm/model_executor/models/config.py `Qwen3_5ForConditionalGenerationConfig`)."""
        conv = self.linear_conv_channels * (self.linear_conv_kernel - 1 + num_spec)
        return self.linear_layers * (conv * conv_bytes + self.linear_state_elements * self.linear_state_dtype_bytes)

    # --- one step's reads ----------------------------------------------------------------------------------------
    def _attended(self, context: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """(full, windowed): context tokens summed over the full-attention and the windowed layers one pass runs. A
        sliding-window layer looks back at most `sliding_window` tokens; a chunked-local one sees its chunk so far,
        on average half a chunk once past the first (a decode position's offset in its chunk is uniform over a long
        output); a DSA layer attends at most index_topk tokens."""
        context = np.asarray(context, dtype=float)
        sparse = (self.sparse_layers or self.full_layers) if self.index_topk else 0
        full = (self.full_layers - sparse) * context + sparse * np.minimum(context, self.index_topk)
        for ratio, layers, _, topk in self.compressed:
            rows = context / ratio
            full = full + layers * (np.minimum(rows, topk) if topk else rows)
        windowed = np.zeros_like(context)
        if self.sliding_layers:
            windowed = windowed + self.sliding_layers * np.minimum(context, self.sliding_window)
        if self.chunked_layers:
            chunk = float(self.attention_chunk)
            windowed = windowed + self.chunked_layers * np.where(context < chunk, context, chunk / 2.0)
        return full * self.pass_fraction, windowed * self.pass_fraction

    def attended_tokens(self, context: np.ndarray | float) -> np.ndarray:
        """Context tokens summed over the attention layers one pass runs (see `_attended`)."""
        full, windowed = self._attended(context)
        return full + windowed

    def _index_reads(self, context: np.ndarray | float) -> np.ndarray:
        """Context keys the DSA indexers of one pass score: every cached key, in every indexer layer."""
        return self.index_layers * np.asarray(context, dtype=float) / self.index_compress * self.pass_fraction

    def kv_bytes_read(self, context: np.ndarray | float, kv_dtype_bytes: float = 2.0) -> np.ndarray:
        """Bytes one sequence reads per pass at `context` tokens (see `kv_bytes_read_per_gpu`), on one GPU."""
        return self.kv_bytes_read_per_gpu(context, kv_dtype_bytes, 1)

    def kv_bytes_read_per_gpu(self, context: np.ndarray | float, kv_dtype_bytes: float, tp: int,
                              new_tokens: np.ndarray | float = 1.0) -> np.ndarray:
        """Bytes one sequence reads per pass of `new_tokens` tokens on one of `tp` GPUs: every attention layer its
        window of the cache (the KV heads it keeps: all of an MLA latent, a replica of one head when there are fewer
        KV heads than GPUs), every DSA indexer its keys over the whole context, every linear-attention layer its
        shard of the states it reads and writes (`states_moved`)."""
        full, windowed = self._attended(context)
        kv = full * self._cache_row_bytes(kv_dtype_bytes, tp, True) + \
            windowed * self._cache_row_bytes(kv_dtype_bytes, tp, False)
        return kv + self._index_reads(context) * self.index_row_bytes + \
            self.states_moved(new_tokens) * self.linear_state_bytes() * self.pass_fraction / tp

    def states_moved(self, new_tokens: np.ndarray | float = 1.0) -> np.ndarray:
        """Linear-attention states one sequence's pass reads and writes, per layer: the one it starts from, and
        one per new token of a decode or verification, which keeps a state per verified position so the next step
        starts from the last accepted one (vllm/v1/attention/backends/gdn_attn.py: spec_state_indices_tensor, the
        first 1 + num_speculative_tokens state blocks of each request; third_party/flash_linear_attention/ops/
        fused_sigmoid_gating.py stores the state after every token and loads the one at num_accepted_tokens - 1):
        2 at decode, k + 2 verifying k drafts. A prefill chunk's chunked kernel writes its final state only: 2."""
        q = np.asarray(new_tokens, dtype=float)
        return 1.0 + np.where(q <= 1 + MAX_K, q, 1.0)

    # --- FLOPs ---------------------------------------------------------------------------------------------------
    def attention_flops_per_context_token(self, query_len: np.ndarray | float = 1.0, full: bool = True) -> np.ndarray:
        """FLOPs per query token, layer and attended token. GQA: QKᵀ and AV, 2 · d_attn each (PaLM App. B).
        MLA at decode runs the absorbed form: each head's query is mapped into the latent, scores against
        kv_lora_rank + qk_rope_head_dim elements and sums kv_lora_rank-wide values, 2 · (r + rope) + 2 · r per head
        (DeepSeek-V2, arXiv 2405.04434, §2.1.2 "absorb"; the absorptions themselves are kv_b_proj's parameters,
        counted with the weights). Prefill expands the latent: 2 · (nope + rope) + 2 · v_head_dim per head."""
        if not self.is_mla:
            head_dim = self._shape(full)[1]
            return np.full_like(np.asarray(query_len, dtype=float), 4.0 * self.num_heads * head_dim)
        absorbed = 2.0 * (self.kv_lora_rank + self.qk_rope_head_dim) + 2.0 * self.kv_lora_rank
        expanded = 2.0 * self.head_dim + 2.0 * self.v_head_dim
        return self.num_heads * np.where(np.asarray(query_len) <= MLA_DECODE_MAX_QUERY, absorbed, expanded)

    def flops_per_token(self, context: np.ndarray | float, query_len: np.ndarray | float = 1.0) -> np.ndarray:
        """Forward FLOPs for one token attending to `context` tokens (PaLM App. B): 2·N_active + attention,
        logits and fusion included."""
        return self.layer_flops_per_token(context, query_len) + 2.0 * (self.lm_head_params + self.fusion_params)

    def layer_flops_per_token(self, context: np.ndarray | float, query_len: np.ndarray | float = 1.0) -> np.ndarray:
        """The decoder layers' share: 2 FLOPs per active parameter, attention over the context, a DSA indexer's
        logits over every cached token (2 · heads · (head_dim + 1): the scores and their weighting), and the
        Gated-DeltaNet recurrence: per token about four state-sized multiply-adds (decay, S·k, the rank-1 update,
        S·q; Yang et al. 2024, Gated Delta Networks, eq. 10), 8 FLOPs per state element."""
        active = self.decoder_params(self.experts_per_token) * self.pass_fraction
        full, windowed = self._attended(context)
        attention = self.attention_flops_per_context_token(query_len) * full + \
            self.attention_flops_per_context_token(query_len, full=False) * windowed
        index = 2.0 * self.index_heads * (self.index_head_dim + 1) * self._index_reads(context)
        return 2.0 * active + attention + index + \
            8.0 * self.linear_layers * self.linear_state_elements * self.pass_fraction

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
