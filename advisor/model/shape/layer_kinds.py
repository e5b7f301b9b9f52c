"""Layer kinds, read from whichever list a config.json states them in, so that a model is read by what its layers
are rather than by its model_type: every kind named must be one modelled here, and any other is refused by name.

The lists, as the configs and vLLM 0.32's model files spell them (paths under vllm/model_executor/models/ unless
said):
- `layer_types`: full_attention, sliding_attention, chunked_attention, linear_attention (Gated DeltaNet) per layer
  (transformers' own key; qwen3_next.py, gemma3.py, gpt_oss.py);
- `hybrid_override_pattern`: one character per block, M a Mamba2 mixer, * attention, E an MoE, - a dense MLP
  (nemotron_h.py `NemotronHModel`: a block holds one of them);
- `layers_block_type`: the same blocks by name (mamba, attention, moe, mlp; transformers 5 writes linear_attention
  and full_attention for the first two);
- `linear_attn_config`: kda_layers and full_attn_layers, numbered from 1 (transformers_utils/configs/kimi_linear.py
  `is_kda_layer`);
- `hybrid_layer_pattern`: 1 a sliding-window layer, 0 a full one (mimo_v2.py);
- `attn_type_list`: 1 softmax attention, 0 lightning (linear) attention (minimax_m2.py / MiniMax-Text-01).
MLPs: `mlp_layer_types` (transformers 5: dense, sparse, moe, hash_moe), `moe_layer_freq` (a per-layer 0/1 list or
a period), `first_k_dense_replace`, `mlp_only_layers`, `decoder_sparse_step`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.errors import InputError

# layer_types names -> mixer kind
MIXERS = {"full_attention": "full", "attention": "full", "sliding_attention": "sliding",
          "chunked_attention": "chunked", "linear_attention": "linear",
          # transformers 5's names: Qwen4-exp's QSA layers (full attention through an indexer); DeepSeek-V4's layers
          # that keep a compressed cache beside their sliding window (its reader reads the ratios: compress_rates)
          "indexed_attention": "full", "compressed_sparse_attention": "sliding",
          "heavily_compressed_attention": "sliding"}
# hybrid_override_pattern characters and layers_block_type names -> (mixer, MLP) of the block
BLOCKS = {"M": ("linear", None), "*": ("full", None), "E": (None, "moe"), "-": (None, "dense"),
          "mamba": ("linear", None), "attention": ("full", None), "moe": (None, "moe"), "mlp": (None, "dense"),
          # as transformers 5 saves Nemotron-H (configuration_nemotron_h.py: layers_block_type)
          "linear_attention": ("linear", None), "full_attention": ("full", None)}
# transformers 5's mlp_layer_types (Kimi-Linear, MiMo-V2, Step-3.5, DeepSeek-V4): a dense MLP or an MoE per layer
MLPS = {"dense": "dense", "mlp": "dense", "sparse": "moe", "moe": "moe", "hash_moe": "moe"}
MODELLED = ("full_attention", "sliding_attention", "chunked_attention", "linear_attention (Gated DeltaNet, KDA, "
            "Mamba2)", "MLA", "block-sparse and compressed attention", "dense and MoE MLPs", "MTP layers")


@dataclass(frozen=True, slots=True)
class Plan:
    """How many blocks of a model hold each mixer and each MLP."""

    layers: int
    linear: int = 0  # linear-attention mixers (Gated DeltaNet, KDA, Mamba2)
    sliding: int = 0
    chunked: int = 0
    mixerless: int = 0  # blocks with an MLP only
    mlpless: int = 0  # blocks with a mixer only
    dense: int = 0  # dense MLPs in a model whose other MLPs are MoE (0 where every MLP is MoE or the model is dense)
    moe_from_pattern: bool = False  # the blocks themselves say which MLPs are MoE (E / moe)


def refuse(kind: object, where: str, name: str) -> InputError:
    return InputError(f"config.json for {name!r}: layer kind {kind!r} ({where}) is not modelled; modelled kinds: "
                      f"{', '.join(MODELLED)}")


def _blocks(items: list, where: str, name: str) -> Plan:
    mixers, mlps = [], []
    for i, item in enumerate(items):
        if item not in BLOCKS:
            raise refuse(item, f"{where}[{i}]", name)
        mixer, mlp = BLOCKS[item]
        mixers.append(mixer)
        mlps.append(mlp)
    return Plan(layers=len(items), linear=mixers.count("linear"), mixerless=mixers.count(None),
                mlpless=mlps.count(None), dense=mlps.count("dense") if "moe" in mlps else 0,
                moe_from_pattern="moe" in mlps)


def _listed(cfg: dict[str, Any], key: str, layers: int, name: str) -> list:
    value = cfg[key]
    if not isinstance(value, list) or len(value) != layers:
        raise InputError(f"config.json for {name!r}: {key} must list num_hidden_layers = {layers} layers")
    return value


def mixer_plan(cfg: dict[str, Any], layers: int, name: str, *, every: int = 0) -> Plan:
    """The blocks' mixers (and, for the block patterns, their MLPs) from whichever list the config has; none: every
    layer full attention, or `every`-th full and the rest linear where the model type says so (Qwen3-Next)."""
    if isinstance(cfg.get("hybrid_override_pattern"), str):
        return _blocks(list(cfg["hybrid_override_pattern"]), "hybrid_override_pattern", name)
    if isinstance(cfg.get("layers_block_type"), list):
        return _blocks(list(cfg["layers_block_type"]), "layers_block_type", name)
    if isinstance(cfg.get("linear_attn_config"), dict):
        linear = cfg["linear_attn_config"].get("kda_layers") or []
        if any(isinstance(i, bool) or not isinstance(i, int) or not 1 <= i <= layers for i in linear):
            raise InputError(f"config.json for {name!r}: linear_attn_config.kda_layers must number layers 1.."
                             f"{layers}")
        return Plan(layers=layers, linear=len(set(linear)))
    if cfg.get("layer_types"):
        kinds = []
        for i, kind in enumerate(_listed(cfg, "layer_types", layers, name)):
            if kind not in MIXERS:
                raise refuse(kind, f"layer_types[{i}]", name)
            kinds.append(MIXERS[kind])
        return Plan(layers=layers, linear=kinds.count("linear"), sliding=kinds.count("sliding"),
                    chunked=kinds.count("chunked"))
    if cfg.get("hybrid_layer_pattern") is not None:
        pattern = _listed(cfg, "hybrid_layer_pattern", layers, name)
        if any(p not in (0, 1) for p in pattern):
            raise InputError(f"config.json for {name!r}: hybrid_layer_pattern holds 0 (full) or 1 (sliding) per layer")
        return Plan(layers=layers, sliding=pattern.count(1))
    if cfg.get("attn_type_list") is not None:
        kinds = _listed(cfg, "attn_type_list", layers, name)
        if any(k != 1 for k in kinds):
            raise refuse("lightning_attention", f"attn_type_list[{kinds.index(next(k for k in kinds if k != 1))}]",
                         name)
        return Plan(layers=layers)
    if every:
        return Plan(layers=layers, linear=layers - layers // every)
    return Plan(layers=layers)


def dense_mlps(cfg: dict[str, Any], layers: int, name: str) -> int:
    """How many of an MoE model's layers run a dense MLP: `moe_layer_freq` as a 0/1 list (MiniMax-M3, MiMo) or a
    period with `first_k_dense_replace` (deepseek_v2.py), `mlp_only_layers` and `decoder_sparse_step` (qwen3_moe.py)."""
    kinds = cfg.get("mlp_layer_types")
    if isinstance(kinds, list):
        if len(kinds) != layers:
            raise InputError(f"config.json for {name!r}: mlp_layer_types must list num_hidden_layers = {layers} layers")
        for i, kind in enumerate(kinds):
            if kind not in MLPS:
                raise refuse(kind, f"mlp_layer_types[{i}]", name)
        return sum(1 for kind in kinds if MLPS[kind] == "dense")
    freq = cfg.get("moe_layer_freq")
    first = int(cfg.get("first_k_dense_replace") or 0)
    if isinstance(freq, list):
        if len(freq) != layers or any(f not in (0, 1) for f in freq):
            raise InputError(f"config.json for {name!r}: moe_layer_freq must hold 0 or 1 for each of {layers} layers")
        return freq.count(0)
    period = int(freq or 1)
    step, only = int(cfg.get("decoder_sparse_step") or 1), set(cfg.get("mlp_only_layers") or ())
    return sum(1 for i in range(layers)
               if i < first or i % period or i in only or (i + 1) % step)
