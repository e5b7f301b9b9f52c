import pytest

from advisor.errors import InputError
from advisor.model.gpu.hardware import Hardware
from advisor.model.shape import quantization as q


def test_bytes_per_weight_include_the_group_scales():
    assert q.bytes_per_weight("nvfp4") == (4 + 8 / 16) / 8 == 0.5625  # e2m1 + an fp8 scale per 16
    assert q.bytes_per_weight("mxfp4") == (4 + 8 / 32) / 8 == 0.53125  # e2m1 + an e8m0 scale per 32
    assert q.bytes_per_weight("int4-g128") == (4 + (16 + 4) / 128) / 8  # AWQ/GPTQ: fp16 scale + 4-bit zero
    assert q.bytes_per_weight("int4") == 0.5 + 4 / 128  # gpt-fast: 16-bit scale and 16-bit zero per 128
    assert q.bytes_per_weight("int4-g32-sym") == (4 + 16 / 32) / 8
    assert q.bytes_per_weight("fp8") == 1.0 and q.bytes_per_weight("bf16") == 2.0
    with pytest.raises(InputError, match="unknown weight format"):
        q.weight_format("int3")


def test_compute_dtype_and_peaks():
    assert [q.compute_dtype(f) for f in ("fp8", "nvfp4", "nvfp4a16", "mxfp4", "int4")] == \
        ["fp8", "fp4", "bf16", "bf16", "bf16"]
    gpu = {"name": "x", "vendor": "nvidia", "memory_gib": 80, "memory_bandwidth_gbs": 8000, "memory": "HBM3e",
           "bf16_tflops": 1000,
           "interconnect": "nvlink", "interconnect_gbs": 900, "source": "-", "fp8_tflops": 2000,
           "architecture": "sm_100"}
    assert Hardware(slug="x", **gpu, fp4_tflops=4000).peak_flops("fp4") == 4000e12
    assert Hardware(slug="x", **gpu).peak_flops("fp4") == 1000e12  # no fp4 units: Marlin dequantizes to 16 bit


def test_kv_cache_dtypes_as_vllm_spells_them():
    assert q.kv_bytes_per_element("fp8") == q.kv_bytes_per_element("fp8_e5m2") == 1.0
    assert q.kv_bytes_per_element("auto") == 2.0
    with pytest.raises(InputError, match="not modelled"):
        q.kv_bytes_per_element("int4")


def test_checkpoint_formats():
    ct = {"quant_method": "compressed-tensors", "ignore": ["lm_head"], "config_groups": {"group_0": {
        "weights": {"num_bits": 4, "type": "float", "group_size": 16}, "input_activations": {"num_bits": 4}}}}
    assert q.from_quantization_config(ct, "m").weight_dtype == "nvfp4"
    w4a16 = {"quant_method": "compressed-tensors", "config_groups": {"g": {
        "weights": {"num_bits": 4, "type": "int", "group_size": 128, "symmetric": True}}}}
    assert q.from_quantization_config(w4a16, "m").weight_dtype == "int4-g128-sym"
    assert q.from_quantization_config({"quant_method": "awq", "bits": 4, "group_size": 64}, "m").weight_dtype \
        == "int4-g64"
    modelopt = {"quant_method": "modelopt", "quantization": {"quant_algo": "NVFP4", "exclude_modules": ["lm_head"]}}
    assert q.from_quantization_config(modelopt, "m").weight_dtype == "nvfp4"
    fp8 = q.from_quantization_config({"quant_method": "fp8", "weight_block_size": [128, 128]}, "m")
    assert (fp8.weight_dtype, fp8.unquantized) == ("fp8", ())
    with pytest.raises(InputError, match="'bitsandbytes' is not modelled"):
        q.from_quantization_config({"quant_method": "bitsandbytes"}, "m")


def test_mxfp4_quantizes_only_the_experts():
    assert q.quantized_parts("mxfp4") == ("experts",)
    assert q.quantized_parts("fp8", ("attention",)) == ("mlp", "experts")
    assert q.quantized_parts("bf16") == ()


def test_the_flag_meets_the_checkpoint():
    awq = q.CheckpointQuantization("awq", "int4-g128")
    assert q.served_weight_dtype(None, None, "m") == "bf16"
    assert q.served_weight_dtype(None, "fp8", "m") == "fp8"  # vLLM's online fp8
    assert q.served_weight_dtype(awq, "awq_marlin", "m") == "int4-g128"
    with pytest.raises(InputError, match="contradicts"):
        q.served_weight_dtype(awq, "fp8", "m")
    with pytest.raises(InputError, match="needs a checkpoint quantized that way"):
        q.served_weight_dtype(None, "awq", "m")


# --- issue 39: W4A8, Quark MXFP4, NVFP4 KV, and the blocks the catalog's newest checkpoints ship ------------------
def _ct(weights: dict, acts: dict | None) -> dict:
    return {"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {
        "weights": weights, "input_activations": acts}}}


