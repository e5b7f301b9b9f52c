"""Issue 47's models: each in `specadvisor list models` under the name a user would type, and each sized against its
own config.json by hand below (the config's keys read here directly, not through the reader): KV cache per token,
recurrent state per sequence, routed-expert weights, MTP layers. The published totals (the names' figures) are
checked in tests/profiles/test_catalog.py."""

import json

import pytest

from advisor.cli.app import main
from advisor.model.cost.memory import STATE_SLOTS, kv_bytes_per_sequence_per_gpu
from advisor.profiles.catalog import load_model, profiles_dir

BF16 = 2


def raw(name: str) -> dict:
    config = json.loads((profiles_dir() / "models" / f"{name}.json").read_text())
    return config.get("text_config") or config


def gdn_state(c: dict, layers: int) -> int:
    """Gated DeltaNet: conv (2 key + value) x (kernel - 1) in bf16, the v_heads x v_dim x k_dim state in fp32."""
    key, value = c["linear_num_key_heads"] * c["linear_key_head_dim"], \
        c["linear_num_value_heads"] * c["linear_value_head_dim"]
    state = c["linear_num_value_heads"] * c["linear_value_head_dim"] * c["linear_key_head_dim"]
    return layers * ((2 * key + value) * (c["linear_conv_kernel_dim"] - 1) * BF16 + state * 4)


def mamba_state(c: dict) -> int:
    inner = c["mamba_num_heads"] * c["mamba_head_dim"]
    conv = inner + 2 * c["n_groups"] * c["ssm_state_size"]
    ssm = 4 if c.get("mamba_ssm_cache_dtype") == "float32" else BF16
    return conv * (c["conv_kernel"] - 1) * BF16 + c["mamba_num_heads"] * c["mamba_head_dim"] * c["ssm_state_size"] * ssm


def gqa_row(c: dict, kv_heads: str = "num_key_value_heads", head: str = "head_dim") -> int:
    return 2 * c[kv_heads] * c[head] * BF16


def qwen(name: str):
    c = raw(name)
    full = c["layer_types"].count("full_attention")
    return full * gqa_row(c), gdn_state(c, len(c["layer_types"]) - full), c["mtp_num_hidden_layers"]


def nemotron(name: str):
    c = raw(name)
    blocks = list(c.get("hybrid_override_pattern") or
                  ["M" if b == "mamba" else "*" if b == "attention" else "E" for b in c["layers_block_type"]])
    head = c.get("head_dim") or c["attention_head_dim"]
    return blocks.count("*") * 2 * c["num_key_value_heads"] * head * BF16, blocks.count("M") * mamba_state(c), \
        c.get("num_nextn_predict_layers", 0)


def deepseek_v4(name: str):
    c = raw(name)
    layers = c["num_hidden_layers"]
    ratios = c["compress_ratios"][:layers]
    if "kv_source_layer_ids" in c:  # V4.1: compressed rows kept on the source layers only, 8 indexers
        rows = sum(1 / ratios[i] for i in c["kv_source_layer_ids"])
        index = sum(1 / max(ratios[i], 1) for i in c["index_source_layer_ids"])
    else:
        rows = sum(1 / r for r in ratios if r > 1)
        index = sum(1 / 4 for r in ratios if r == 4)
    # a 576-byte fp8_ds_mla row a token in every layer's window (before the window caps it), the compressed rows,
    # 132-byte fp8 index keys
    return 576 * (layers + rows) + 132 * index, 0, 0 if "dspark_block_size" in c else c["num_nextn_predict_layers"]


def kimi_k3(name: str):
    c = raw(name)
    linear = c["linear_attn_config"]
    proj = linear["num_heads"] * linear["head_dim"]
    conv = 3 * proj * (linear["short_conv_kernel_size"] - 1) * BF16
    kda = conv + linear["num_heads"] * linear["head_dim"] ** 2 * BF16
    mla = c["num_hidden_layers"] - len(linear["kda_layers"])
    return mla * (c["kv_lora_rank"] + c["qk_rope_head_dim"]) * BF16, len(linear["kda_layers"]) * kda, 0


def gqa_all(name: str, mtp_key: str = "num_nextn_predict_layers", index: int = 0):
    c = raw(name)
    return c["num_hidden_layers"] * gqa_row(c) + index, 0, c.get(mtp_key, 0)


def minimax_m3(name: str):
    c = raw(name)
    sparse = sum(c["sparse_attention_config"]["sparse_attention_freq"])
    index = c["sparse_attention_config"]["sparse_index_dim"] + 4  # fp8 with one fp32 scale per 128
    return c["num_hidden_layers"] * gqa_row(c) + sparse * index, 0, c["num_mtp_modules"]


def gemma4(name: str):
    c = raw(name)
    full = c["layer_types"].count("full_attention")
    global_row = 2 * c["num_global_key_value_heads"] * c["global_head_dim"] * BF16
    return (len(c["layer_types"]) - full) * gqa_row(c) + full * global_row, 0, 0


