"""`specadvisor recommend` on the models people serve now (issue 15): MLA + MTP, hybrid linear attention + MTP, MXFP4
MoE with sliding windows + an EAGLE-3 head, and an fp8 MoE with an fp8 KV cache. Each report's weights per GPU, KV
bytes per token and one decode step are checked against arithmetic written out here from the config values alone
(not from the code under test): parameters counted by hand, bytes per parameter by format, and the datasheet model's
decode step (advisor/model/cost/costmodel.py: weights and KV streamed, compute under a p-norm, all-reduces, per-layer
graph floor, the lm_head) at batch 1 and the mean decode context prompt + out / 2 = 2500. Floors by kernel (issue 24,
advisor/model/gpu/kernels.py), counted here from the layer kinds: a small kernel's floor (norms, rotary, KV writes,
attention, activations, router) is a sixth of a dense layer's (which launches six; GEMMs carry none), scaled by the
GPU generation's; an MoE layer's five dispatch kernels (top-k, align, two grouped GEMMs, combine) take their own
floor, under which the routed experts' bytes hide (a p-norm of exponent 2).

Terms left out of the hand count and why the tolerance covers them: RMSNorm weights and biases (< 0.01% of the
bytes), and the p-norm's compute share at batch 1 (compute is < 2% of the memory time, so it adds < 0.2%)."""

import json

import pytest

from advisor.cli.app import main

GB = 1e9
# The datasheet model's constants (advisor/model/cost/costmodel.py), restated: the test fails if they move silently.
BW_EFF, KV_BW_EFF, FLOPS_EFF = 0.87, 0.87, 0.63
GRAPH_FLOOR_S, ALLREDUCE_LATENCY_S, MOE_FLOOR_S = 24e-6, 15.6e-6, 5.9e-6
FLOOR_SCALE = {"h100": 1.0, "b200": 1.0}  # Hopper, data-center Blackwell (relative to Hopper's floors)
# The share of the dense streaming rate at which the routed experts' grouped GEMMs stream (advisor/model/cost/gemm.py,
# issue 33): vLLM's Triton fused_moe on Hopper, measured on §7's FusedMoE table; unmeasured vendor kernels on
# data-center Blackwell stream at the dense rate. At batch 1 their tile-padded compute stays under the streaming.
GROUPED_SHARE = {"h100": 0.425, "b200": 1.0}
CONTEXT = 2000 + 1000 / 2 + 1  # a decode step at the mean context reads its KV up to the new token


