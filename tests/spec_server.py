"""One speculative `vllm serve` for the whole session: the generated tiny pair with its draft at k = K, shared by
the engine tests that read a live server (calibration/from_bench, observe). Sharing it saves a server start (about
a minute on the 2-core CI machine); each test reads only what changed during its own load (a window's scrapes, a
bench's before/after), so what another test sent first does not matter."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from vllm_server import Server, write_tokenizer

from calibration.engine.testpair import PairSpec, TinyArch, make_pair

K = 3
# The test pair's architecture, with a vocabulary past the 10000 prompt ids `vllm bench latency` draws
ARCH = TinyArch(vocab_size=10240)


@dataclass(frozen=True)
class SpecServer:
    target: Path
    draft: Path
    config: str  # the --speculative-config JSON it was started with
    server: Server  # started, not necessarily ready: call server.wait_ready()


def start(root: Path) -> SpecServer:
    pair = make_pair(root / "pair", PairSpec(scale=0.05, arch=ARCH))
    for model in (pair.target_dir, pair.draft_dir):
        write_tokenizer(model, ARCH.vocab_size)
    config = json.dumps({"method": "draft_model", "model": str(pair.draft_dir), "num_speculative_tokens": K})
    server = Server(pair.target_dir, root / "spec.log", ["--speculative-config", config])
    return SpecServer(pair.target_dir, pair.draft_dir, config, server)
