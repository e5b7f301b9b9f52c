"""Render a `Recommendation` for people: a terminal report or Markdown.

Plain string formatting, not rich: rich's import and first render cost ~70 ms of the 0.5 s start-up budget.
Colour (ANSI) only when writing to a terminal and NO_COLOR is unset.
"""

from __future__ import annotations

import math
import os
import sys

from advisor.advice.recommendation import Recommendation
from advisor.model.uncertainty import Z80
from advisor.render.wrap import paragraph, shell_command, terminal_width

TABLE_KS = 8  # the per-k table shows k = 0..8 plus the best and the shown k; JSON has all of them
ANSI = {"green": "32", "yellow": "33", "red": "31", "bold": "1"}
VERDICT_COLOUR = {"enable": "green", "marginal": "yellow", "disable": "red"}
COLUMNS = ("k", "tokens/step", "TPOT speedup", "e2e speedup", "e2e 80% range", "throughput")


def _paint(text: str, colour: str, on: bool) -> str:
    return f"\033[{ANSI[colour]}m{text}\033[0m" if on else text


def _headline(r: Recommendation) -> list[str]:
    i, band = r.inputs, r.interval
    what = f"{i.target} + {i.draft} ({i.method})" if i.draft else f"{i.target} ({i.method})"
    gpus = f"{i.num_gpus}x {i.gpu}" if i.num_gpus > 1 else i.gpu
    lines = [f"{what} on {gpus}, batch {i.batch}, {i.prompt_len} -> {i.out_len} tokens, T={i.temperature:g}"]
    if r.best_k and band.e2e is not None:  # the interval is at shown_k; a k that does not fit has none to show
        lines.append(f"{'k' if i.k is not None else 'best k'} = {r.shown_k}: TPOT {_in(band.tpot)}, end-to-end "
                     f"{_in(band.e2e)}, throughput {_in(band.throughput)} ({band.level:.0%} intervals)")
        lines.append(_how_sure(r))
    lines += r.reasons
    be = f"{r.break_even_alpha:.2f}" if r.break_even_alpha is not None else "none (no decode)" if i.out_len == 1 \
        else "never pays"
    if r.break_even_alpha is not None and band.break_even_alpha_high is not None:
        be += f" ({band.break_even_alpha_low or 0:.2f}-{band.break_even_alpha_high:.2f} over the cost model's error)"
    pays = " and ".join(f"{lo}-{hi}" if hi > lo else f"{lo}" for lo, hi in r.paying_batches)
    pays = f"decode gains at batches {pays}" if pays else "decode gains at no batch"
    if (band.critical_batch_low, band.critical_batch_high) != (r.critical_batch, r.critical_batch):
        pays += (f" (from batch 1: {_span(band.critical_batch_low)} to {_span(band.critical_batch_high)} over the "
                 "interval)")
    if min(r.concurrency.speculative, r.concurrency.baseline) < 1:  # a side runs nothing: no break-even to speak of
        be, pays = f"none: {'the target' if r.concurrency.baseline < 1 else 'speculation'} does not fit", "no decode gain"
    lines.append(f"break-even α {be} | {pays} | costs: {r.cost_source}")
    lines += [f"note: {n}" for n in (*i.acceptance_notes, *r.gpu_caveats)]
    return lines


NO_FIT = "does not fit"


def _x(value: float | None) -> str:
    return NO_FIT if value is None else f"{value:.2f}x"


def _in(b) -> str:
    """A speedup and its interval: 1.47x (1.15-1.88)."""
    return f"{b.point:.2f}x ({b.low:.2f}-{b.high:.2f})" if b.high > b.low else f"{b.point:.2f}x"


def _span(critical: int | None) -> str:
    """A paying range from batch 1, by its critical batch (0: none; None: up to the limit)."""
    return "none" if critical == 0 else "every batch" if critical is None else f"1-{critical}"


