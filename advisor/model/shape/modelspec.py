"""What a model costs, from the architecture its config.json describes (advisor.model.shape.config_reader reads it):
parameters, weight bytes, KV-cache bytes, FLOPs.

Counts follow the transformer arithmetic of Kaplan et al. 2020 (Table 1) and Chowdhery et al. 2022 (PaLM,
App. B): a forward pass costs 2 FLOPs per parameter per token (one multiply, one add) plus attention,
4 · n_heads · head_dim FLOPs per layer per token of context (QKᵀ and AV are each 2 · d_attn · context).
Layers come in kinds, each counted as vLLM's model code builds it: full, sliding-window, chunked-local, block-sparse
or compressed attention (GQA, or MLA's latent cache), linear attention with a constant state (Gated DeltaNet, KDA,
Mamba2), and dense or MoE MLPs; a hybrid's block may hold a mixer or an MLP alone (Nemotron-H). Weights:
advisor.model.shape.weights; the cache: advisor.model.shape.attention.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from advisor.errors import InputError
from advisor.model.shape.attention import AttentionCost
from advisor.model.shape.draft_heads import BlockDrafter
from advisor.model.shape.weights import WIDE_BYTES, WeightCost

__all__ = ["KINDS", "WIDE_BYTES", "ModelSpec"]
# "mtp_head": a model's own MTP layers run as the drafter (vllm/model_executor/models/deepseek_mtp.py): decoder blocks
# of the target's type behind a 2h x h fusion (eh_proj), sharing the target's embedding and lm_head. "block_head": a
# DFlash or DSpark drafter (advisor.model.shape.draft_heads): its layers over a block of mask queries, context K/V
# projected from the target's hidden states, the target's embedding and lm_head shared.
KINDS = ("model", "eagle_head", "mtp_head", "block_head")


@dataclass(frozen=True, slots=True)
class ModelSpec(AttentionCost, WeightCost):
    name: str  # display name
    hf_id: str  # what `vllm serve` is given: a Hugging Face repo id or a local directory
    family: str  # tokenizer family; draft and target must share one (vLLM checks vocab_size)
    kind: str  # KINDS: "model", "eagle_head" (an EAGLE head on the target's hidden states), "mtp_head", "block_head"
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
    sparse_layers: int = 0  # full layers that attend only the index_topk tokens (0: all of them, as DSA's)
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
    part_formats: tuple[tuple[str, str], ...] = ()  # mixed precision: (part, format) stored unlike quantized_dtype
    # Hybrid blocks (Nemotron-H's hybrid_override_pattern: each block a Mamba2 mixer, an attention, an MoE or an MLP)
    mixerless_layers: int = 0  # blocks with an MLP and no token mixer
    mlpless_layers: int = 0  # blocks with a token mixer and no MLP
    mlp_projections: int = 3  # matrices per MLP and per expert: 3 gated (SwiGLU), 2 plain (relu2 up and down)
    expert_hidden_size: int = 0  # latent MoE: the width the routed experts run at (0: hidden_size)
    mixer_params: int = 0  # the attention layers' projections as the reader counted them (0: from the shape above)
    lookup_params: int = 0  # tables gathered by token and never streamed (n-gram embeddings: Qwen4-exp PLE, Engram)
    # 16-bit decoder weights outside the parts above, streamed every pass and never quantized (hyper-connection
    # mixing maps, DeepSeek-V4's KV compressors, n-gram projections)
    wide_params: int = 0
    # Compressed caches beside a sliding window (DeepSeek-V4 `compress_ratios`), per ratio: (ratio, layers attending
    # them, layers caching them, top-k): one latent row per `ratio` tokens, attended whole (top-k 0) or the top-k its
    # indexer picks (V4.1's layers read the cache of a source layer below them)
    compressed: tuple[tuple[int, int, int, int], ...] = ()
    index_compress: float = 1.0  # the indexers cache one key per this many tokens (DeepSeek-V4, Qwen4-exp QSA: 4)
    fixed_kv_row_bytes: int = 0  # a cache row whose format the model fixes whatever --kv-cache-dtype (0: not fixed)
    block: BlockDrafter | None = None  # a DFlash/DSpark head, or an EAGLE-3 head that drafts in parallel (P-EAGLE)
    dspark_block: int = 0  # the block of a target's own DSpark stages (DeepSeek-V4.1's dspark_block_size); 0: none

    def __post_init__(self) -> None:
        for field in ("vocab_size", "hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim",
                      "intermediate_size", "num_experts", "experts_per_token"):
            if getattr(self, field) <= 0:
                raise InputError(f"model {self.name!r}: {field} must be positive, got {getattr(self, field)}")
        if self.num_heads % self.num_kv_heads:
            raise InputError(f"model {self.name!r}: num_attention_heads must be a multiple of num_key_value_heads")
        if self.kind not in KINDS:
            raise InputError(f"model {self.name!r}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        mixers = self.num_layers - self.linear_layers - self.mixerless_layers
        if mixers < 1 or self.dense_layers + self.mlpless_layers > self.num_layers or \
                self.sliding_layers + self.chunked_layers > mixers or self.index_layers > self.num_layers or \
                self.mlp_projections not in (2, 3) or (self.kind == "block_head") != (
                    self.block is not None and self.block.method != "eagle3"):
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
        """Layers with a KV cache: all but the linear-attention ones and the blocks without a mixer."""
        return self.num_layers - self.linear_layers - self.mixerless_layers

    @property
    def moe_layers(self) -> int:
        return self.num_layers - self.dense_layers - self.mlpless_layers if self.num_experts > 1 else 0

    @property
    def pass_fraction(self) -> float:
        """The share of the layers one forward runs: an MTP head runs one of its layers per draft pass
        (deepseek_mtp.py `DeepSeekMultiTokenPredictor.forward`: layer spec_step_idx % num_mtp_layers)."""
        return 1.0 / self.num_layers if self.kind == "mtp_head" else 1.0

    @property
    def layers_per_pass(self) -> int:
        return 1 if self.kind == "mtp_head" else self.num_layers

    # --- what a drafter fuses ----------------------------------------------------------------------------
    @property
    def context_kv_params(self) -> int:
        """A DFlash/DSpark head's k and v projections, run a second time over every context token to write the
        draft's KV cache from the target's hidden states (qwen3_dflash.py `_project_context_kv`); 0 for any other."""
        if self.kind != "block_head":
            return 0
        return sum(layers * self.hidden_size * 2 * heads * dim for layers, heads, dim in self.kv_layer_shapes)

    @property
    def fusion_params(self) -> int:
        """The fusion layer one draft pass runs. EAGLE-1: fc(cat(token embedding, target hidden state)), 2h x h,
        inside every forward of the head (vllm/model_executor/models/llama_eagle.py, `LlamaModel.forward`);
        EAGLE-3 fuses three target layers' states, 3h x h, once per proposal on the first pass's tokens
        (llama_eagle3.py, `combine_hidden_states`, called by vllm/v1/spec_decode/llm_base_proposer.py `propose`).
        An MTP layer's eh_proj is 2h x h over cat(normed embedding, normed previous hidden state), in every pass
        (vllm/model_executor/models/deepseek_mtp.py, `DeepSeekMultiTokenPredictorLayer.forward`). A DFlash/DSpark
        head fuses its target layers, taps·h x h, and projects the result into its K/V (`context_kv_params`), over
        the context tokens of each step."""
        if self.kind == "model":
            return 0
        if self.kind == "block_head":
            return self.block.taps * self.hidden_size * self.hidden_size + self.context_kv_params
        return (3 if self.is_eagle3 else 2) * self.hidden_size * self.hidden_size

    @property
    def head_extra_params(self) -> int:
        """A DSpark head's Markov head (markov_w1 V x r, gathered; markov_w2 r x V) and confidence head (h + r)."""
        if self.block is None or not self.block.markov_rank:
            return 0
        rank = self.block.markov_rank
        return 2 * self.vocab_size * rank + (self.hidden_size + rank if self.block.confidence_head else 0)

    @property
    def fuses_every_pass(self) -> bool:
        """Whether every draft pass runs the fusion layer (EAGLE-1, MTP), or only the first (EAGLE-3; models have
        none)."""
        return self.kind == "mtp_head" or (self.kind == "eagle_head" and not self.is_eagle3)

    @property
    def owns_lm_head(self) -> bool:
        """An MTP head's shared_head.head is replaced by the target's lm_head at load (vllm/v1/spec_decode/
        llm_base_proposer.py `_maybe_share_lm_head`: "Detected MTP model"), as is an EAGLE-1 head's and a DFlash or
        DSpark head's of the target's vocabulary (v1/worker/gpu/spec_decode/dflash/utils.py `load_dflash_model`)."""
        return not self.tied_embeddings and not (self.kind in ("mtp_head", "block_head") or
                                                 (self.kind == "eagle_head" and self.lm_head_vocab is None))

    def mtp_draft(self) -> ModelSpec:
        """The model's own MTP layers as a drafter: decoder blocks of its MoE/attention type (DeepSeek-V3's is an
        MoE block: its index is past first_k_dense_replace), full attention (a DSA model's with its own indexer:
        deepseek_v32/attention.py `is_mtp_layer`), own KV cache, no embedding or lm_head."""
        if self.mtp_layers < 1:
            raise InputError(f"{self.name} has no MTP layers (num_nextn_predict_layers is 0 or absent in its "
                             "config.json): --method mtp needs a model trained with them")
        return replace(self, name=f"{self.name} MTP", kind="mtp_head", num_layers=self.mtp_layers, mtp_layers=0,
                       dense_layers=0, linear_layers=0, sliding_layers=0, chunked_layers=0, sliding_window=None,
                       mixerless_layers=0, mlpless_layers=0, compressed=(), lookup_params=0, wide_params=0,
                       mixer_params=0 if not self.mixer_params else self.mixer_params // self.num_layers,
                       index_layers=self.mtp_layers if self.index_topk else 0, dspark_block=0,
                       tied_embeddings=False, published_params_b=None, trained_for=self.name)
