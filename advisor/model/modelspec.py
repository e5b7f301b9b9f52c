"""What a model costs, derived from its Hugging Face config.json: parameters, weight bytes, KV bytes, FLOPs.

Counts follow the transformer arithmetic of Kaplan et al. 2020 (Table 1) and Chowdhery et al. 2022 (PaLM,
App. B): a forward pass costs 2 FLOPs per parameter per token (one multiply, one add) plus attention,
4 · n_heads · head_dim FLOPs per layer per token of context (QKᵀ and AV are each 2 · d_attn · context).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.errors import InputError

# Bytes per weight. int4 (AWQ/GPTQ, group size 128) also stores a 16-bit scale and zero point per group:
# 0.5 + 4/128 bytes per weight.
BYTES_PER_PARAM = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int4": 0.5 + 4 / 128}


@dataclass(frozen=True, slots=True)
class ModelSpec:
    name: str  # display name
    hf_id: str  # what `vllm serve` is given: a Hugging Face repo id or a local directory
    family: str  # tokenizer family; draft and target must share one (vLLM checks vocab_size)
    kind: str  # "model" or "eagle_head" (a one-layer EAGLE draft head riding on the target's hidden states)
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int  # < num_heads for grouped-query attention (GQA), which shrinks the KV cache
    head_dim: int
    intermediate_size: int  # per expert for mixture-of-experts models
    num_experts: int = 1  # 1 for dense models
    experts_per_token: int = 1  # top-k routing for MoE
    tied_embeddings: bool = False  # lm_head shares the input embedding matrix
    sliding_window: int | None = None  # window of the sliding-window layers (Gemma-2 alternates), tokens
    sliding_layers: int = 0  # how many layers use the window
    lm_head_vocab: int | None = None  # EAGLE-3 heads predict over a reduced draft vocabulary
    published_params_b: float | None = None  # the model card's count, for sanity checks
    trained_for: str = ""  # EAGLE heads: the target model the head was trained on (profile metadata)
    max_context: int | None = None  # max_position_embeddings: the longest --max-model-len vLLM accepts, tokens

    def __post_init__(self) -> None:
        for field in ("vocab_size", "hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim",
                      "intermediate_size", "num_experts", "experts_per_token"):
            if getattr(self, field) <= 0:
                raise InputError(f"model {self.name!r}: {field} must be positive, got {getattr(self, field)}")
        if self.num_heads % self.num_kv_heads:
            raise InputError(f"model {self.name!r}: num_attention_heads must be a multiple of num_key_value_heads")
        if self.kind not in ("model", "eagle_head"):
            raise InputError(f"model {self.name!r}: kind must be 'model' or 'eagle_head', got {self.kind!r}")

    # --- parameters -------------------------------------------------------------------------------------
    @property
    def is_eagle3(self) -> bool:
        """EAGLE-3 heads predict over their own reduced vocabulary (draft_vocab_size) and fuse three target layers."""
        return self.kind == "eagle_head" and self.lm_head_vocab is not None

    @property
    def attention_params_per_layer(self) -> int:
        q_out = self.num_heads * self.head_dim
        kv_out = self.num_kv_heads * self.head_dim
        qkv_in = 2 * self.hidden_size if self.is_eagle3 else self.hidden_size  # EAGLE-3: [embedding, fused state]
        return qkv_in * (q_out + 2 * kv_out) + q_out * self.hidden_size

    @property
    def expert_params_per_layer(self) -> int:
        """One gated MLP (SwiGLU/GeGLU: gate, up, down projections) per expert."""
        return 3 * self.hidden_size * self.intermediate_size

    @property
    def embedding_params(self) -> int:
        """The input table. An EAGLE head borrows the target's, so it owns none."""
        return 0 if self.kind == "eagle_head" else self.vocab_size * self.hidden_size

    @property
    def lm_head_params(self) -> int:
        """The output projection (an EAGLE-1 head uses the target's; it still costs a read): vocabulary x hidden."""
        return (self.lm_head_vocab or self.vocab_size) * self.hidden_size

    @property
    def fusion_params(self) -> int:
        """EAGLE's fusion layer. EAGLE-1: fc(cat(token embedding, target hidden state)), 2h x h, inside every forward
        of the head (vllm/model_executor/models/llama_eagle.py, `LlamaModel.forward`); EAGLE-3 fuses three target
        layers' states, 3h x h, once per proposal on the first pass's tokens (llama_eagle3.py,
        `combine_hidden_states`, called by vllm/v1/spec_decode/llm_base_proposer.py `propose`)."""
        if self.kind != "eagle_head":
            return 0
        return (3 if self.is_eagle3 else 2) * self.hidden_size * self.hidden_size

    @property
    def fuses_every_pass(self) -> bool:
        """Whether every draft pass runs the fusion layer (EAGLE-1), or only the first (EAGLE-3; models have none)."""
        return self.kind == "eagle_head" and not self.is_eagle3

    def layer_params(self, experts_touched: float | np.ndarray | None = None) -> float | np.ndarray:
        experts = self.num_experts if experts_touched is None else experts_touched
        router = self.hidden_size * self.num_experts if self.num_experts > 1 else 0
        return self.attention_params_per_layer + experts * self.expert_params_per_layer + router

    @property
    def total_params(self) -> int:
        """Every weight that must sit in memory."""
        owns_lm_head = not self.tied_embeddings and not (self.kind == "eagle_head" and self.lm_head_vocab is None)
        return int(self.num_layers * self.layer_params() + self.embedding_params
                   + (self.lm_head_params if owns_lm_head else 0) + self.fusion_params)

    @property
    def active_params(self) -> int:
        """Weights one token multiplies by (MoE: only its top-k experts). The embedding is a gather, not a matmul."""
        return int(self.num_layers * self.layer_params(self.experts_per_token) + self.lm_head_params
                   + self.fusion_params)

    def weight_bytes(self, dtype: str = "bf16") -> float:
        return self.total_params * BYTES_PER_PARAM[dtype]

    def experts_touched(self, tokens: np.ndarray | float) -> np.ndarray | float:
        """Expected experts per layer that at least one of `tokens` routes to, assuming uniform top-k routing:
        an expert is missed by one token with probability 1 - k/E, by all of them with (1 - k/E)^tokens.
        This is why verifying k+1 tokens on an MoE reads several times the weights of one decode step."""
        if self.num_experts == 1:
            return np.ones_like(np.asarray(tokens, dtype=float))
        miss = 1.0 - self.experts_per_token / self.num_experts
        return self.num_experts * (1.0 - miss ** np.asarray(tokens, dtype=float))

    def weight_bytes_read(self, tokens: np.ndarray | float, dtype: str = "bf16") -> np.ndarray:
        """Bytes of weights one forward step over `tokens` tokens streams from memory (embedding rows are
        gathered, not streamed; the lm_head and any fusion layer are streamed in full)."""
        return (self.layer_weight_bytes_read(tokens, dtype) + self.lm_head_bytes(dtype)
                + self.fusion_params * BYTES_PER_PARAM[dtype])

    def layer_weight_bytes_read(self, tokens: np.ndarray | float, dtype: str = "bf16") -> np.ndarray:
        """Bytes of the decoder layers' weights a forward over `tokens` tokens streams (MoE: the experts touched)."""
        return self.num_layers * self.layer_params(self.experts_touched(tokens)) * BYTES_PER_PARAM[dtype]

    def lm_head_bytes(self, dtype: str = "bf16") -> float:
        """The output projection's bytes. AWQ/GPTQ checkpoints keep lm_head unquantized (16 bit); fp8 checkpoints
        (compressed-tensors, vLLM's online fp8) also leave it in 16 bit."""
        return self.lm_head_params * BYTES_PER_PARAM["bf16" if dtype in ("int4", "fp8") else dtype]

    # --- KV cache and FLOPs -----------------------------------------------------------------------------
    def kv_bytes_per_token(self, kv_dtype_bytes: float = 2.0) -> float:
        """K and V for every layer: 2 · layers · kv_heads · head_dim · bytes (GQA shares K/V across query heads)."""
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * kv_dtype_bytes

    def attended_tokens(self, context: np.ndarray | float) -> np.ndarray:
        """Context tokens summed over layers: sliding-window layers look back at most `sliding_window` tokens."""
        context = np.asarray(context, dtype=float)
        full = (self.num_layers - self.sliding_layers) * context
        if not self.sliding_layers:
            return full
        return full + self.sliding_layers * np.minimum(context, self.sliding_window)

    def kv_bytes_read(self, context: np.ndarray | float, kv_dtype_bytes: float = 2.0) -> np.ndarray:
        """KV bytes one sequence reads per step at `context` tokens (every layer reads its whole window)."""
        per_layer_token = 2 * self.num_kv_heads * self.head_dim * kv_dtype_bytes
        return self.attended_tokens(context) * per_layer_token

    def flops_per_token(self, context: np.ndarray | float) -> np.ndarray:
        """Forward FLOPs for one token attending to `context` tokens (PaLM App. B): 2·N_active + 4·d_attn·Σ ctx,
        logits and fusion included."""
        return self.layer_flops_per_token(context) + 2.0 * (self.lm_head_params + self.fusion_params)

    def layer_flops_per_token(self, context: np.ndarray | float) -> np.ndarray:
        """The decoder layers' share: 2 FLOPs per active layer parameter, plus attention over the context."""
        d_attn = self.num_heads * self.head_dim
        active = self.num_layers * self.layer_params(self.experts_per_token)
        return 2.0 * active + 4.0 * d_attn * self.attended_tokens(context)

    def activation_bytes_per_token(self, act_dtype_bytes: float = 2.0) -> float:
        """Hidden-state traffic per token through the decoder layers, unfused: each layer's six kernels (qkv,
        attention, o, gate/up, act, down) read and write about 9·h + 6·I elements. Small next to weights except in
        prefill. (The fp32 logits are written per sampled row: `logits_bytes_per_row`.)"""
        inter = self.intermediate_size * self.experts_per_token
        return self.num_layers * (9 * self.hidden_size + 6 * inter) * act_dtype_bytes

    def logits_bytes_per_row(self) -> float:
        """fp32 logits written for one sampled position."""
        return 4.0 * (self.lm_head_vocab or self.vocab_size)


