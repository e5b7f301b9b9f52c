"""How fast the bounded readers refuse a hostile input and read a real one (issue 49: the old nesting scan was
quadratic on an unterminated string of escaped quotes, 80 kB in 25 s; a dotted TOML key is quadratic in tomllib).

    python benchmarks/input_readers.py

Prints, per input, the best of five runs in ms and what the reader said (its first words). The tests bound the same
hostile inputs by a generous 1 s (tests/fileio/); the figures belong here.
"""

from __future__ import annotations

import time
from pathlib import Path

from advisor.errors import InputError
from advisor.fileio.json_input import parse_json
from advisor.fileio.toml_input import parse_toml

ROOT = Path(__file__).resolve().parents[1]
MB = 1 << 20

JSON = {
    "unterminated escaped quotes, 1 MB": '"' + '\\"' * (MB // 2),
    "opening brackets, 1 MB": "[" * MB,
    "objects, 1 MB": '{"a":' * (MB // 5),
    "a million-digit integer": "1" * MB,
    "a saved observe window (tests/data, 63 kB)": (ROOT / "tests/data/observe_spec.json").read_text(),
    "a vllm bench result (tests/data, spec.json)": (ROOT / "tests/data/bench/spec.json").read_text(),
}
TOML = {
    "arrays, 1 MB": "a = " + "[" * MB,
    "an unterminated string of escapes, 1 MB": 'a = "' + '\\"' * (MB // 2),
    "a dotted key of 100,000 parts": "a" + ".a" * 100_000 + " = 1",
    "a plan of 5,000 workloads (review's most)": "\n".join(
        f'[[workload]]\nname = "w{i}"\nrate = 6.0\nprompt = {{ mean = 6000, p90 = 12000 }}\n'
        f'output = {{ mean = 300 }}\nacceptance = {{ task = "rag" }}\nslo = {{ ttft_ms = 2000, tpot_ms = 40 }}\n'
        for i in range(5000)) + '[[deployment]]\nname = "h100"\ngpu = "h100-sxm"\ncount = 8\n'
                                'target = "llama-3.1-8b-instruct"\n',
}


def _timed(read, text: str) -> tuple[float, str]:
    best, said = float("inf"), ""
    for _ in range(5):
        began = time.perf_counter()
        try:
            read(text)
            said = "read"
        except InputError as exc:
            said = str(exc)[:70]
        except ValueError as exc:  # json.JSONDecodeError: malformed, left to the caller
            said = f"malformed: {str(exc)[:60]}"
        best = min(best, time.perf_counter() - began)
    return best * 1e3, said


def main() -> None:
    for name, text in JSON.items():
        ms, said = _timed(lambda t: parse_json(t, "x", "y"), text)
        print(f"json  {name:<48} {ms:8.1f} ms  {said}")
    for name, text in TOML.items():
        ms, said = _timed(lambda t: parse_toml(t, "x", "y"), text)
        print(f"toml  {name:<48} {ms:8.1f} ms  {said}")


if __name__ == "__main__":
    main()
