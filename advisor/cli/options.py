"""The scenario flags that `recommend`, `plot` (and any later command about one workload) share, declared once.

`@scenario_command` appends them to a typer command's signature and hands the command a built `Scenario` in
its `scenario` parameter. Typer reads parameters from `inspect.signature`, which honours `__signature__`, so the
flags show up in `--help` like hand-written ones. Only typer is imported here: building the scenario (numpy,
profiles) happens when the command runs, which keeps `specadvisor --help` and `list` fast.
"""

from __future__ import annotations

import functools
import inspect
import typing
from enum import Enum
from typing import Optional

import typer

from advisor.cli.build import build_from_options
from advisor.errors import InputError
from advisor.vllm.defaults import GPU_MEMORY_UTILIZATION, MAX_K


class Method(str, Enum):
    draft_model = "draft_model"
    ngram = "ngram"
    eagle = "eagle"


def _option(name: str, annotation, default) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


# (name, type, typer.Option): the order here is the order in --help.
SCENARIO_OPTIONS = [
    _option("prompt_len", int, typer.Option(..., help="Prompt tokens per request.")),
    _option("out_len", int, typer.Option(..., help="Output tokens per request.")),
    _option("target", str, typer.Option("llama-3.1-8b-instruct",
                                        help="Target: a profile name or a directory with config.json.")),
    _option("draft", Optional[str], typer.Option(None, help="Draft model / EAGLE head: profile name or directory. "
                                                 "Default: Llama-3.2-1B for the default target, else a same-family model.")),
    # a plain string: resolve says in one line why a vLLM method is not modelled, which a choice list cannot
    _option("method", str, typer.Option("draft_model", help="How drafts are proposed: draft_model, eagle, eagle3, mtp, "
                                        "ngram, ngram_gpu, suffix (`specadvisor list methods`); recommend also takes compare: "
                                        "every method that applies.")),
    _option("gpu", str, typer.Option("rtx-pro-6000-blackwell", help="GPU profile name (`specadvisor list hardware`), or auto (detect via NVML).")),
    _option("num_gpus", int, typer.Option(1, help="GPUs for tensor parallelism.")),
    _option("batch", int, typer.Option(1, help="Concurrent requests.")),
    _option("temperature", float, typer.Option(0.0, help="Sampling temperature served.")),
    _option("k", Optional[int], typer.Option(None, help=f"Evaluate this draft length (0..{MAX_K}) instead of choosing one.")),
    _option("gpu_memory_utilization", float, typer.Option(GPU_MEMORY_UTILIZATION, help="vLLM's --gpu-memory-utilization.")),
    _option("max_num_seqs", Optional[int], typer.Option(None, help="vLLM's --max-num-seqs (default: vLLM's for the "
                                                        "GPU class); caps the requests run at once.")),
    _option("max_num_batched_tokens", Optional[int], typer.Option(None, help="vLLM's --max-num-batched-tokens "
                                                                  "(default: vLLM's for the GPU class).")),
    _option("alpha", Optional[float], typer.Option(None, help="Per-token acceptance probability α (Leviathan et al.).")),
    _option("acceptance_rate", Optional[float], typer.Option(None, help="vLLM's accepted/drafted tokens (needs --measured-k).")),
    _option("acceptance_length", Optional[float], typer.Option(None, help="Mean tokens per step incl. bonus (needs --measured-k).")),
    _option("measured_k", Optional[int], typer.Option(None, help="The k that rate or length was measured at.")),
    _option("acceptance_per_pos", Optional[str], typer.Option(None, help="vLLM's per-position acceptance rates, e.g. 0.8,0.6,0.45.")),
    _option("task", Optional[str], typer.Option(None, help="Acceptance prior for this kind of traffic "
                                               "(`specadvisor list tasks`); none: the drafter's general prior.")),
    _option("metrics", Optional[str], typer.Option(None, help="Acceptance from vLLM spec-decode counters: a server URL "
                                                   "(http://host:8000) or a Prometheus text file (`specadvisor acceptance ... --save`).")),
    _option("measured_temperature", Optional[float], typer.Option(None, help="Temperature the acceptance was measured at.")),
    _option("cost_ratio", Optional[float], typer.Option(None, help="Expert override: draft step time / target step time.")),
    _option("calibration", Optional[str], typer.Option(None, help="Calibration profile JSON from `specadvisor calibrate` "
                                                       "(default: a matching one in profiles/calibrations; 'datasheet': "
                                                       "none, the datasheet's costs).")),
    _option("engine", str, typer.Option("vllm", help="The serving engine priced: vllm (default), sglang or trtllm: "
                                        "its own per-step, per-token and drafting terms, fitted on its published "
                                        "rows (docs/datasheet-fit.md), on the datasheet's costs; the flags printed "
                                        "stay vLLM's.")),
    _option("quantization", Optional[str], typer.Option(None, help="vLLM's --quantization for the target: fp8 "
                                                        "(online) on a 16-bit checkpoint; a quantized checkpoint's "
                                                        "own (fp8, compressed-tensors, modelopt, mxfp4, quark, awq, "
                                                        "gptq) is read from its config.json.")),
    _option("draft_quantization", Optional[str], typer.Option(None, help="The same for the draft model "
                                                              "(speculative config's quantization).")),
    _option("kv_cache_dtype", str, typer.Option("auto", help="vLLM's --kv-cache-dtype: auto (the model's dtype), "
                                                "fp8, fp8_e4m3, fp8_e5m2, nvfp4, nvfp4_4over6.")),
]
SCENARIO_NAMES = frozenset(p.name for p in SCENARIO_OPTIONS)


