"""Scenarios the scale tests share, built through the same resolve path `recommend` takes, and a hypothesis
strategy over deployments beyond one GPU group (DP, EP, backends, DBO, PD, nodes)."""

from __future__ import annotations

from hypothesis import strategies as st

from advisor.cli.build import build_from_options
from advisor.errors import InputError
from advisor.model.parallel.deployment import Deployment

ACCEPTANCE_UNSET = {"alpha": None, "acceptance_rate": None, "acceptance_length": None, "measured_k": None,
                    "acceptance_per_pos": None, "task": None, "metrics": None, "measured_temperature": None}


def scenario(target="deepseek-v3", method="mtp", gpu="h200", batch=2048, prompt_len=2000, out_len=2000, alpha=None,
             num_gpus=1, k=None, max_num_batched_tokens=None, max_num_seqs=None, acceptance_per_pos=None,
             quantization=None):
    flags = {"prompt_len": prompt_len, "out_len": out_len, "target": target, "draft": None, "gpu": gpu,
             "num_gpus": num_gpus, "batch": batch, "temperature": 0.0, "k": k, "gpu_memory_utilization": 0.92,
             "max_num_seqs": max_num_seqs, "max_num_batched_tokens": max_num_batched_tokens, "cost_ratio": None,
             "calibration": "datasheet", "quantization": quantization, "draft_quantization": None,
             "kv_cache_dtype": "auto"}
    return build_from_options(method=method, **{**ACCEPTANCE_UNSET, "alpha": alpha,
                                                "acceptance_per_pos": acceptance_per_pos}, **flags)


# (target, method, quantization): MoE targets with their own MTP layers or an EAGLE-3 head, a dense one, a lookup
PAIRS = [("deepseek-v3", "mtp", None), ("glm-5.2", "mtp", None), ("glm-5.2", "mtp", "fp8"),
         ("qwen3-30b-a3b", "eagle3", None), ("qwen3-30b-a3b", "ngram_gpu", None),
         ("llama-3.1-8b-instruct", "eagle3", None), ("kimi-k2.5", "eagle3", None)]
GPUS = ["h200", "h100-sxm", "b200", "rtx-4090", "mi300x"]


@st.composite
def scale_cases(draw):
    """(scenario, deployment, the GPU's profile name), or None where the flags are refused in one line (nothing is
    pasted then)."""
    target, method, quantization = draw(st.sampled_from(PAIRS))
    tp = draw(st.sampled_from([1, 2, 4, 8]))
    dp = draw(st.sampled_from([1, 2, 4, 8, 16, 32]))
    nodes = draw(st.sampled_from([n for n in (1, 2, 4) if dp % n == 0 and tp * dp // n <= 8 or n == 1]))
    ep = draw(st.booleans())
    backend = draw(st.sampled_from(["allgather_reducescatter", "deepep_low_latency"]))
    dbo = draw(st.booleans()) and ep and backend == "deepep_low_latency"
    per_pos = draw(st.sampled_from([None, "0.9,0.75", "0.8,0.6,0.45", "0.95"]))
    alpha = None if per_pos else draw(st.floats(0.3, 0.95))
    gpu = draw(st.sampled_from(GPUS))
    try:
        s = scenario(target=target, method=method, gpu=gpu, num_gpus=tp,
                     batch=draw(st.sampled_from([1, 16, 256, 2048, 8192])), prompt_len=draw(st.integers(16, 8000)),
                     out_len=draw(st.integers(2, 2000)), alpha=alpha, acceptance_per_pos=per_pos,
                     quantization=quantization, max_num_seqs=draw(st.sampled_from([None, None, 64])))
        d = Deployment(tensor_parallel_size=tp, data_parallel_size=dp, enable_expert_parallel=ep,
                       all2all_backend=backend, enable_dbo=dbo, nodes=nodes, disaggregated=draw(st.booleans()),
                       imbalance=draw(st.sampled_from([1.0, 1.3])), max_num_seqs=s.setup.target_cost.max_num_seqs
                       if s.setup.target_cost.max_num_seqs == 64 else None)
    except InputError:
        return None
    return s, d if d.beyond_one_group else Deployment(tensor_parallel_size=tp, data_parallel_size=2), gpu