def _how_sure(r: Recommendation) -> str:
    """Each term's share of the interval, the widest named, and where each came from."""
    band = r.interval
    cost = f"±{math.expm1(Z80 * band.sigma_cost):.0%} from the cost model ({band.sources[1].removeprefix('cost: ')})"
    alpha = f"α {band.alpha_low:.2f}-{band.alpha_high:.2f}"
    acc = (f"±{math.expm1(Z80 * band.sigma_acceptance):.0%} from acceptance ({alpha})"
           if band.alpha_high > band.alpha_low else f"acceptance taken as exact (α {band.alpha_low:.2f})")
    widest = f"; the {band.dominant} dominates" if band.dominant else ""
    return f"how sure: end to end {cost}, {acc}{widest}"


def _range(p) -> str:
    """A row's e2e 80% range; '-' where it has no width or the row does not fit."""
    return f"{p.e2e_low:.2f}-{p.e2e_high:.2f}x" if p.e2e_low is not None and p.e2e_high > p.e2e_low else "-"


def _table_rows(r: Recommendation) -> list[tuple[bool, list[str]]]:
    """The per-k rows; a row that does not fit says so and is never marked best."""
    return [(p.k == r.best_k and p.fits,
             [str(p.k), f"{p.expected_tokens_per_step:.2f}", _x(p.tpot_speedup), _x(p.e2e_speedup), _range(p),
              _x(p.throughput_speedup)])
            for p in r.per_k if p.k <= TABLE_KS or p.k in (r.best_k, r.shown_k)]


def _table_note(r: Recommendation) -> str:
    """At which concurrency each column is taken."""
    c = r.concurrency
    if c.baseline < 1 or c.baseline == c.speculative == c.batch:  # nothing runs, or every column at the batch
        return ""
    return (f"TPOT: both sides at the requests speculation runs at that k; end to end and throughput: each side at "
            f"what it holds ({c.baseline} without speculation, {c.speculative} at k={r.shown_k}; batch {c.batch})")


def _schedule(r: Recommendation) -> str:
    return str([list(run) for run in r.vllm.per_batch_size_schedule])


def text(r: Recommendation, colour: bool | None = None, width: int | None = None) -> str:
    """The terminal report, prose wrapped to `width` columns (default: the terminal's; 80 when piped); the
    table is never wrapped, and the vLLM command is broken only where bash reads it unchanged."""
    if colour is None:
        colour = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    width = width or terminal_width()
    wrap = lambda line, indent="": paragraph(line, width, rest=indent)  # noqa: E731
    out = [_paint(wrap(f"warning: {w}", "  "), "yellow", colour) for w in r.warnings]
    out.append(_paint(f"verdict: {r.verdict.upper()}", VERDICT_COLOUR[r.verdict], colour))
    out += [_paint(wrap(r.unpublished, "  "), "yellow", colour)] if r.unpublished else []
    out += [wrap(line, "  ") for line in _headline(r)]
    out.append("")
    for c in r.checks:
        mark = _paint("PASS" if c.ok else "FAIL", "green" if c.ok else "red", colour)
        # wrapped behind a 5-column stand-in for the mark, so the first line fits too
        out.append(mark + " " + paragraph(f"{c.name:<15} {c.detail}", width, " " * 5, " " * 21)[5:])
    rows = _table_rows(r)
    widths = [max(len(col), *(len(cells[i]) for _, cells in rows)) for i, col in enumerate(COLUMNS)]
    line = lambda cells: "  ".join(cell.rjust(w) for cell, w in zip(cells, widths))  # noqa: E731
    out += ["", line(list(COLUMNS)), line(["-" * w for w in widths])]
    out += [_paint(line(cells) + "  <- best", "bold", colour) if best else line(cells) for best, cells in rows]
    split = r.time_split
    c = r.concurrency
    at = (f" ({c.baseline} running)", f" ({c.speculative} running)") if c.baseline != c.speculative else ("", "")
    tpot = f"{split.tpot_baseline_ms:.2f}{at[0]}" + (f" -> {split.tpot_spec_ms:.2f}{at[1]}" if r.best_k and
                                                    r.speedup.tpot else "")
    note = _table_note(r)
    out += ["", wrap(note)] if note else []
    out += ["", wrap(f"time split (baseline): prefill {split.prefill_s:.3f} s + decode {split.decode_baseline_s:.3f} s; "
                     f"TPOT {tpot} ms"), ""]
    out += _paste(r, width)
    return "\n".join(out) + "\n"


