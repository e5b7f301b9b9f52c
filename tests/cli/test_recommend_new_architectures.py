"""`specadvisor recommend` on issue 39's models: each resolves by name and from a directory holding its config.json
(the same report), the EAGLE-3 heads pair with their targets, the MTP models draft with their own layers, and three
architectures are checked against arithmetic written out here from the config values alone (the helpers and the
datasheet model's constants are test_recommend_architectures.py's): DeepSeek-V3.2's sparse attention (the fp8
656-byte latent row, the indexer's 132-byte keys, attention capped at 2048 tokens while the indexer scores them all),
Gemma-4's two layer shapes beside a dense MLP + MoE, and Qwen3.5's dense hybrid with its linear-attention state."""

import json

import pytest

from advisor.cli.app import main
from advisor.profiles.catalog import profiles_dir
from tests.cli.test_recommend_architectures import CONTEXT, GB, _decode_step, _report

TARGETS = {  # profile -> flags that serve it (enough GPUs for the weights)
    "qwen3.5-27b": "--gpu h100-sxm", "qwen3.5-9b": "--gpu h100-sxm", "qwen3.5-35b-a3b": "--gpu h100-sxm",
    "qwen3.5-122b-a10b": "--gpu h200 --num-gpus 2", "qwen3.5-397b-a17b": "--gpu h200 --num-gpus 8",
    "minimax-m2.5": "--gpu h200 --num-gpus 4", "kimi-k2.5": "--gpu b200 --num-gpus 8",
    "glm-5": "--gpu b300 --num-gpus 8 --quantization fp8", "glm-5.1": "--gpu b300 --num-gpus 8 --quantization fp8",
    "glm-5.2": "--gpu b300 --num-gpus 8 --quantization fp8", "gemma-4-26b-a4b": "--gpu h100-sxm",
    "deepseek-v3.2": "--gpu b200 --num-gpus 8", "hy3": "--gpu h200 --num-gpus 8"}
HEADS = {"eagle3-llama3.1-instruct-8b": "llama-3.1-8b-instruct", "eagle3-gpt-oss-120b": "gpt-oss-120b",
         "eagle3-qwen3-8b": "qwen3-8b", "eagle3-qwen3-30b-a3b": "qwen3-30b-a3b", "eagle3-kimi-k2.5": "kimi-k2.5"}
MTP = {"qwen3.5-27b", "qwen3.5-9b", "qwen3.5-35b-a3b", "qwen3.5-122b-a10b", "qwen3.5-397b-a17b", "glm-5", "glm-5.1",
       "glm-5.2", "deepseek-v3.2", "hy3"}


def _config_dir(tmp_path, name: str):
    """The profile as a checkpoint directory holds it: config.json without specadvisor's own block."""
    config = json.loads((profiles_dir() / "models" / f"{name}.json").read_text())
    config.pop("_specadvisor")
    (tmp_path / "config.json").write_text(json.dumps(config))
    return tmp_path


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_each_model_resolves_by_name_and_from_its_config_directory(name, tmp_path, capsys):
    method = "--method mtp" if name in MTP else "--method ngram"
    by_name = _report(capsys, f"--target {name} {method} {TARGETS[name]}")
    from_dir = _report(capsys, f"--target {_config_dir(tmp_path, name)} {method} {TARGETS[name]}")
    assert by_name["memory"]["fits"], by_name["memory"]["reason"]
    for key in ("target_weights_gb", "draft_weights_gb", "kv_bytes_per_token_baseline", "kv_bytes_per_token_spec"):
        assert from_dir["memory"][key] == by_name["memory"][key], key
    assert from_dir["time_split"]["tpot_baseline_ms"] == by_name["time_split"]["tpot_baseline_ms"]
    if name in MTP:  # the default drafter: the model's own MTP layer, weights of its own
        assert by_name["memory"]["draft_weights_gb"] > 0 and '"method":"mtp"' in by_name["vllm"]["serve_command"]


