"""`recommend --format ray`: the deployment at scale as a Ray Serve LLM application config (`serve run config.yaml`),
written for Ray 2.60: `ray.serve.llm:build_openai_app` (one DP rank), `build_dp_openai_app` (DP > 1: Ray places
one replica per DP rank) or `build_pd_openai_app` (PD: its ingress sends each prompt to the prefill deployment
and its decode to the decode deployment, the role vllm-router plays in the text report). Each LLMConfig's
engine_kwargs are the pasted `vllm serve` flags, word for word (`advisor.scale.serve`), less the flags that place
DP ranks on nodes, which Ray sets itself.
"""

from __future__ import annotations

import json
import shlex

from advisor.fileio.yaml_text import dump
from advisor.scale.advise import ScaleAdvice
from advisor.scale.serve import decode_commands, prefill_commands

# `vllm serve` flags Ray Serve LLM sets itself when it places DP ranks (its DP builder starts one engine per rank)
PLACEMENT_FLAGS = ("--data-parallel-size-local", "--data-parallel-address", "--data-parallel-start-rank",
                   "--headless")
SWITCHES = ("--enable-expert-parallel", "--enable-dbo", "--enable-eplb", "--headless")  # take no value


def engine_kwargs(command: str) -> tuple[str, dict]:
    """(model, engine_kwargs) of a pasted `vllm serve` line: each --flag-name as flag_name, JSON values (the
    speculative, kv-transfer and EPLB configs, numbers) as JSON reads them, switches as true."""
    words = shlex.split(command)[2:]
    model, rest = words[0], words[1:]
    kwargs, i = {}, 0
    while i < len(rest):
        flag = rest[i]
        takes = flag not in SWITCHES
        value = rest[i + 1] if takes else True
        i += 2 if takes else 1
        if flag in PLACEMENT_FLAGS:
            continue
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass
        kwargs[flag.removeprefix("--").replace("-", "_")] = value
    return model, kwargs


def llm_config(command: str) -> dict:
    model, kwargs = engine_kwargs(command)
    return {"model_loading_config": {"model_id": model, "model_source": model}, "engine_kwargs": kwargs}


def application(a: ScaleAdvice) -> dict | None:
    """The Serve application (import_path and args); None where the target does not fit."""
    decode = decode_commands(a)
    if not decode:
        return None
    prefill = prefill_commands(a)
    if prefill:
        path, args = "build_pd_openai_app", {"prefill_config": llm_config(prefill[0]),
                                             "decode_config": llm_config(decode[0])}
    elif a.deployment.data_parallel_size > 1:
        path, args = "build_dp_openai_app", {"llm_config": llm_config(decode[0])}
    else:
        path, args = "build_openai_app", {"llm_configs": [llm_config(decode[0])]}
    return {"name": "specadvisor", "route_prefix": "/", "import_path": f"ray.serve.llm:{path}", "args": args}


def render(a: ScaleAdvice) -> str:
    """`serve run`'s config file; one comment line where the target does not fit."""
    app = application(a)
    if app is None:
        return f"# no Ray Serve config: {a.does_not_fit}\n"
    return dump({"applications": [app]})
