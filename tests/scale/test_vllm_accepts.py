"""Issue 48: every `vllm serve` the scale path pastes is one vLLM 0.32 accepts. Each command of a sweep of scale
scenarios (DP, EP, both backends, DBO, PD's two pools, several nodes, EPLB, a user's limits) is read by vLLM's own
argument parser into its EngineArgs, and the config checks that need no device run on what it asks for: the
ParallelConfig (DP, EP, the backend, DBO's thresholds), VllmConfig's DBO assert, the SpeculativeConfig (on a local
copy of the target's config.json: the MTP layers, k, the draft's TP), the KVTransferConfig, and the scheduler's
limits (SchedulerConfig)."""

from pathlib import Path

import pytest

from advisor.model.parallel.deployment import Deployment
from advisor.scale.load import answer
from advisor.scale.serve import decode_commands, prefill_commands
from tests.scale_scenarios import scenario
from vllm_dbo import keep_dbo  # noqa: F401  (the fixture)
from vllm_serve_parser import serve_engine_args

config = pytest.importorskip("vllm.config")
PROFILES = Path(__file__).parents[2] / "profiles" / "models"
HF_TO_PROFILE = {"deepseek-ai/DeepSeek-V3": "deepseek-v3", "Qwen/Qwen3-30B-A3B": "qwen3-30b-a3b",
                 "AngelSlim/Qwen3-30B-A3B_eagle3": "eagle3-qwen3-30b-a3b"}
WIDE = dict(enable_expert_parallel=True, all2all_backend="deepep_low_latency")
SWEEP = [
    (dict(batch=2048), dict(data_parallel_size=16, nodes=2, enable_dbo=True, disaggregated=True, **WIDE)),
    (dict(batch=2048), dict(data_parallel_size=16, nodes=2, enable_expert_parallel=True)),
    (dict(batch=1024), dict(data_parallel_size=8, enable_dbo=True, **WIDE)),
    (dict(batch=512, alpha=0.9), dict(data_parallel_size=8, enable_expert_parallel=True, disaggregated=True)),
    (dict(batch=4096), dict(data_parallel_size=32, nodes=4, enable_dbo=True, redundant_experts=32, **WIDE)),
    (dict(batch=512, max_num_seqs=48), dict(data_parallel_size=8, max_num_seqs=48, **WIDE)),
    (dict(batch=1024, max_num_batched_tokens=1024), dict(data_parallel_size=16, nodes=2, max_num_batched_tokens=1024,
                                                         enable_dbo=True, **WIDE)),
    (dict(target="qwen3-30b-a3b", method="eagle3", gpu="h100-sxm", batch=256, num_gpus=2),
     dict(tensor_parallel_size=2, data_parallel_size=4, enable_expert_parallel=True, disaggregated=True)),
    (dict(target="qwen3-30b-a3b", method="eagle3", gpu="h100-sxm", batch=64, num_gpus=4),
     dict(tensor_parallel_size=4, enable_expert_parallel=True)),
    (dict(target="qwen3-30b-a3b", method="ngram_gpu", gpu="h100-sxm", batch=512, alpha=0.6),
     dict(data_parallel_size=8, enable_dbo=True, **WIDE)),
]


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")

    def make(hf_id: str) -> str:
        folder = root / HF_TO_PROFILE[hf_id]
        if not folder.exists():
            folder.mkdir()
            (folder / "config.json").write_text((PROFILES / f"{HF_TO_PROFILE[hf_id]}.json").read_text())
        return str(folder)

    return make


def engine_args(command: str):
    """vLLM's EngineArgs of a pasted line, by `vllm serve`'s own parser (an unknown flag or value exits)."""
    return serve_engine_args(command)[0]


def vllm_checks(e, local, monkeypatch) -> None:
    """The config checks of what the EngineArgs ask for that need no device. EPLB's own check refuses any platform
    but CUDA, ROCm and XPU (ParallelConfig: "only supported on CUDA devices"): the ParallelConfig is built with the
    platform answering as CUDA (and VllmConfig, which validates it again), the rest of its checks as they are."""
    import vllm.platforms

    with monkeypatch.context() as gpu:
        if e.enable_eplb:
            gpu.setattr(type(vllm.platforms.current_platform), "is_cuda_alike", lambda self: True)
        parallel = config.ParallelConfig(
            tensor_parallel_size=e.tensor_parallel_size, data_parallel_size=e.data_parallel_size,
            enable_expert_parallel=e.enable_expert_parallel, all2all_backend=e.all2all_backend,
            enable_dbo=e.enable_dbo, enable_eplb=e.enable_eplb, eplb_config=e.eplb_config)
        built = config.VllmConfig(parallel_config=parallel)  # the microbatching (DBO) backend assert, among its checks
    assert built.parallel_config.enable_dbo == e.enable_dbo
    if e.speculative_config:
        target = config.ModelConfig(model=local(e.model), skip_tokenizer_init=True, max_model_len=e.max_model_len)
        spec = dict(e.speculative_config)
        if "model" in spec:
            spec["model"] = local(spec["model"])
        built = config.SpeculativeConfig(**spec, target_model_config=target, target_parallel_config=parallel)
        assert built.num_speculative_tokens == e.speculative_config["num_speculative_tokens"]
    if e.kv_transfer_config is not None:
        kv = e.kv_transfer_config
        assert (kv.kv_connector, kv.kv_role) in {("NixlConnector", "kv_consumer"), ("NixlConnector", "kv_producer")}
    # the scheduler's limits: the pasted ones, the token budget vLLM sets under batched DP MoE where none is pasted
    tokens = e.max_num_batched_tokens or (config.SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS_FOR_BATCHED_DP
                                          if parallel.use_batched_dp_moe else None)
    if e.max_num_seqs is not None and tokens is not None:
        config.SchedulerConfig(max_num_seqs=e.max_num_seqs, max_num_batched_tokens=tokens,
                               max_model_len=e.max_model_len, is_encoder_decoder=False)


@pytest.mark.parametrize("case", range(len(SWEEP)))
def test_every_pasted_command_is_one_vllm_accepts(case, local, keep_dbo, monkeypatch):
    flags, shape = SWEEP[case]
    a = answer(scenario(**flags), Deployment(**shape))
    commands = [*decode_commands(a), *prefill_commands(a)]
    assert commands, a.does_not_fit
    for command in commands:
        e = engine_args(command)
        vllm_checks(e, local, monkeypatch)
        assert e.data_parallel_size == (a.deployment.data_parallel_size if command in decode_commands(a)
                                        else a.prefill_pool.instance.data_parallel_size)


def test_dbo_on_the_default_backend_is_what_vllm_refuses(keep_dbo):
    """What the scale path refuses (exit 2) is what vLLM's config would refuse on every node."""
    parallel = config.ParallelConfig(data_parallel_size=8, enable_expert_parallel=True, enable_dbo=True)
    with pytest.raises((AssertionError, ValueError), match="Microbatching currently only supports"):  # pydantic's
        config.VllmConfig(parallel_config=parallel)
