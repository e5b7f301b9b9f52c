"""Formats vLLM 0.32 refuses or only emulates on a GPU: one line each (advisor/model/gpu/quant_support.py)."""

import pytest

from advisor.cli.app import main
from advisor.errors import InputError
from advisor.model.gpu.quant_support import check_kv_cache, check_weights
from advisor.profiles.catalog import load_hardware, load_model


@pytest.mark.parametrize(("fmt", "ok", "refused", "why"), [
    ("int4-g128-sym-a8fp8", "h100-sxm", "b200", "compute capability 9.0"),
    ("int4-g64-sym-a8fp8", None, "h200", "group size 128"),
    ("int4-g128-sym-a8int", "a100-80gb-sxm", "mi300x", "Humming kernel on NVIDIA"),
    ("mxfp4a4", None, "mi300x", "only on gfx950"),
    ("mxfp4a4", None, "b200", "emulation"),
    ("mxfp4a8fp8", None, "mi300x", "only on gfx950"),
])
def test_weight_formats_by_gpu(fmt, ok, refused, why):
    if ok:
        check_weights(fmt, load_hardware(ok), "m")
    with pytest.raises(InputError, match=why):
        check_weights(fmt, load_hardware(refused), "m")
    check_weights("mxfp4", load_hardware(refused), "gpt-oss")  # W4A16 experts run on every GPU here


def test_nvfp4_kv_cache_by_gpu_and_model():
    llama, v3 = load_model("llama-3.1-8b-instruct"), load_model("deepseek-v3")
    for gpu in ("h100-sxm", "b200", "rtx-pro-6000-blackwell", "a100-80gb-sxm"):
        check_kv_cache("nvfp4", load_hardware(gpu), llama)
    check_kv_cache("nvfp4_4over6", load_hardware("b200"), llama)
    for dtype, gpu, model, why in [("nvfp4", "mi300x", llama, "NVIDIA GPUs"), ("nvfp4", "b200", v3, "MLA"),
                                   ("nvfp4_4over6", "h100-sxm", llama, "10.x"),
                                   ("nvfp4", "h100-sxm", load_model("llama-3.2-1b-instruct"), "head size 64")]:
        with pytest.raises(InputError, match=why):
            check_kv_cache(dtype, load_hardware(gpu), model)


def test_recommend_prices_an_nvfp4_kv_cache_and_refuses_it_in_one_line(capsys):
    args = ["recommend", "--target", "llama-3.1-8b-instruct", "--method", "ngram", "--prompt-len", "8000",
            "--out-len", "500", "--format", "json"]
    assert main([*args, "--gpu", "h100-sxm", "--kv-cache-dtype", "nvfp4"]) == 0
    assert "--kv-cache-dtype nvfp4" in capsys.readouterr().out
    assert main([*args, "--gpu", "mi300x", "--kv-cache-dtype", "nvfp4"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "NVIDIA GPUs" in err and "Traceback" not in err


def test_quark_mxfp4_runs_at_the_fp4_rate_on_cdna4():
    from advisor.model.shape.quantization import compute_dtype

    mi355x = load_hardware("mi355x")
    check_weights("mxfp4a4", mi355x, "m")
    check_weights("mxfp4a8fp8", mi355x, "m")
    assert mi355x.peak_flops(compute_dtype("mxfp4a4")) == mi355x.fp4_tflops * 1e12
    with pytest.raises(InputError, match="only on gfx950"):
        check_weights("mxfp4a4", load_hardware("mi300x"), "m")


def test_recommend_on_a_w4a8_checkpoint_directory(tmp_path, capsys):
    import json

    from advisor.profiles.catalog import profiles_dir

    config = json.loads((profiles_dir() / "models" / "llama-3.1-8b-instruct.json").read_text())
    config.pop("_specadvisor")
    config["quantization_config"] = {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": [
        "lm_head"], "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
            "num_bits": 4, "type": "int", "group_size": 128, "symmetric": True, "strategy": "group"},
            "input_activations": {"num_bits": 8, "type": "float", "dynamic": True, "strategy": "token"}}}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    args = ["recommend", "--target", str(tmp_path), "--method", "ngram", "--prompt-len", "2000", "--out-len", "500",
            "--format", "json"]
    assert main([*args, "--gpu", "h100-sxm"]) == 0
    report = json.loads(capsys.readouterr().out)
    llama = load_model("llama-3.1-8b-instruct")
    embeddings = 2 * llama.vocab_size * llama.hidden_size  # embed_tokens and lm_head stay 16 bit
    hand = (embeddings * 2 + (llama.total_params - embeddings) * (4 + 16 / 128) / 8) / 1e9
    assert abs(report["memory"]["target_weights_gb"] - hand) < 0.01  # norms' few weights at 16 bit, rounding
    assert "(fp8)" in report["cost_source"]  # W4A8-fp8 multiplies in fp8 (CUTLASS W4A8)
    assert main([*args, "--gpu", "b200"]) == 2
    assert "compute capability 9.0" in capsys.readouterr().err