def _kind(cfg: dict[str, Any]) -> str:
    """An EAGLE head, as vLLM recognises one from its config: an architecture named for EAGLE (EagleLlamaForCausalLM,
    LlamaForCausalLMEagle3, ...) or a reduced draft vocabulary (`draft_vocab_size`, EAGLE-3). A plain one-layer
    config can be an EAGLE-1 head too; that is only known from --method eagle (resolve.check_pair)."""
    eagle_arch = any("eagle" in str(a).lower() for a in cfg.get("architectures") or ())
    return "eagle_head" if eagle_arch or cfg.get("draft_vocab_size") else "model"


def spec_from_config(config: dict[str, Any], name: str, hf_id: str | None = None) -> ModelSpec:
    """Build a ModelSpec from a config.json dict (plus our optional `_specadvisor` metadata block)."""
    meta = config.get("_specadvisor", {})
    cfg = config.get("text_config", config)  # multimodal configs nest the language model

    def need(key: str) -> Any:
        if key not in cfg or cfg[key] is None:
            raise InputError(f"config.json for {name!r} has no {key!r}: is it a decoder-only language model?")
        return cfg[key]

    try:
        hidden, heads = int(need("hidden_size")), int(need("num_attention_heads"))
        layers = int(need("num_hidden_layers"))
        window = cfg.get("sliding_window") if cfg.get("use_sliding_window", True) else None
        if window and window >= cfg.get("max_position_embeddings", 0):
            window = None  # a window as long as the context is no window
        sliding = 0
        if window:
            # Gemma-2 alternates sliding and global layers; Mistral-style configs slide on every layer.
            sliding = layers // 2 if cfg.get("model_type") == "gemma2" else layers
        return ModelSpec(
            name=meta.get("name", name),
            hf_id=hf_id or meta.get("hf_id", name),
            family=meta.get("family", cfg.get("model_type", "unknown")),
            kind=meta.get("kind", _kind(cfg)),
            vocab_size=int(need("vocab_size")),
            hidden_size=hidden,
            num_layers=layers,
            num_heads=heads,
            num_kv_heads=int(cfg.get("num_key_value_heads") or heads),
            head_dim=int(cfg.get("head_dim") or hidden // heads),
            intermediate_size=int(need("intermediate_size")),
            num_experts=int(cfg.get("num_local_experts") or cfg.get("num_experts") or 1),
            experts_per_token=int(cfg.get("num_experts_per_tok") or 1),
            # Gemma's configs omit the key and its config class defaults to tied; others default to untied.
            tied_embeddings=bool(cfg.get("tie_word_embeddings", cfg.get("model_type", "").startswith("gemma"))),
            sliding_window=int(window) if window else None,
            sliding_layers=sliding,
            lm_head_vocab=int(cfg["draft_vocab_size"]) if cfg.get("draft_vocab_size") else None,
            published_params_b=meta.get("published_params_b"),
            trained_for=str(meta.get("target", "")),
            max_context=int(cfg["max_position_embeddings"]) if cfg.get("max_position_embeddings") else None,
        )
    except (TypeError, ValueError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"config.json for {name!r} has a malformed value: {exc}") from None