def _report(capsys, args: str) -> dict:
    assert main(["recommend", *args.split(), "--prompt-len", "2000", "--out-len", "1000", "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _decode_step(*, layer_bytes: float, kv_read: float, lm_head_bytes: float, layers: int, tp: int, hidden: int,
                 bandwidth_gbs: float, small: int, moe_layers: int, expert_bytes: float, gpu: str,
                 link_gbs: float = 900.0) -> float:
    """Seconds of one batch-1 decode step, memory-bound: weights and activations at 87% of peak bandwidth (the routed
    experts' `expert_bytes`, part of `layer_bytes`, at the grouped GEMMs' share of it, under the MoE floors), KV at
    87%, two ring all-reduces of one
    token's hidden state per layer when tp > 1, the floors of `small` kernels and of 5 dispatch kernels per MoE
    layer."""
    bw, scale = bandwidth_gbs * 1e9, FLOOR_SCALE[gpu]
    experts = expert_bytes / (tp * bw * BW_EFF)
    moe = ((experts / GROUPED_SHARE[gpu]) ** 2 + (5 * moe_layers * MOE_FLOOR_S * scale) ** 2) ** 0.5
    weights = layer_bytes / (tp * bw * BW_EFF) - experts + moe + kv_read / (bw * KV_BW_EFF)
    allreduce = 0.0 if tp == 1 else 2 * layers * (2 * (tp - 1) / tp * hidden * 2 / (link_gbs * 1e9) + ALLREDUCE_LATENCY_S)
    return weights + allreduce + small * GRAPH_FLOOR_S / 6 * scale + lm_head_bytes / (tp * bw * BW_EFF)


def test_deepseek_v3_with_its_mtp_layer_on_8_b200(capsys):
    r = _report(capsys, "--target deepseek-v3 --method mtp --gpu b200 --num-gpus 8")
    h, vocab, layers, dense, moe = 7168, 129280, 61, 3, 58
    # MLA: q_a 7168x1536, q_b 1536x(128 heads x (128 nope + 64 rope)), kv_a 7168x(512 + 64), kv_b 512x(128 x (128 +
    # 128)), o (128 x 128)x7168
    attention = h * 1536 + 1536 * 128 * 192 + h * 576 + 512 * 128 * 256 + 128 * 128 * h
    expert = 3 * h * 2048  # gate, up, down of moe_intermediate_size 2048
    dense_mlp, router = 3 * h * 18432, h * 256
    # fp8 block-quantized linear layers: 1 byte + one fp32 scale per 128x128 block; router, embedding, lm_head 16 bit
    fp8 = 1 + 4 / (128 * 128)
    linear = layers * attention + dense * dense_mlp + moe * (256 + 1) * expert  # 256 routed + 1 shared expert
    weights = linear * fp8 + moe * router * 2 + 2 * vocab * h * 2
    assert r["memory"]["target_weights_gb"] == pytest.approx(weights / 8 / GB, rel=1e-3)
    # the MTP layer's KV (one more MLA layer) joins with speculation; the latent is not split across GPUs
    assert r["memory"]["kv_bytes_per_token_baseline"] == layers * (512 + 64) * 2 == 70_272
    assert r["memory"]["kv_bytes_per_token_spec"] == (layers + 1) * (512 + 64) * 2
    # one token touches 8 routed experts + the shared one; every GPU reads the whole latent of the context
    touched = layers * attention + dense * dense_mlp + moe * 9 * expert
    activations = layers * (9 * h + 6 * (8 * 2048 + 2048)) * 2
    step = _decode_step(layer_bytes=touched * fp8 + moe * router * 2 + activations,
                        kv_read=layers * CONTEXT * 576 * 2, lm_head_bytes=vocab * h * 2 + 4 * vocab,
                        layers=layers, tp=8, hidden=h, bandwidth_gbs=8000, gpu="b200", moe_layers=moe,
                        expert_bytes=moe * 8 * expert * fp8,
                        # 2 norms and MLA's 6 small kernels a layer; the dense MLPs' activation; router, activation
                        # and the shared expert's activation in each MoE layer
                        small=layers * (2 + 6) + dense * 1 + moe * (2 + 1))
    assert r["time_split"]["tpot_baseline_ms"] == pytest.approx(step * 1e3, rel=0.01)
    assert "mtp" in r["inputs"]["method"]


def test_qwen3_next_with_its_mtp_layer_on_one_b200(capsys):
    r = _report(capsys, "--target qwen3-next-80b-a3b-instruct --method mtp --gpu b200")
    h, vocab, layers = 2048, 151936, 48
    full, linear = layers // 4, layers - layers // 4  # full attention every 4th layer, Gated DeltaNet in the rest
    # full attention: 16 heads x 256, 2 KV heads, q_proj doubled for the output gate
    attention = h * 2 * 16 * 256 + 2 * h * 2 * 256 + 16 * 256 * h
    # Gated DeltaNet: qkvz from 16 key heads x 128 and 32 value heads x 128, b and a per value head, a depthwise
    # conv of kernel 4 over q, k, v (8192 channels), out_proj, and per-head A_log and dt_bias
    qk, v = 16 * 128, 32 * 128
    gdn = h * (2 * qk + 2 * v) + h * 2 * 32 + (2 * qk + v) * 4 + v * h + 2 * 32
    moe = 512 * 3 * h * 512 + 3 * h * 512 + h * 512 + h  # 512 experts, a shared expert and its gate, the router
    total = full * attention + linear * gdn + layers * moe + 2 * vocab * h
    assert r["memory"]["target_weights_gb"] == pytest.approx(total * 2 / GB, rel=1e-3)
    # KV only in the 12 full-attention layers; each request also holds the linear layers' state, twice (vLLM's
    # "align" prefix-caching mode keeps a running and a cached copy), in bf16: conv (kernel - 1) x channels + 32 x
    # 128 x 128 per layer
    state = linear * ((4 - 1) * (2 * qk + v) + 32 * 128 * 128) * 2
    tokens = 3008  # 3000 tokens rounded up to whole 16-token blocks
    kv = full * 2 * 2 * 256 * 2
    assert r["memory"]["kv_bytes_per_token_baseline"] == pytest.approx(kv + 2 * state / tokens, rel=1e-6)
    touched = full * attention + linear * gdn + layers * (11 * 3 * h * 512 + h * 512 + h)  # 10 routed + 1 shared
    activations = layers * (9 * h + 6 * (10 * 512 + 512)) * 2
    step = _decode_step(layer_bytes=touched * 2 + activations,
                        kv_read=full * CONTEXT * 2 * 2 * 256 * 2 + 2 * state / 2,  # the state read and written once
                        lm_head_bytes=vocab * h * 2 + 4 * vocab, layers=layers, tp=1, hidden=h, bandwidth_gbs=8000,
                        gpu="b200", moe_layers=layers, expert_bytes=layers * 10 * 3 * h * 512 * 2,
                        # 2 norms a layer, GQA's 5 or Gated DeltaNet's 7 kernels, router + activation + shared expert
                        small=layers * 2 + full * 3 + linear * 4 + layers * (2 + 1))
    assert r["time_split"]["tpot_baseline_ms"] == pytest.approx(step * 1e3, rel=0.01)


EAGLE3_HEAD = {  # this test's own head (no published gpt-oss EAGLE-3 config ships): the target's widths, as vLLM needs
    "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 2880,
    "num_hidden_layers": 1, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
    "intermediate_size": 8192, "vocab_size": 201088, "draft_vocab_size": 32000, "max_position_embeddings": 131072,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16"}


def test_gpt_oss_120b_mxfp4_with_an_eagle3_head_on_one_h100(capsys, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(EAGLE3_HEAD))
    r = _report(capsys, f"--target gpt-oss-120b --method eagle3 --draft {tmp_path} --gpu h100-sxm")
    h, vocab, layers = 2880, 201088, 36
    attention = h * 64 * 64 + 2 * h * 8 * 64 + 64 * 64 * h
    expert = 3 * h * 2880
    mxfp4 = (4 + 8 / 32) / 8  # 4-bit values, one 8-bit (e8m0) scale per 32: only the routed experts
    weights = layers * 128 * expert * mxfp4 + layers * (attention + h * 128) * 2 + 2 * vocab * h * 2
    assert r["memory"]["target_weights_gb"] == pytest.approx(weights / GB, rel=2e-3)  # expert biases left out
    # the head: fused qkv from [embedding, state] (2h in), o, a SwiGLU MLP, its 32000-token lm_head and the 3h x h
    # fusion
    head = 2 * h * (64 * 64 + 2 * 8 * 64) + 64 * 64 * h + 3 * h * 8192 + 32000 * h + 3 * h * h
    assert r["memory"]["draft_weights_gb"] == pytest.approx(head * 2 / GB, rel=1e-3)
    # 36 layers x 8 KV heads x 64 x K and V x 2 bytes (half the layers slide over 128 tokens, but vLLM admits a request
    # with room for its whole window plus the tokens in flight, which exceed 3008 here: no saving in memory)
    assert r["memory"]["kv_bytes_per_token_baseline"] == layers * 8 * 64 * 2 * 2 == 73_728
    touched = layers * 4 * expert * mxfp4 + layers * (attention + h * 128) * 2  # top-4 of 128 experts
    activations = layers * (9 * h + 6 * 4 * 2880) * 2
    attended = 18 * 128 + 18 * CONTEXT  # the sliding layers read their last 128 tokens
    step = _decode_step(layer_bytes=touched + activations, kv_read=attended * 8 * 64 * 2 * 2,
                        lm_head_bytes=vocab * h * 2 + 4 * vocab, layers=layers, tp=1, hidden=h, bandwidth_gbs=3350,
                        gpu="h100", moe_layers=layers, expert_bytes=layers * 4 * expert * mxfp4,
                        small=layers * (2 + 3 + 2))  # norms, GQA (sliding or not), router + activation
    assert r["time_split"]["tpot_baseline_ms"] == pytest.approx(step * 1e3, rel=0.01)
    assert r["best_k"] > 0 and '"method":"eagle3"' in r["vllm"]["serve_command"]


def test_qwen3_30b_a3b_in_fp8_with_an_fp8_kv_cache_on_one_h100(capsys):
    r = _report(capsys, "--target qwen3-30b-a3b --quantization fp8 --kv-cache-dtype fp8 --gpu h100-sxm")
    h, vocab, layers = 2048, 151936, 48
    attention = h * 32 * 128 + 2 * h * 4 * 128 + 32 * 128 * h
    expert, router = 3 * h * 768, h * 128
    # vLLM's online fp8: every linear layer 1 byte per weight (one scale per tensor); router and embeddings 16 bit
    weights = layers * (attention + 128 * expert) + layers * router * 2 + 2 * vocab * h * 2
    assert r["memory"]["target_weights_gb"] == pytest.approx(weights / GB, rel=1e-3)
    assert r["memory"]["kv_bytes_per_token_baseline"] == layers * 4 * 128 * 2 * 1 == 49_152  # fp8: 1 byte
    touched = layers * (attention + 8 * expert) + layers * router * 2  # top-8 of 128
    activations = layers * (9 * h + 6 * 8 * 768) * 2
    step = _decode_step(layer_bytes=touched + activations, kv_read=layers * CONTEXT * 4 * 128 * 2 * 1,
                        lm_head_bytes=vocab * h * 2 + 4 * vocab, layers=layers, tp=1, hidden=h, bandwidth_gbs=3350,
                        gpu="h100", moe_layers=layers, expert_bytes=layers * 8 * expert,
                        small=layers * (2 + 3 + 2))
    assert r["time_split"]["tpot_baseline_ms"] == pytest.approx(step * 1e3, rel=0.01)
    assert "--quantization fp8" in r["vllm"]["serve_command"] and "--kv-cache-dtype fp8" in r["vllm"]["serve_command"]


@pytest.mark.parametrize("config,named", [
    ({"model_type": "mamba2", "architectures": ["Mamba2ForCausalLM"], "hidden_size": 2560, "num_hidden_layers": 64,
      "vocab_size": 50288}, "mamba2"),
    ({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 512, "num_hidden_layers": 2,
      "num_attention_heads": 8, "intermediate_size": 1024, "vocab_size": 4096,
      "quantization_config": {"quant_method": "bitsandbytes"}}, "bitsandbytes"),
])
def test_what_cannot_be_modelled_is_one_line_and_exit_2_never_dense_llama_arithmetic(config, named, tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps(config))
    code = main(["recommend", "--target", str(tmp_path), "--method", "ngram", "--prompt-len", "100", "--out-len", "10"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and named in err, err