@pytest.mark.parametrize("head", sorted(HEADS))
def test_each_eagle3_head_pairs_with_its_target_by_default_by_name_and_from_a_directory(head, tmp_path, capsys):
    target = HEADS[head]
    gpus = "--gpu b200 --num-gpus 8" if target == "kimi-k2.5" else "--gpu h100-sxm"
    default = _report(capsys, f"--target {target} --method eagle3 {gpus}")
    named = _report(capsys, f"--target {target} --method eagle3 --draft {head} {gpus}")
    from_dir = _report(capsys, f"--target {target} --method eagle3 --draft {_config_dir(tmp_path, head)} {gpus}")
    assert default["inputs"]["draft"] == named["inputs"]["draft"]
    assert from_dir["memory"]["draft_weights_gb"] == named["memory"]["draft_weights_gb"] > 0
    assert '"method":"eagle3"' in named["vllm"]["serve_command"]


def test_deepseek_v3_2_sparse_attention_with_an_fp8_cache_on_8_b200(capsys):
    r = _report(capsys, "--target deepseek-v3.2 --method mtp --kv-cache-dtype fp8 --gpu b200 --num-gpus 8")
    h, vocab, layers, dense, moe = 7168, 129280, 61, 3, 58
    attention = h * 1536 + 1536 * 128 * 192 + h * 576 + 512 * 128 * 256 + 128 * 128 * h  # DeepSeek-V3's MLA
    indexer = 1536 * 64 * 128 + h * (128 + 64)  # wq_b to 64 heads x 128; wk (128) and weights_proj (64 heads)
    expert, dense_mlp, router = 3 * h * 2048, 3 * h * 18432, h * 256
    fp8 = 1 + 4 / (128 * 128)
    # wk_weights_proj is built with quant_config=None (16 bit) and counted here at 1 byte like the model does: 84 MB
    # of 84 GB per GPU, inside the tolerance
    linear = layers * (attention + indexer) + dense * dense_mlp + moe * 257 * expert
    weights = linear * fp8 + moe * router * 2 + 2 * vocab * h * 2
    assert r["memory"]["target_weights_gb"] == pytest.approx(weights / 8 / GB, rel=1e-3)
    # per token and layer: the fp8 latent row, 512 fp8 + 4 fp32 scales + 64 bf16 rope = 656 B, and the indexer's
    # 128 fp8 keys + one fp32 scale = 132 B; neither is split across GPUs; the MTP layer adds both with speculation
    assert r["memory"]["kv_bytes_per_token_baseline"] == layers * (656 + 132) == 48_068
    assert r["memory"]["kv_bytes_per_token_spec"] == (layers + 1) * (656 + 132)
    touched = layers * (attention + indexer) + dense * dense_mlp + moe * 9 * expert
    activations = layers * (9 * h + 6 * (8 * 2048 + 2048)) * 2
    # attention reads the 2048 tokens the indexer picks; the indexer reads its keys for the whole context
    kv_read = layers * min(CONTEXT, 2048) * 656 + layers * CONTEXT * 132
    step = _decode_step(layer_bytes=touched * fp8 + moe * router * 2 + activations, kv_read=kv_read,
                        lm_head_bytes=vocab * h * 2 + 4 * vocab, layers=layers, tp=8, hidden=h, bandwidth_gbs=8000,
                        gpu="b200", moe_layers=moe, expert_bytes=moe * 8 * expert * fp8,
                        # norms, MLA's 6 and the indexer's 7 small kernels a layer; activations, router, shared expert
                        small=layers * (2 + 6 + 7) + dense * 1 + moe * (2 + 1))
    assert r["time_split"]["tpot_baseline_ms"] == pytest.approx(step * 1e3, rel=0.01)


