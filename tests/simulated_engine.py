"""An engine as `calibration.engine.vllm_engine.open_engine` would start it on the simulated CUDA platform
(tests/simulated_cuda.py), without starting anything: its arguments come from this project's `engine_arguments` and
its CUDA-graph mode from vLLM's own CompilationConfig; it answers every timing with 1 ms, and a speculative engine's
draft counter moves as vLLM's does. Install it with `monkeypatch.setattr(measure, "open_engine", StandInEngine)`."""

from types import SimpleNamespace

from vllm.config import CompilationConfig
from vllm.config.speculative import SpeculativeConfig

from simulated_cuda import v2_decision

from advisor.measured.metrics import ACCEPTED, DRAFT_TOKENS, DRAFTS, PER_POS
from calibration.engine.arguments import engine_arguments
from calibration.engine.vllm_engine import Completion


def resolved(args: dict) -> dict:
    """What vLLM resolves from these LLM arguments for what the tests read: the model runner by vLLM's own rule
    (`v2_decision`, under the `cuda` fixture), the CUDA-graph mode through vLLM's own CompilationConfig
    (FULL_AND_PIECEWISE when none is given, as VllmConfig sets it on CUDA) and the drafts."""
    mode = CompilationConfig(**args.get("compilation_config", {})).cudagraph_mode
    spec = args.get("speculative_config") or {}
    return {"model_runner": "v2" if v2_decision(spec.get("method")) else "v1",
            "async_scheduling": args["async_scheduling"], "enforce_eager": args["enforce_eager"],
            "cudagraph_mode": mode.name if mode is not None else "FULL_AND_PIECEWISE", "block_size": 16,
            "attention_backend": "FLASH_ATTN", "max_cudagraph_capture_size": 512,
            "speculative_method": spec.get("method"), "num_speculative_tokens": spec.get("num_speculative_tokens", 0)}


class StandInEngine:
    """An engine as open_engine would start it on the simulated GPU (its arguments from engine_arguments), answering
    every timing with 1 ms. Its prompts are random: no n-gram of them recurs. So an n-gram engine on Model Runner V2
    (which routes n-gram to its NgramGPUSpeculator: vLLM's `SpeculativeConfig.use_ngram`) verifies a filler for
    every sequence at every step and vLLM counts each as a draft of k tokens, none accepted, as a uniform
    verification's steps show in its counters; on the V1 runner it drafts nothing. `opened` lists every engine
    started, in order."""

    vocab_size, block_size, kv_capacity_tokens, tensor_parallel_size = 256, 16, 0, 1
    max_num_batched_tokens, max_num_seqs, dtype, vllm_version = 8192, 1024, "bfloat16", "0.32.0"
    opened: list = []

    def __init__(self, model, **kwargs):
        self.model = str(model)
        self.engine_args, _ = engine_arguments(model, cpu=False, **kwargs)
        self.vllm_config = resolved(self.engine_args)
        self.drafts = 0
        StandInEngine.opened.append(self)

    def generate(self, prompts, max_tokens, *args, **kwargs):
        method, runner = self.vllm_config["speculative_method"], self.vllm_config["model_runner"]
        if method and runner == "v2" and SpeculativeConfig.use_ngram(SimpleNamespace(method=method)):
            self.drafts += len(prompts) * (max_tokens - 1)  # no draft accepted: one step per token after the first
        cached = len(prompts[0]) // self.block_size * self.block_size
        return [Completion(len(p), (1,) * max_tokens, cached, 0.0, 0.001, 0.001 * max_tokens, 0) for p in prompts]

    def metrics(self):
        k = self.vllm_config["num_speculative_tokens"]
        return {DRAFTS: self.drafts, DRAFT_TOKENS: k * self.drafts, ACCEPTED: 0, PER_POS: [0] * k}

    def _checked(self, done, cached):
        return done

    def prefill(self, prompts):
        return 0.001

    def decode(self, prefixes, steps, repeats=1, *, prime=True):
        return [0.001] * repeats

    def verify(self, prefixes, q, repeats=1, *, prime=True):
        assert not self.vllm_config["num_speculative_tokens"], "a cached-prefix verify in a speculative engine"
        return [0.001] * repeats

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
