"""What a model's weights cost: parameters by quantization part, the bytes held in memory, and the bytes one forward
streams. A mixin of ModelSpec (advisor.model.shape.modelspec), whose fields it reads.

Each part is counted as vLLM's model code builds it: gated MLPs (gate, up and down: SwiGLU/GeGLU) or plain ones (up
and down: Nemotron-H's relu2, vllm/model_executor/models/nemotron_h.py `NemotronHMLP`); routed experts at the hidden
width, or at a latent width behind a down and an up projection (latent MoE: Nemotron-3 Super/Ultra's
moe_latent_size, `NemotronHMoE.fc1_latent_proj`/`fc2_latent_proj`; Kimi-K3's routed_expert_hidden_size,
vllm/models/kimi_k3/nvidia/model.py `KimiMoE.routed_expert_down_proj`/`routed_expert_up_proj`); lookup tables
gathered by token (n-gram embeddings) held in memory but never streamed.
"""

from __future__ import annotations

import numpy as np

from advisor.model.shape.quantization import bytes_per_weight, quantized_parts

WIDE_BYTES = 2.0  # embeddings, lm_head, routers, EAGLE heads and unquantized weights: 16 bit


class WeightCost:
    __slots__ = ()

    @property
    def dense_mlp_layers(self) -> int:
        """Layers whose MLP is a dense one: all but the MoE layers and the blocks without an MLP."""
        return self.num_layers - self.moe_layers - self.mlpless_layers

    @property
    def expert_width(self) -> int:
        """The width routed experts read and write: the latent width of a latent MoE, else the hidden size."""
        return self.expert_hidden_size or self.hidden_size

    @property
    def expert_params_per_layer(self) -> int:
        """One MLP per expert: gate, up and down projections (`mlp_projections` 3), or up and down (2)."""
        return self.mlp_projections * self.expert_width * self.intermediate_size

    def part_params(self, experts_touched: float | np.ndarray | None = None) -> dict[str, float | np.ndarray]:
        """Decoder weights of all layers by quantization part (`quantization.PARTS`, plus the 16-bit routers and
        `wide_params`), with `experts_touched` routed experts per MoE layer (default all). A latent MoE's two
        projections (h x l each) count with the dense MLPs."""
        h = self.hidden_size
        experts = self.num_experts if experts_touched is None else experts_touched
        dense_width = self.dense_intermediate_size or self.intermediate_size
        latent = 2 * h * self.expert_hidden_size
        return {
            "attention": (self.mixer_params or self.attention_params) + self.linear_layers * self.linear_mixer_params,
            "mlp": (self.dense_mlp_layers * self.mlp_projections * h * dense_width
                    + self.moe_layers * (self.mlp_projections * h * self.shared_expert_intermediate_size + latent)),
            "experts": self.moe_layers * experts * self.expert_params_per_layer,
            "router": self.moe_layers * h * self.num_experts,
            "wide": self.wide_params,
        }

    def decoder_params(self, experts_touched: float | np.ndarray | None = None) -> float | np.ndarray:
        return sum(self.part_params(experts_touched).values())

    # --- parameters -------------------------------------------------------------------------------------
    @property
    def embedding_params(self) -> int:
        """The input table. An EAGLE, MTP or DFlash/DSpark head borrows the target's, so it owns none."""
        return 0 if self.kind != "model" else self.vocab_size * self.hidden_size

    @property
    def lm_head_params(self) -> int:
        """The output projection (an EAGLE-1 head uses the target's; it still costs a read): vocabulary x hidden."""
        return (self.lm_head_vocab or self.vocab_size) * self.hidden_size

    @property
    def owned_fusion_params(self) -> int:
        """The fusion weights a drafter holds beyond its layers (`fusion_params` less the layers' own K/V
        projections a DFlash head runs again over the context)."""
        return self.fusion_params - self.context_kv_params

    @property
    def total_params(self) -> int:
        """Every weight that must sit in memory (an MTP head: each of its layers with its eh_proj; a DSpark head: its
        Markov head; a model with n-gram tables: those tables)."""
        fusion = self.owned_fusion_params * (self.num_layers if self.kind == "mtp_head" else 1)
        return int(self.decoder_params() + self.embedding_params + self.lookup_params + self.head_extra_params
                   + (self.lm_head_params if self.owns_lm_head else 0) + fusion)

    @property
    def active_params(self) -> int:
        """Weights one token multiplies by (MoE: only its top-k experts). Embeddings are gathers, not matmuls."""
        return int(self.decoder_params(self.experts_per_token) + self.lm_head_params + self.fusion_params)

    # --- bytes ------------------------------------------------------------------------------------------
    def _part_bytes(self, parts: dict, dtype: str) -> float | np.ndarray:
        """Bytes of `parts` with the quantized ones in `dtype`; a mixed-precision checkpoint served as itself keeps
        each part its own format (`part_formats`)."""
        quantized, narrow = quantized_parts(dtype, self.unquantized), bytes_per_weight(dtype)
        own = dict(self.part_formats) if dtype == self.quantized_dtype else {}
        return sum(v * (bytes_per_weight(own[k]) if k in own else narrow if k in quantized else WIDE_BYTES)
                   for k, v in parts.items())

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