def mimo(name: str):
    c = raw(name)
    sliding = sum(c["hybrid_layer_pattern"])
    full_row = c["num_key_value_heads"] * (c["head_dim"] + c["v_head_dim"]) * BF16
    swa_row = c["swa_num_key_value_heads"] * (c["swa_head_dim"] + c["swa_v_head_dim"]) * BF16
    return (c["num_hidden_layers"] - sliding) * full_row + sliding * swa_row, 0, 1  # vLLM drafts with its first


# the list, by the profile name a user types -> how its config sizes it
MODELS = {
    "qwen3.6-27b": qwen, "qwen3.6-35b-a3b": qwen, "qwen3.8-27b": qwen, "qwen3.8-2.4t-a95b": qwen,
    "qwen3.8-flash-next": lambda n: (qwen(n)[0] + 12 * 132 / 4, qwen(n)[1], 1),  # QSA index keys, 4 to 1
    "minimax-m3": minimax_m3, "minimax-m2.7": lambda n: (gqa_all(n)[0], 0, 0),  # its MTP modules dropped by vLLM
    "deepseek-v4-flash": deepseek_v4, "deepseek-v4-pro": deepseek_v4, "deepseek-v4.1-flash": deepseek_v4,
    "kimi-k3": kimi_k3, "kimi-k2.6": lambda n: (61 * (512 + 64) * BF16, 0, 0),
    "kimi-k2.7-code": lambda n: (61 * (512 + 64) * BF16, 0, 0),
    "nemotron-3-nano-30b-a3b": nemotron, "nemotron-3-super-120b-a12b": nemotron,
    "nemotron-3-ultra-550b-a55b": nemotron, "nemotron-3.5-lightning-30b-a3b": nemotron, "nemotron-h-56b": nemotron,
    "gemma-4-31b-it": gemma4, "step-3.7-flash": gqa_all, "mimo-v2-flash": mimo,
}


def test_every_listed_model_is_in_list_models_by_the_name_users_type(capsys):
    assert main(["list", "models"]) == 0
    listed = {line.split()[0] for line in capsys.readouterr().out.splitlines() if line.strip()}
    assert set(MODELS) <= listed, set(MODELS) - listed


@pytest.mark.parametrize("name", sorted(MODELS))
def test_each_model_sized_against_its_config(name):
    spec = load_model(name)
    kv, state, mtp = MODELS[name](name)
    assert spec.kv_bytes_per_token() == pytest.approx(kv)
    assert spec.linear_state_bytes() == state
    assert spec.mtp_layers == mtp
    # per sequence: a 100,000-token request holds every full layer's rows, each window capped at its window plus
    # vLLM's in-flight tokens, and STATE_SLOTS copies of the recurrent state
    held = kv_bytes_per_sequence_per_gpu(spec, 1, 100_000)
    assert held >= STATE_SLOTS * state + spec.full_layers * 100_000 * spec.kv_row_bytes(BF16)
    assert held <= STATE_SLOTS * state + 100_000 * kv + 1e6 * (spec.windowed_layers + 1)


@pytest.mark.parametrize("name", sorted(n for n in MODELS if load_model(n).num_experts > 1))
def test_each_moes_routed_experts_against_its_config(name):
    c, spec = raw(name), load_model(name)
    experts = next(c[k] for k in ("num_experts", "n_routed_experts", "num_local_experts") if c.get(k))
    width = c.get("moe_intermediate_size") or c["intermediate_size"]
    latent = c.get("moe_latent_size") or c.get("routed_expert_hidden_size") or c["hidden_size"]
    projections = 2 if c.get("mlp_hidden_act") == "relu2" else 3
    assert spec.part_params()["experts"] == spec.moe_layers * experts * projections * latent * width


def test_figures_the_names_and_sources_give():
    flash = load_model("qwen3.8-flash-next")  # a community conversion's "125B": without the n-gram tables
    assert (flash.total_params - flash.lookup_params) / 1e9 == pytest.approx(125, rel=0.03)
    for name in ("nemotron-3-nano-30b-a3b", "nemotron-3.5-lightning-30b-a3b"):  # "A3B", one significant figure
        assert abs(load_model(name).active_params / 1e9 - 3) < 0.5
    assert load_model("kimi-k2.6").total_params == load_model("kimi-k2.5").total_params
    assert load_model("minimax-m2.7").total_params == load_model("minimax-m2.5").total_params


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_transcribed_config_says_so_in_its_profile(name):
    meta = json.loads((profiles_dir() / "models" / f"{name}.json").read_text())["_specadvisor"]
    assert meta["config"] in ("copied", "transcribed")
    assert (meta["config"] == "transcribed") == meta["source"].startswith("TRANSCRIBED, not a copy")