def test_gemma_4_26b_a4b_two_layer_shapes_and_a_dense_mlp_beside_its_experts_on_one_h100(capsys):
    r = _report(capsys, "--target gemma-4-26b-a4b --method ngram --gpu h100-sxm")
    h, vocab, layers, sliding, full = 2816, 262144, 30, 25, 5
    local = h * (16 * 256 + 2 * 8 * 256) + 16 * 256 * h  # 16 heads, 8 KV heads of 256
    glob = h * (16 * 512 + 2 * 2 * 512) + 16 * 512 * h  # 16 heads, 2 KV heads of 512 (vLLM keeps K's copy as V)
    mlp, experts, router = 3 * h * 2112, 128 * 3 * h * 704, h * 128
    total = sliding * local + full * glob + layers * (mlp + experts + router) + vocab * h  # tied embeddings
    assert r["memory"]["target_weights_gb"] == pytest.approx(total * 2 / GB, rel=1e-3)
    # every layer keeps its K and V rows (the 1024-token window saves no memory: vLLM admits a request with room
    # for its window plus the tokens in flight, more than 3008)
    assert r["memory"]["kv_bytes_per_token_baseline"] == (sliding * 2 * 8 * 256 + full * 2 * 2 * 512) * 2 == 225_280
    touched = sliding * local + full * glob + layers * (mlp + 8 * 3 * h * 704 + router)
    activations = layers * (9 * h + 6 * (8 * 704 + 2112)) * 2
    kv_read = (sliding * min(CONTEXT, 1024) * 2 * 8 * 256 + full * CONTEXT * 2 * 2 * 512) * 2
    step = _decode_step(layer_bytes=touched * 2 + activations, kv_read=kv_read,
                        lm_head_bytes=vocab * h * 2 + 4 * vocab, layers=layers, tp=1, hidden=h, bandwidth_gbs=3350,
                        gpu="h100", moe_layers=layers, expert_bytes=layers * 8 * 3 * h * 704 * 2,
                        small=layers * (2 + 3) + layers * (2 + 1))  # norms, GQA; router, activation, dense MLP's
    assert r["time_split"]["tpot_baseline_ms"] == pytest.approx(step * 1e3, rel=0.01)


def test_qwen3_5_27b_dense_hybrid_with_its_mtp_layer_on_one_h100(capsys):
    r = _report(capsys, "--target qwen3.5-27b --method mtp --gpu h100-sxm")
    h, vocab, layers, inter = 5120, 248320, 64, 17408
    full, linear = 16, 48
    attention = h * 2 * 24 * 256 + 2 * h * 4 * 256 + 24 * 256 * h  # gated q_proj: 24 heads x 256, 4 KV heads
    qk, v = 16 * 128, 48 * 128  # 16 key heads, 48 value heads of 128
    gdn = h * (2 * qk + 2 * v) + h * 2 * 48 + (2 * qk + v) * 4 + v * h + 2 * 48
    mlp = 3 * h * inter
    total = full * attention + linear * gdn + layers * mlp + 2 * vocab * h
    assert r["memory"]["target_weights_gb"] == pytest.approx(total * 2 / GB, rel=1e-3)
    # the MTP layer: one gated full-attention block with the dense MLP, and its 2h x h eh_proj
    assert r["memory"]["draft_weights_gb"] == pytest.approx((attention + mlp + 2 * h * h) * 2 / GB, rel=1e-3)
    # each request holds the linear layers' state twice ("align" prefix caching): the conv's last 3 inputs in bf16
    # and the 48 x 128 x 128 recurrent state in float32, the config's mamba_ssm_dtype, which vLLM takes for Qwen3.5
    state = linear * ((4 - 1) * (2 * qk + v) * 2 + 48 * 128 * 128 * 4)
    assert r["memory"]["kv_bytes_per_token_baseline"] == pytest.approx(full * 2 * 4 * 256 * 2 + 2 * state / 3008,
                                                                       rel=1e-6)


def test_a_model_without_mtp_layers_in_vllm_says_so(capsys):
    """MiniMax-M2.5 ships MTP modules, but vLLM 0.32 drops them at load and has no drafter for them."""
    code = main(["recommend", "--target", "minimax-m2.5", "--method", "mtp", "--gpu", "h200", "--num-gpus", "4",
                 "--prompt-len", "100", "--out-len", "10"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "has none" in err, err
