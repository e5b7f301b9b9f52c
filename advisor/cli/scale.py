"""`recommend`'s flags for a deployment beyond one GPU group, in vLLM's names, declared once.

`@deployment_options` (below `@scenario_command`) appends them to the command's signature, builds the Deployment,
and answers at scale (advisor.scale.advise, advisor.render.scale_report) when the shape goes past one
tensor-parallel engine; otherwise the command runs as before. Only typer is imported at start-up.
"""

from __future__ import annotations

import functools
import inspect
from typing import Optional

import typer

from advisor.vllm.parallel import DEFAULT_ALL2ALL_BACKEND


def _option(name: str, annotation, default) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


DEPLOYMENT_OPTIONS = [
    _option("data_parallel_size", int, typer.Option(1, "--data-parallel-size", help="vLLM's DP ranks, each "
                                                    "--num-gpus GPUs; --batch is spread over them.")),
    _option("enable_expert_parallel", bool, typer.Option(False, "--enable-expert-parallel", help="Routed experts "
                                                         "over all the GPUs (vLLM's flag).")),
    _option("all2all_backend", str, typer.Option(DEFAULT_ALL2ALL_BACKEND, "--all2all-backend", help="vLLM's MoE "
                                                 "all-to-all: allgather_reducescatter or deepep_low_latency.")),
    _option("enable_dbo", bool, typer.Option(False, "--enable-dbo", help="vLLM's dual batch overlap.")),
    _option("nodes", int, typer.Option(1, "--nodes", help="Nodes the instance's GPUs span (whole DP ranks on each).")),
    _option("disaggregated", bool, typer.Option(False, "--disaggregated", help="PD: a decode-only instance (prefill "
                                                "elsewhere, its time reported apart).")),
    _option("dp_imbalance", float, typer.Option(1.0, "--dp-imbalance", help="Busiest DP rank's requests over the "
                                                "mean.")),
    _option("redundant_experts", int, typer.Option(0, "--redundant-experts", help="EPLB's extra expert replicas per "
                                                   "MoE layer (vLLM's --eplb-config num_redundant_experts).")),
    _option("request_rate", Optional[float], typer.Option(None, "--request-rate", help="Requests/s offered: sets the "
                                                          "concurrency (replaces --batch) by review's queueing, and "
                                                          "says first when prefill saturates the GPUs.")),
]
FILE_FORMATS = ("llm-d", "ray")  # deployment files: written at scale only (advisor.scale.llmd, advisor.scale.ray_serve)
DEPLOYMENT_NAMES = tuple(p.name for p in DEPLOYMENT_OPTIONS)


def deployment_options(func):
    """Decorate a command taking `scenario` and `format`: add the deployment flags; answer at scale beyond one GPU
    group, else call it. It asks `@scenario_command` for the flags as typed (`scenario_flags`): a
    --max-num-batched-tokens left unset is vLLM's to choose per shape (256 with DeepEP low-latency)."""
    own = list(inspect.signature(func).parameters.values())
    params = [*own, _option("scenario_flags", Optional[dict], None), *DEPLOYMENT_OPTIONS]

    @functools.wraps(func)
    def command(*, scenario, scenario_flags=None, **kwargs):
        from advisor.model.parallel.deployment import Deployment

        shape = {name: kwargs.pop(name) for name in DEPLOYMENT_NAMES}
        rate = shape.pop("request_rate")
        kind = getattr(kwargs.get("format"), "value", kwargs.get("format"))
        if not hasattr(scenario, "setup"):  # --method compare: a Recommendation of every method, for one GPU group
            if any(shape[p.name] != p.default.default for p in DEPLOYMENT_OPTIONS if p.name in shape) or rate:
                from advisor.errors import InputError

                raise InputError("--method compare answers for one GPU group at a batch: name one --method to size a "
                                 "deployment with DP, EP, PD or several nodes, or at a --request-rate")
            return func(scenario=scenario, **kwargs)
        deployment = Deployment(
            tensor_parallel_size=scenario.setup.tp, data_parallel_size=shape["data_parallel_size"],
            enable_expert_parallel=shape["enable_expert_parallel"], all2all_backend=shape["all2all_backend"],
            enable_dbo=shape["enable_dbo"], nodes=shape["nodes"], disaggregated=shape["disaggregated"],
            imbalance=shape["dp_imbalance"], redundant_experts=shape["redundant_experts"],
            max_num_batched_tokens=(scenario_flags or {}).get("max_num_batched_tokens"),
            max_num_seqs=(scenario_flags or {}).get("max_num_seqs"))
        if not deployment.beyond_one_group:
            if kind in FILE_FORMATS:
                from advisor.errors import InputError

                raise InputError(f"--format {kind} writes the files of a deployment at scale: give "
                                 "--data-parallel-size, --enable-expert-parallel, --disaggregated or --nodes")
            if rate is not None:
                from advisor.advice.rate import at_rate

                scenario = at_rate(scenario, rate)
            return func(scenario=scenario, **kwargs)
        from advisor.render import scale_report
        from advisor.scale.load import answer

        at_scale = answer(scenario, deployment, rate)
        if kind in FILE_FORMATS:
            from advisor.scale import llmd, ray_serve

            render = {"llm-d": llmd.render, "ray": ray_serve.render}[kind]
        else:
            render = {"json": scale_report.to_json, "markdown": scale_report.markdown}.get(kind, scale_report.text)
        typer.echo(render(at_scale), nl=False)

    command.__signature__ = inspect.Signature(params)
    return command
