"""Render a recommendation (`summary.summarize`) for people: a terminal report (rich) or Markdown."""

from __future__ import annotations

VERDICT_STYLE = {"enable": "bold green", "marginal": "bold yellow", "disable": "bold red"}
TABLE_KS = 8  # the per-k table shows k = 0..8 plus the best k; JSON has all of them


def _headline(r: dict) -> list[str]:
    i, s = r['inputs'], r['speedup']
    what = f"{i['target']} + {i['draft']} ({i['method']})" if i['draft'] else f"{i['target']} ({i['method']})"
    gpus = f"{i['num_gpus']}x {i['gpu']}" if i['num_gpus'] > 1 else i['gpu']
    lines = [f"{what} on {gpus}, batch {i['batch']}, {i['prompt_len']} -> {i['out_len']} tokens, T={i['temperature']:g}"]
    if r['best_k']:
        lines.append(f"best k = {r['best_k']}: TPOT {s['tpot']:.2f}x, end-to-end {s['e2e_latency']:.2f}x "
                     f"(range {r['interval']['e2e_low']:.2f}-{r['interval']['e2e_high']:.2f}x over α "
                     f"{r['interval']['alpha_low']:.2f}-{r['interval']['alpha_high']:.2f}), throughput {s['throughput']:.2f}x")
    lines += r['reasons']
    be = "never pays" if r['break_even_alpha'] is None else f"{r['break_even_alpha']:.2f}"
    cb = "beyond what fits in memory" if r['critical_batch'] is None else str(r['critical_batch'])
    lines.append(f"break-even α {be} | critical batch {cb} | costs: {r['cost_source']}")
    lines += [f"note: {n}" for n in r['inputs']['acceptance_notes']]
    return lines


def _rows(r: dict):
    shown = [p for p in r['per_k'] if p['k'] <= TABLE_KS or p['k'] == r['best_k']]
    for p in shown:
        yield p, (p['k'] == r['best_k'])


def text(r: dict) -> str:
    import io

    from rich.console import Console
    from rich.table import Table

    console = Console(file=io.StringIO(), record=True, width=120, color_system=None)
    console.print(f"[{VERDICT_STYLE[r['verdict']]}]verdict: {r['verdict'].upper()}[/]")
    for line in _headline(r):
        console.print(line, highlight=False)
    console.print()
    for c in r['checks']:
        console.print(f"[{'green' if c['ok'] else 'red'}]{'PASS' if c['ok'] else 'FAIL'}[/] {c['name']:<15} {c['detail']}",
                      highlight=False)
    table = Table(title="per draft length k", title_justify="left")
    for col in ("k", "tokens/step", "TPOT speedup", "e2e speedup", "throughput speedup"):
        table.add_column(col, justify="right")
    for p, best in _rows(r):
        style = "bold" if best else None
        table.add_row(f"{p['k']}{' *' if best else ''}", f"{p['expected_tokens_per_step']:.2f}", f"{p['tpot_speedup']:.2f}x",
                      f"{p['e2e_speedup']:.2f}x", f"{p['throughput_speedup']:.2f}x", style=style)
    console.print()
    console.print(table)
    console.print(f"time split (baseline): prefill {r['time_split']['prefill_s']:.3f} s + decode "
                  f"{r['time_split']['decode_baseline_s']:.3f} s; TPOT {r['time_split']['tpot_baseline_ms']:.2f} -> "
                  f"{r['time_split']['tpot_spec_ms']:.2f} ms", highlight=False)
    console.print()
    console.print("paste into vLLM:" if r['best_k'] else "vLLM (speculation off):", highlight=False)
    console.print(r['vllm']['serve_command'], highlight=False, soft_wrap=True)
    if r['best_k']:
        console.print(f"batch-size -> k schedule (num_speculative_tokens_per_batch_size): "
                      f"{[list(run) for run in r['vllm']['per_batch_size_schedule']]}", highlight=False, soft_wrap=True)
    return console.export_text()


def markdown(r: dict) -> str:
    out = [f"## specadvisor: **{r['verdict']}**", ""]
    out += [f"- {line}" for line in _headline(r)]
    out += ["", "| check | ok | detail |", "|---|---|---|"]
    out += [f"| {c['name']} | {'yes' if c['ok'] else 'no'} | {c['detail']} |" for c in r['checks']]
    out += ["", "| k | E[tokens/step] | TPOT speedup | e2e speedup | throughput speedup |", "|---:|---:|---:|---:|---:|"]
    for p, best in _rows(r):
        mark = "**" if best else ""
        out.append(f"| {mark}{p['k']}{mark} | {p['expected_tokens_per_step']:.2f} | {p['tpot_speedup']:.2f}x | "
                   f"{p['e2e_speedup']:.2f}x | {p['throughput_speedup']:.2f}x |")
    out += ["", "```bash", r['vllm']['serve_command'], "```"]
    if r['best_k']:
        out += ["", f"Batch-size schedule: `{[list(run) for run in r['vllm']['per_batch_size_schedule']]}`"]
    return "\n".join(out) + "\n"
