"""A bounded load for a test server: `requests` completions of exactly `prompt_len` prompt tokens and `out_len`
output tokens, at most `concurrency` in flight, against 127.0.0.1 only.

Prompts go as token ids (no tokenizer in the way) and outputs ignore EOS, so the lengths vLLM records in its
histograms are the ones sent, and the test can compare what `specadvisor observe` derives with them.
"""

from __future__ import annotations

import json
import random
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

REQUEST_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Phase:
    prompt_len: int
    out_len: int
    requests: int
    concurrency: int


def _one(url: str, model: str, phase: Phase, seed: int, vocab: int) -> tuple[int, int]:
    rng = random.Random(seed)
    body = dict(model=model, prompt=[rng.randrange(1, vocab) for _ in range(phase.prompt_len)],
                max_tokens=phase.out_len, min_tokens=phase.out_len, ignore_eos=True, temperature=0.0)
    request = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
        usage = json.loads(response.read())["usage"]
    return usage["prompt_tokens"], usage["completion_tokens"]


def drive(url: str, model: str, phase: Phase, vocab: int, seed: int = 0) -> list[tuple[int, int]]:
    """Send the phase's requests; (prompt tokens, completion tokens) of each, as the server counted them."""
    assert url.startswith("http://127.0.0.1:"), "test load goes to the loopback server only"
    with ThreadPoolExecutor(phase.concurrency) as pool:
        return list(pool.map(lambda i: _one(url, model, phase, seed * 100_000 + i, vocab), range(phase.requests)))


# The two phases of the README's recording (tests/data/capture_observe.py): one request at a time with long
# outputs, then eight at a time with short ones (~5 s in all on 2 shared cores with the tiny pair).
TWO_PHASES = (Phase(prompt_len=40, out_len=96, requests=3, concurrency=1),
              Phase(prompt_len=160, out_len=12, requests=16, concurrency=8))


def observed(url: str, every: float, work):
    """(the window of /metrics around `work()`, its result): `observe`'s Recorder, sampling the gauges every
    `every` seconds from a thread while the work runs, so the window holds exactly that load."""
    from advisor.observe.scrape import Recorder

    recorder = Recorder(url)
    stop = threading.Event()

    def sample():
        while not stop.wait(every):
            recorder.sample()

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        result = work()
    finally:
        stop.set()
        thread.join()
    return recorder.finish(), result