INT4_G128 = {"num_bits": 4, "type": "int", "group_size": 128, "symmetric": True, "strategy": "group"}


def test_w4a8_reads_int4_weight_bytes_and_its_activation_compute():
    int8 = q.from_quantization_config(_ct(INT4_G128, {"num_bits": 8, "type": "int", "dynamic": True}), "m")
    fp8 = q.from_quantization_config(_ct(INT4_G128, {"num_bits": 8, "type": "float", "dynamic": True}), "m")
    assert (int8.weight_dtype, fp8.weight_dtype) == ("int4-g128-sym-a8int", "int4-g128-sym-a8fp8")
    assert q.bytes_per_weight(int8.weight_dtype) == q.bytes_per_weight("int4-g128-sym") == (4 + 16 / 128) / 8
    assert (q.compute_dtype(fp8.weight_dtype), q.compute_dtype(int8.weight_dtype)) == ("fp8", "bf16")
    with pytest.raises(InputError, match="only on CPUs"):
        q.from_quantization_config({**_ct(INT4_G128, {"num_bits": 8, "type": "int", "dynamic": True}),
                                    "format": "int-quantized"}, "m")
    with pytest.raises(InputError, match="W8A8 int8 is not modelled"):
        q.from_quantization_config(_ct({**INT4_G128, "num_bits": 8}, {"num_bits": 8, "type": "int"}), "m")


def test_quark_mxfp4_w4a4_and_fp8():
    mx = {"dtype": "fp4", "qscheme": "per_group", "group_size": 32, "scale_format": "e8m0"}
    quark = {"quant_method": "quark", "exclude": ["lm_head", "model.layers.*.self_attn.*"],
             "global_quant_config": {"weight": mx, "input_tensors": mx}}
    read = q.from_quantization_config(quark, "m")
    assert (read.method, read.weight_dtype, read.unquantized) == ("quark", "mxfp4a4", ("attention",))
    assert q.bytes_per_weight("mxfp4a4") == q.bytes_per_weight("mxfp4") and q.compute_dtype("mxfp4a4") == "fp4"
    assert q.quantized_parts("mxfp4a4") == q.PARTS  # every linear layer, not only the experts as gpt-oss's mxfp4
    w4a8 = {**quark, "global_quant_config": {"weight": mx, "input_tensors": {"dtype": "fp8_e4m3"}}}
    assert q.from_quantization_config(w4a8, "m").weight_dtype == "mxfp4a8fp8" and q.compute_dtype("mxfp4a8fp8") == "fp8"
    int4 = {"quant_method": "quark", "global_quant_config": {"weight": {"dtype": "int4", "group_size": 128,
                                                                         "symmetric": True}}}
    assert q.from_quantization_config(int4, "m").weight_dtype == "int4-g128-sym"
    fp8 = {"quant_method": "quark", "global_quant_config": {"weight": {"dtype": "fp8_e4m3"}}}
    assert q.from_quantization_config(fp8, "m").weight_dtype == "fp8"
    half = {"quant_method": "quark", "global_quant_config": {"weight": mx, "input_tensors": None}}
    with pytest.raises(InputError, match="simulated dequantization"):
        q.from_quantization_config(half, "m")


def test_nvfp4_kv_cache_bytes():
    assert q.kv_bytes_per_element("nvfp4") == q.kv_bytes_per_element("nvfp4_4over6") == (128 / 2 + 128 / 16) / 128


def _published(name: str) -> dict:
    import json

    from advisor.profiles.catalog import profiles_dir

    config = json.loads((profiles_dir() / "models" / f"{name}.json").read_text())
    return (config.get("text_config") or config)["quantization_config"]


def test_the_quantization_blocks_the_newest_checkpoints_ship():
    """The catalog's published config.json files: each block read, with the parts it leaves 16 bit."""
    kimi = q.from_quantization_config(_published("kimi-k2.5"), "Kimi-K2.5")  # INT4 QAT experts, W4A16
    assert (kimi.method, kimi.weight_dtype, kimi.unquantized) == ("compressed-tensors", "int4-g32-sym",
                                                                  ("attention", "mlp"))
    for name in ("deepseek-v3.2", "minimax-m2.5"):  # fp8 128x128 blocks; MiniMax leaves only its routers 16 bit
        read = q.from_quantization_config(_published(name), name)
        assert (read.method, read.weight_dtype, read.unquantized) == ("fp8", "fp8", ())
    # Hy3-FP8 as transcribed in ../shared/reference/model-configs/Hy3/SOURCE.md: static fp8 activations
    hy3 = {"activation_scheme": "static", "ignored_layers": ["lm_head", "model.embed_tokens"], "quant_method": "fp8",
           "kv_cache_scheme": "static"}
    assert q.from_quantization_config(hy3, "Hy3-FP8").weight_dtype == "fp8"
