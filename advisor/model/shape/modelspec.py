"""What a model costs, from the architecture its config.json describes (advisor.model.shape.config_reader reads it):
parameters, weight bytes, KV-cache bytes, FLOPs.

Counts follow the transformer arithmetic of Kaplan et al. 2020 (Table 1) and Chowdhery et al. 2022 (PaLM,
App. B): a forward pass costs 2 FLOPs per parameter per token (one multiply, one add) plus attention,
4 · n_heads · head_dim FLOPs per layer per token of context (QKᵀ and AV are each 2 · d_attn · context).
Layers come in kinds, each counted as vLLM's model code builds it: full, sliding-window or chunked-local attention
(GQA, or MLA's latent cache), Gated-DeltaNet linear attention with a constant state, and dense or MoE MLPs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from advisor.errors import InputError
from advisor.model.shape.attention import AttentionCost
from advisor.model.shape.quantization import bytes_per_weight, quantized_parts

WIDE_BYTES = 2.0  # embeddings, lm_head, routers, EAGLE heads and unquantized weights: 16 bit
# "mtp_head": a model's own MTP layers run as the drafter (vllm/model_executor/models/deepseek_mtp.py): decoder blocks
# of the target's type behind a 2h x h fusion (eh_proj), sharing the target's embedding and lm_head.
KINDS = ("model", "eagle_head", "mtp_head")


@dataclass(frozen=True, slots=True)
class ModelSpec(AttentionCost):
    name: str  # display name
    hf_id: str  # what `vllm serve` is given: a Hugging Face repo id or a local directory
    family: str  # tokenizer family; draft and target must share one (vLLM checks vocab_size)
    kind: str  # "model", "eagle_head" (an EAGLE draft head riding on the target's hidden states) or "mtp_head"
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int  # < num_heads for grouped-query attention (GQA), which shrinks the KV cache
    head_dim: int  # query/key head size (MLA: qk_nope_head_dim + qk_rope_head_dim)
    intermediate_size: int  # per expert for mixture-of-experts models
    num_experts: int = 1  # 1 for dense models
    experts_per_token: int = 1  # top-k routing for MoE
    tied_embeddings: bool = False  # lm_head shares the input embedding matrix
    sliding_window: int | None = None  # window of the sliding-window layers (Gemma-2 alternates), tokens
    sliding_layers: int = 0  # how many layers use the window
    lm_head_vocab: int | None = None  # EAGLE-3 heads predict over a reduced draft vocabulary
    published_params_b: float | None = None  # the model card's count, for sanity checks
    trained_for: str = ""  # EAGLE heads: the target model the head was trained on (profile metadata)
    max_context: int | None = None  # the longest --max-model-len vLLM accepts, tokens (`vllm.derived_max_model_len`)
    mtp_layers: int = 0  # the model's own multi-token-prediction layers (num_nextn_predict_layers), not in num_layers
    # MLA (DeepSeek-V2/V3, Kimi-K2): 0 = not MLA. The cache holds one latent of kv_lora_rank + qk_rope_head_dim
    # per token per layer, shared by all heads (vllm/model_executor/models/deepseek_v2.py `DeepseekV2MLAAttention`).
    kv_lora_rank: int = 0
    # DeepSeek sparse attention (DSA: V3.2, GLM-5): a lightning indexer picks index_topk cached tokens per query, which
    # is all the sparse MLA attends (vllm/models/deepseek_v32/attention.py `DeepseekV32Attention`); 0: none.
    index_topk: int = 0
    index_layers: int = 0  # layers with an indexer of their own (GLM-5.2's others reuse the previous one's top-k)
    index_heads: int = 0  # index_n_heads
    index_head_dim: int = 0  # index_head_dim: the indexer's key (cached in fp8 with its scales) and query head size
    q_lora_rank: int = 0  # 0: queries projected straight from the hidden state
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    gated_attention: bool = False  # q_proj also emits an output gate (Qwen3-Next `attn_output_gate`)
    # Full-attention layers shaped unlike the others (Gemma-4: global_head_dim, num_global_key_value_heads); 0: same
    global_head_dim: int = 0
    global_kv_heads: int = 0
    # MoE beyond Mixtral
    shared_expert_intermediate_size: int = 0  # all shared experts of one MoE layer together (0: none)
    dense_layers: int = 0  # layers of an MoE model whose MLP is dense (first_k_dense_replace, interleaving)
    dense_intermediate_size: int = 0  # their MLP width (0: intermediate_size)
    # Chunked local attention (Llama-4): a token attends only within its attention_chunk-token chunk
    attention_chunk: int | None = None
    chunked_layers: int = 0
    # Linear attention (Gated DeltaNet, Qwen3-Next / Qwen3.5): layers with a constant per-sequence state, no KV
    linear_layers: int = 0
    linear_mixer_params: int = 0  # one such layer's projections, conv and gates
    linear_conv_channels: int = 0  # the causal conv's channels (conv state: channels x (kernel - 1))
    linear_conv_kernel: int = 0
    linear_state_elements: int = 0  # recurrent state per sequence per layer: v_heads · v_dim · k_dim
    linear_state_dtype_bytes: int = 2  # the recurrent state's bytes per element (Qwen3.5: mamba_ssm_dtype float32)
    # The checkpoint's own quantization (config.json quantization_config): its format and the parts left 16 bit
    quantization: str | None = None  # vLLM's quant_method
    quantized_dtype: str | None = None  # a format name of advisor.model.shape.quantization ("fp8", "int4-g128", ...)
    unquantized: tuple[str, ...] = ()  # quantization.PARTS the checkpoint keeps in 16 bit

    def __post_init__(self) -> None:
        for field in ("vocab_size", "hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim",
                      "intermediate_size", "num_experts", "experts_per_token"):
            if getattr(self, field) <= 0:
                raise InputError(f"model {self.name!r}: {field} must be positive, got {getattr(self, field)}")
        if self.num_heads % self.num_kv_heads:
            raise InputError(f"model {self.name!r}: num_attention_heads must be a multiple of num_key_value_heads")
        if self.kind not in KINDS:
            raise InputError(f"model {self.name!r}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.linear_layers >= self.num_layers or self.dense_layers > self.num_layers or \
                self.sliding_layers + self.chunked_layers > self.num_layers - self.linear_layers or \
                self.index_layers > self.num_layers:
            raise InputError(f"model {self.name!r}: its layer kinds add up to more than its {self.num_layers} layers")

    # --- layers -----------------------------------------------------------------------------------------
    @property
    def is_eagle3(self) -> bool:
        """EAGLE-3 heads predict over their own reduced vocabulary (draft_vocab_size) and fuse three target layers."""
        return self.kind == "eagle_head" and self.lm_head_vocab is not None

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def kv_layers(self) -> int:
        """Layers with a KV cache: all but the linear-attention ones."""
        return self.num_layers - self.linear_layers

    @property
    def moe_layers(self) -> int:
        return self.num_layers - self.dense_layers if self.num_experts > 1 else 0

    @property
    def pass_fraction(self) -> float:
        """The share of the layers one forward runs: an MTP head runs one of its layers per draft pass
        (deepseek_mtp.py `DeepSeekMultiTokenPredictor.forward`: layer spec_step_idx % num_mtp_layers)."""
        return 1.0 / self.num_layers if self.kind == "mtp_head" else 1.0

    @property
    def layers_per_pass(self) -> int:
        return 1 if self.kind == "mtp_head" else self.num_layers

    @property
    def expert_params_per_layer(self) -> int:
        """One gated MLP (SwiGLU/GeGLU: gate, up, down projections) per expert."""
        return 3 * self.hidden_size * self.intermediate_size

    def part_params(self, experts_touched: float | np.ndarray | None = None) -> dict[str, float | np.ndarray]:
        """Decoder weights of all layers by quantization part (`quantization.PARTS`, plus the 16-bit routers), with
        `experts_touched` routed experts per MoE layer (default all)."""
        h = self.hidden_size
        experts = self.num_experts if experts_touched is None else experts_touched
        dense_width = self.dense_intermediate_size or self.intermediate_size
        return {
            "attention": self.attention_params + self.linear_layers * self.linear_mixer_params,
            "mlp": ((self.num_layers - self.moe_layers) * 3 * h * dense_width
                    + self.moe_layers * 3 * h * self.shared_expert_intermediate_size),
            "experts": self.moe_layers * experts * self.expert_params_per_layer,
            "router": self.moe_layers * h * self.num_experts,
        }

    def decoder_params(self, experts_touched: float | np.ndarray | None = None) -> float | np.ndarray:
        return sum(self.part_params(experts_touched).values())

    # --- parameters -------------------------------------------------------------------------------------
    @property
    def embedding_params(self) -> int:
        """The input table. An EAGLE or MTP head borrows the target's, so it owns none."""
        return 0 if self.kind != "model" else self.vocab_size * self.hidden_size

    @property
    def lm_head_params(self) -> int:
        """The output projection (an EAGLE-1 head uses the target's; it still costs a read): vocabulary x hidden."""
        return (self.lm_head_vocab or self.vocab_size) * self.hidden_size

    @property
    def fusion_params(self) -> int:
        """The fusion layer one draft pass runs. EAGLE-1: fc(cat(token embedding, target hidden state)), 2h x h,
        inside every forward of the head (vllm/model_executor/models/llama_eagle.py, `LlamaModel.forward`);
        EAGLE-3 fuses three target layers' states, 3h x h, once per proposal on the first pass's tokens
        (llama_eagle3.py, `combine_hidden_states`, called by vllm/v1/spec_decode/llm_base_proposer.py `propose`).
        An MTP layer's eh_proj is 2h x h over cat(normed embedding, normed previous hidden state), in every pass
        (vllm/model_executor/models/deepseek_mtp.py, `DeepSeekMultiTokenPredictorLayer.forward`)."""
        if self.kind == "model":
            return 0
        return (3 if self.is_eagle3 else 2) * self.hidden_size * self.hidden_size

    @property
    def fuses_every_pass(self) -> bool:
        """Whether every draft pass runs the fusion layer (EAGLE-1, MTP), or only the first (EAGLE-3; models have
        none)."""
        return self.kind == "mtp_head" or (self.kind == "eagle_head" and not self.is_eagle3)

    @property
    def owns_lm_head(self) -> bool:
        """An MTP head's shared_head.head is replaced by the target's lm_head at load (vllm/v1/spec_decode/
        llm_base_proposer.py `_maybe_share_lm_head`: "Detected MTP model"), as is an EAGLE-1 head's."""
        return not self.tied_embeddings and not (self.kind == "mtp_head" or
                                                 (self.kind == "eagle_head" and self.lm_head_vocab is None))

    @property
    def total_params(self) -> int:
        """Every weight that must sit in memory (an MTP head: each of its layers with its eh_proj)."""
        fusion = self.fusion_params * (self.num_layers if self.kind == "mtp_head" else 1)
        return int(self.decoder_params() + self.embedding_params
                   + (self.lm_head_params if self.owns_lm_head else 0) + fusion)

    @property
    def active_params(self) -> int:
        """Weights one token multiplies by (MoE: only its top-k experts). The embedding is a gather, not a matmul."""
        return int(self.decoder_params(self.experts_per_token) + self.lm_head_params + self.fusion_params)

    def mtp_draft(self) -> ModelSpec:
        """The model's own MTP layers as a drafter: decoder blocks of its MoE/attention type (DeepSeek-V3's is an
        MoE block: its index is past first_k_dense_replace), full attention (a DSA model's with its own indexer:
        deepseek_v32/attention.py `is_mtp_layer`), own KV cache, no embedding or lm_head."""
        if self.mtp_layers < 1:
            raise InputError(f"{self.name} has no MTP layers (num_nextn_predict_layers is 0 or absent in its "
                             "config.json): --method mtp needs a model trained with them")
        return replace(self, name=f"{self.name} MTP", kind="mtp_head", num_layers=self.mtp_layers, mtp_layers=0,
                       dense_layers=0, linear_layers=0, sliding_layers=0, chunked_layers=0, sliding_window=None,
                       index_layers=self.mtp_layers if self.index_topk else 0,
                       tied_embeddings=False, published_params_b=None, trained_for=self.name)

    # --- bytes ------------------------------------------------------------------------------------------
    def _part_bytes(self, parts: dict, dtype: str) -> float | np.ndarray:
        quantized, narrow = quantized_parts(dtype, self.unquantized), bytes_per_weight(dtype)
        return sum(v * (narrow if k in quantized else WIDE_BYTES) for k, v in parts.items())

    def weight_bytes(self, dtype: str = "bf16") -> float:
        """Bytes in memory with the decoder's quantized parts in `dtype` (a `quantization` format name); embeddings,
        lm_head, routers and fusion layers stay 16 bit."""
        rest = self.total_params - self.decoder_params()
        return float(self._part_bytes(self.part_params(), dtype) + rest * WIDE_BYTES)

    def experts_touched(self, tokens: np.ndarray | float) -> np.ndarray | float:
        """Expected experts per layer that at least one of `tokens` routes to, assuming uniform top-k routing:
        an expert is missed by one token with probability 1 - k/E, by all of them with (1 - k/E)^tokens.
        This is why verifying k+1 tokens on an MoE reads several times the weights of one decode step."""
        if self.num_experts == 1:
            return np.ones_like(np.asarray(tokens, dtype=float))
        miss = 1.0 - self.experts_per_token / self.num_experts
        return self.num_experts * (1.0 - miss ** np.asarray(tokens, dtype=float))

    def expert_calls(self, tokens: np.ndarray | float) -> np.ndarray | float:
        """Routed experts one forward pass over `tokens` tokens runs, summed over the MoE layers it runs
        (`experts_touched` each; an MTP head's pass runs one layer): the grouped GEMMs' per-expert work. 0 for a
        dense model."""
        return self.moe_layers * self.pass_fraction * np.where(self.num_experts > 1, self.experts_touched(tokens), 0.0)

    def weight_bytes_read(self, tokens: np.ndarray | float, dtype: str = "bf16") -> np.ndarray:
        """Bytes of weights one forward step over `tokens` tokens streams from memory (embedding rows are
        gathered, not streamed; the lm_head and any fusion layer are streamed in full)."""
        return (self.layer_weight_bytes_read(tokens, dtype) + self.lm_head_bytes(dtype)
                + self.fusion_params * WIDE_BYTES)

    def expert_weight_bytes_read(self, tokens: np.ndarray | float, dtype: str = "bf16") -> np.ndarray:
        """The routed experts' share of `layer_weight_bytes_read`: what the grouped GEMMs stream (0 for a dense
        model), the part of a pass that hides under the MoE kernels' floors at small batch."""
        experts = {"experts": self.part_params(self.experts_touched(tokens))["experts"]}
        return self._part_bytes(experts, dtype) * self.pass_fraction

    def layer_weight_bytes_read(self, tokens: np.ndarray | float, dtype: str = "bf16") -> np.ndarray:
        """Bytes of the decoder layers' weights a forward over `tokens` tokens streams (MoE: the experts touched)."""
        return self._part_bytes(self.part_params(self.experts_touched(tokens)), dtype) * self.pass_fraction

    def lm_head_bytes(self, dtype: str = "bf16") -> float:
        """The output projection's bytes: 16 bit in every format (AWQ/GPTQ, fp8, NVFP4 and MXFP4 checkpoints leave
        lm_head unquantized; vLLM's ParallelLMHead takes no quantization method from them)."""
        return self.lm_head_params * WIDE_BYTES
