"""Scenarios the scale tests share, built through the same resolve path `recommend` takes."""

from __future__ import annotations

from advisor.cli.build import build_from_options

ACCEPTANCE_UNSET = {"alpha": None, "acceptance_rate": None, "acceptance_length": None, "measured_k": None,
                        "acceptance_per_pos": None, "task": None, "metrics": None, "measured_temperature": None}


def scenario(target="deepseek-v3", method="mtp", gpu="h200", batch=2048, prompt_len=2000, out_len=2000, alpha=None,
             num_gpus=1, k=None, max_num_batched_tokens=None):
    flags = {"prompt_len": prompt_len, "out_len": out_len, "target": target, "draft": None, "gpu": gpu, "num_gpus": num_gpus,
                 "batch": batch, "temperature": 0.0, "k": k, "gpu_memory_utilization": 0.92, "max_num_seqs": None,
                 "max_num_batched_tokens": max_num_batched_tokens, "cost_ratio": None, "calibration": "datasheet",
                 "quantization": None, "draft_quantization": None, "kv_cache_dtype": "auto"}
    return build_from_options(method=method, **{**ACCEPTANCE_UNSET, "alpha": alpha}, **flags)
