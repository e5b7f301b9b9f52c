"""Render a `Recommendation` for people: a terminal report or Markdown.

Plain string formatting, not rich: rich's import and first render cost ~70 ms of the 0.5 s start-up budget.
Colour (ANSI) only when writing to a terminal and NO_COLOR is unset.
"""

from __future__ import annotations

import os
import sys
import textwrap

from advisor.recommendation import Recommendation

TABLE_KS = 8  # the per-k table shows k = 0..8 plus the best k; JSON has all of them
WIDTH = 110  # wrap long lines for an ordinary terminal
ANSI = {"green": "32", "yellow": "33", "red": "31", "bold": "1"}
VERDICT_COLOUR = {"enable": "green", "marginal": "yellow", "disable": "red"}
COLUMNS = ("k", "tokens/step", "TPOT speedup", "e2e speedup", "throughput speedup")


def _paint(text: str, colour: str, on: bool) -> str:
    return f"\033[{ANSI[colour]}m{text}\033[0m" if on else text


def _headline(r: Recommendation) -> list[str]:
    i, s, band = r.inputs, r.speedup, r.interval
    what = f"{i.target} + {i.draft} ({i.method})" if i.draft else f"{i.target} ({i.method})"
    gpus = f"{i.num_gpus}x {i.gpu}" if i.num_gpus > 1 else i.gpu
    lines = [f"{what} on {gpus}, batch {i.batch}, {i.prompt_len} -> {i.out_len} tokens, T={i.temperature:g}"]
    if r.best_k:
        lines.append(f"best k = {r.best_k}: TPOT {s.tpot:.2f}x, end-to-end {s.e2e_latency:.2f}x (range "
                     f"{band.e2e_low:.2f}-{band.e2e_high:.2f}x over α {band.alpha_low:.2f}-"
                     f"{band.alpha_high:.2f}), throughput {s.throughput:.2f}x")
    lines += r.reasons
    be = "never pays" if r.break_even_alpha is None else f"{r.break_even_alpha:.2f}"
    cb = "beyond what fits in memory" if r.critical_batch is None else str(r.critical_batch)
    lines.append(f"break-even α {be} | critical batch {cb} | costs: {r.cost_source}")
    lines += [f"note: {n}" for n in i.acceptance_notes]
    return lines


def _table_rows(r: Recommendation) -> list[tuple[bool, list[str]]]:
    return [(p.k == r.best_k,
             [str(p.k), f"{p.expected_tokens_per_step:.2f}", f"{p.tpot_speedup:.2f}x",
              f"{p.e2e_speedup:.2f}x", f"{p.throughput_speedup:.2f}x"])
            for p in r.per_k if p.k <= TABLE_KS or p.k == r.best_k]


def _schedule(r: Recommendation) -> str:
    return str([list(run) for run in r.vllm.per_batch_size_schedule])


def text(r: Recommendation, colour: bool | None = None) -> str:
    if colour is None:
        colour = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    wrap = lambda line, indent="": textwrap.fill(line, WIDTH, subsequent_indent=indent)  # noqa: E731
    out = [_paint(f"verdict: {r.verdict.upper()}", VERDICT_COLOUR[r.verdict], colour)]
    out += [wrap(line, "  ") for line in _headline(r)]
    out.append("")
    for c in r.checks:
        mark = _paint("PASS" if c.ok else "FAIL", "green" if c.ok else "red", colour)
        out.append(mark + " " + wrap(f"{c.name:<15} {c.detail}", " " * 21))
    rows = _table_rows(r)
    widths = [max(len(col), *(len(cells[i]) for _, cells in rows)) for i, col in enumerate(COLUMNS)]
    line = lambda cells: "  ".join(cell.rjust(w) for cell, w in zip(cells, widths))  # noqa: E731
    out += ["", line(list(COLUMNS)), line(["-" * w for w in widths])]
    out += [_paint(line(cells) + "  <- best", "bold", colour) if best else line(cells) for best, cells in rows]
    split = r.time_split
    out += ["", wrap(f"time split (baseline): prefill {split.prefill_s:.3f} s + decode {split.decode_baseline_s:.3f} s; "
                     f"TPOT {split.tpot_baseline_ms:.2f} -> {split.tpot_spec_ms:.2f} ms"), ""]
    out.append("paste into vLLM:" if r.best_k else "vLLM (speculation off):")
    out.append(r.vllm.serve_command)
    if r.best_k:
        out.append(f"batch-size -> k schedule (num_speculative_tokens_per_batch_size): {_schedule(r)}")
    return "\n".join(out) + "\n"


def markdown(r: Recommendation) -> str:
    out = [f"## specadvisor: **{r.verdict}**", ""]
    out += [f"- {line}" for line in _headline(r)]
    out += ["", "| check | ok | detail |", "|---|---|---|"]
    out += [f"| {c.name} | {'yes' if c.ok else 'no'} | {c.detail} |" for c in r.checks]
    out += ["", "| " + " | ".join(COLUMNS) + " |", "|---:|---:|---:|---:|---:|"]
    for best, cells in _table_rows(r):
        if best:
            cells = [f"**{cell}**" for cell in cells]
        out.append("| " + " | ".join(cells) + " |")
    out += ["", "```bash", r.vllm.serve_command, "```"]
    if r.best_k:
        out += ["", f"Batch-size schedule (`num_speculative_tokens_per_batch_size`): `{_schedule(r)}`"]
    return "\n".join(out) + "\n"
