"""advisor/scale/ray_serve.py: the Ray Serve LLM config parses with Ray's own types (LLMConfig and the builders'
serving args, Ray 2.60) and its engine_kwargs are the pasted flags, as vLLM's own argument parser reads them."""

import dataclasses
import shlex

import pytest

from advisor.model.parallel.deployment import Deployment
from advisor.scale import ray_serve
from advisor.scale.load import answer
from advisor.scale.serve import decode_commands, prefill_commands
from tests.scale_scenarios import scenario
from vllm_serve_parser import serve_engine_args

yaml = pytest.importorskip("yaml")

WIDE = dict(data_parallel_size=16, enable_expert_parallel=True, nodes=2, all2all_backend="deepep_low_latency",
            enable_dbo=True)


PLACEMENT = ("data_parallel_size_local", "data_parallel_address", "data_parallel_start_rank")


def comparable(value, like):
    """`value` as `like`'s kind: a dict given for a config vLLM's parser builds (KVTransferConfig, EPLBConfig) built
    the same way, then either as its fields, less the engine_id vLLM draws at random for each KVTransferConfig."""
    if dataclasses.is_dataclass(like) and isinstance(value, dict):
        value = type(like)(**value)
    if dataclasses.is_dataclass(value):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.name != "engine_id"}
    return value


def same_engine(command: str, config: dict):
    """The pasted command and the LLMConfig's engine_kwargs give vLLM the same engine arguments (placement aside)."""
    from vllm.engine.arg_utils import AsyncEngineArgs

    pasted, _ = serve_engine_args(command)
    built = AsyncEngineArgs(model=config["model_loading_config"]["model_source"], **config["engine_kwargs"])
    assert config["engine_kwargs"] and not set(config["engine_kwargs"]) & set(PLACEMENT)
    for name in config["engine_kwargs"]:  # each flag the command sets (vLLM's parser and dataclass defaults differ)
        mine, theirs = getattr(built, name), getattr(pasted, name)
        assert comparable(mine, theirs) == comparable(theirs, theirs), name
    flags = {w[2:].replace("-", "_") for w in shlex.split(command) if w.startswith("--")}
    assert flags - set(PLACEMENT) - {"headless"} == set(config["engine_kwargs"])  # and no flag is left out


@pytest.mark.parametrize("shape, builder", [
    (dict(**WIDE, disaggregated=True), "build_pd_openai_app"),
    (WIDE, "build_dp_openai_app"),
    (dict(tensor_parallel_size=8, enable_expert_parallel=True), "build_openai_app"),
])
def test_the_ray_config_is_rays_own_and_carries_the_pasted_flags(shape, builder):
    llm = pytest.importorskip("ray.serve.llm")
    pytest.importorskip("vllm.engine.arg_utils")
    s = scenario(batch=2048, num_gpus=shape.get("tensor_parallel_size", 1))
    a = answer(s, Deployment(**shape))
    doc = yaml.safe_load(ray_serve.render(a))
    app = doc["applications"][0]
    assert app["import_path"] == f"ray.serve.llm:{builder}"
    args = app["args"]
    if builder == "build_pd_openai_app":
        from ray.llm._internal.serve.serving_patterns.prefill_decode.builder import PDServingArgs

        PDServingArgs.model_validate(args)  # Ray's own checks: same model, kv_transfer_config on both sides
        same_engine(prefill_commands(a)[0], args["prefill_config"])
        same_engine(decode_commands(a)[0], args["decode_config"])
    elif builder == "build_dp_openai_app":
        from ray.llm._internal.serve.serving_patterns.data_parallel.builder import DPOpenAiServingArgs

        DPOpenAiServingArgs.model_validate(args)
        same_engine(decode_commands(a)[0], args["llm_config"])
    else:
        llm.LLMServingArgs.model_validate(args)
        same_engine(decode_commands(a)[0], args["llm_configs"][0])
    for config in [v for v in args.values() if isinstance(v, dict)] + args.get("llm_configs", []):
        assert isinstance(llm.LLMConfig.model_validate(config), llm.LLMConfig)