# A count past 64 bits is no count vLLM takes (its flags are C longs): a 400-digit --batch or --data-parallel-size
# reached float() somewhere and was a traceback.
MAX_COUNT = 2**63


def check_counts(values: dict) -> dict:
    """`values` (flag name -> value), once every whole number among them fits 64 bits; else one line naming it."""
    for name, value in values.items():
        if isinstance(value, int) and not isinstance(value, bool) and not -MAX_COUNT < value < MAX_COUNT:
            digits = len(str(abs(value)))
            raise InputError(f"--{name.replace('_', '-')} is a {digits}-digit number, past any count vLLM takes "
                             "(64 bits)")
    return values


def scenario_command(func=None, *, compares: bool = False):
    """Decorate a typer command that takes `scenario` (plus its own options): the shared flags are added to its
    CLI and built into a Scenario before it runs. Apply it below `@app.command()`. With `compares`, --method compare
    hands it a Recommendation instead: every method compared (advisor/cli/compare.py)."""
    if func is None:
        return functools.partial(scenario_command, compares=compares)
    # The command's own annotations may name Scenario only for type checkers; it is never a CLI parameter.
    hints = typing.get_type_hints(func, localns={"Scenario": object})
    own = [p.replace(annotation=hints.get(p.name, p.annotation))
           for p in inspect.signature(func).parameters.values() if p.name not in ("scenario", "scenario_flags")]
    clash = SCENARIO_NAMES & {p.name for p in own}
    if clash:
        raise TypeError(f"{func.__name__}: parameters {sorted(clash)} are scenario flags already")
    params = [*SCENARIO_OPTIONS, *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own)]
    wants_flags = "scenario_flags" in inspect.signature(func).parameters

    @functools.wraps(func)
    def command(**kwargs):
        check_counts(kwargs)
        flags = {name: kwargs.pop(name) for name in SCENARIO_NAMES}
        if wants_flags:  # the flags as typed, for what a Scenario does not keep (e.g. a limit left to vLLM)
            kwargs["scenario_flags"] = dict(flags)
        if flags["method"].strip().lower() == "compare":
            if not compares:
                raise InputError(f"--method compare works with `recommend` only, not `{func.__name__}`")
            from advisor.cli.compare import compare_from_options

            return func(scenario=compare_from_options(flags), **kwargs)
        return func(scenario=build_from_options(**flags), **kwargs)

    command.__signature__ = inspect.Signature(params)
    command.__annotations__ = {p.name: p.annotation for p in params}
    return command