def _paste(r: Recommendation, width: int) -> list[str]:
    """The command of the evaluated recommendation, and its schedule; no command when the target does not fit."""
    if not r.vllm.serve_command:
        return ["no vLLM command: the target does not fit (see vram above)"]
    command = shell_command(r.vllm.serve_command, width)
    if not r.vllm.speculative_config:
        return ["vLLM (speculation off):", *command]
    out = ["paste into vLLM:", *command]
    if r.vllm.per_batch_size_schedule:
        out.append(paragraph(f"batch-size -> k schedule (num_speculative_tokens_per_batch_size): {_schedule(r)}",
                             width, rest="  "))
    out += [paragraph(line, width, rest="  ") for line in _runner(r)]
    return out


def _runner(r: Recommendation) -> list[str]:
    """The model runner the paste assumes, what a per-batch schedule costs there, and where its cap runs."""
    return [line for line in (r.vllm.model_runner and f"assumes {r.vllm.model_runner}", r.vllm.schedule_check,
                              _cap(r)) if line]


def _cap(r: Recommendation) -> str:
    """Which batches the pasted num_speculative_tokens serves: with a schedule it is the schedule's largest k,
    which vLLM runs only in its own ranges (issue 36 #4: a cap read as the k for the user's batch)."""
    runs, cap = r.vllm.per_batch_size_schedule, r.vllm.speculative_config.get("num_speculative_tokens")
    if not runs or cap is None:
        return ""
    spans = [(lo, hi) for lo, hi, k in runs if k == cap]
    at_cap = ("batches " if len(spans) > 1 or spans[0][1] > spans[0][0] else "batch ") + " and ".join(
        f"{lo}-{hi}" if hi > lo else f"{lo}" for lo, hi in spans)
    running = r.concurrency.speculative
    here = next((k for lo, hi, k in runs if lo <= running <= hi), None)
    there = f"; at your {running} running requests the schedule runs k={here}" if here not in (None, cap) else ""
    return (f"num_speculative_tokens {cap} is the schedule's largest k (what vLLM allocates for): it runs only at "
            f"{at_cap}, where it pays{there}")


def markdown(r: Recommendation) -> str:
    out = [f"## specadvisor: **{r.verdict}**", ""]
    out += [f"**{r.unpublished}**", ""] if r.unpublished else []
    out += [f"> **warning:** {w}\n" for w in r.warnings]
    out += [f"- {line}" for line in _headline(r)]
    out += ["", "| check | ok | detail |", "|---|---|---|"]
    out += [f"| {c.name} | {'yes' if c.ok else 'no'} | {c.detail} |" for c in r.checks]
    out += ["", "| " + " | ".join(COLUMNS) + " |", "|" + "---:|" * len(COLUMNS)]
    for best, cells in _table_rows(r):
        if best:
            cells = [f"**{cell}**" for cell in cells]
        out.append("| " + " | ".join(cells) + " |")
    note = _table_note(r)
    out += ["", note] if note else []
    if not r.vllm.serve_command:
        return "\n".join(out + ["", "No vLLM command: the target does not fit."]) + "\n"
    out += ["", "```bash", r.vllm.serve_command, "```"]
    if r.vllm.per_batch_size_schedule:
        out += ["", f"Batch-size schedule (`num_speculative_tokens_per_batch_size`): `{_schedule(r)}`"]
    out += ["", *(f"- {line}" for line in _runner(r))] if _runner(r) else []
    return "\n".join(out) + "\n"
