"""`recommend` at scale: the deployment, the verdict and k per decode GPU, the per-k table, the per-node commands,
as text or JSON (a document of its own: `schema` "specadvisor.scale/1"; the single-group JSON is unchanged)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict

from advisor.render.wrap import paragraph, terminal_width
from advisor.scale.advise import ScaleAdvice
from advisor.scale.serve import node_commands
from advisor.vllm.parallel import schedule_kept

SCALE_SCHEMA = "specadvisor.scale/1"


def shape_line(a: ScaleAdvice) -> str:
    d = a.deployment
    ep = f"EP{d.ep_size} ({d.all2all_backend})" if d.enable_expert_parallel else "no EP"
    return (f"TP{d.tensor_parallel_size} x DP{d.data_parallel_size} = {d.gpus} GPUs on {d.nodes} node(s), {ep}"
            f"{', DBO' if d.enable_dbo else ''}, {'PD decode pool' if d.disaggregated else 'aggregated'}")


def notes(a: ScaleAdvice) -> list[str]:
    d, s = a.deployment, a.scenario
    found = []
    if not schedule_kept(d.data_parallel_size):
        found.append("one fixed k: vLLM drops num_speculative_tokens_per_batch_size at --data-parallel-size > 1 "
                     "(_maybe_disable_dynamic_sd_for_data_parallel), so no per-batch schedule is pasted")
    capped = [r for r in a.rows if r.bound_by == "token cap"]
    if capped:
        found.append(f"the token cap ({a.token_cap} tokens per rank per step, max_num_batched_tokens) holds "
                     f"⌊{a.token_cap}/(k+1)⌋ requests per rank from k = {capped[0].k}: raise "
                     "--max-num-batched-tokens to run more")
    if d.disaggregated:
        found.append(f"PD: prefill runs elsewhere; one {s.prompt_len}-token prompt takes {a.prefill_s * 1e3:.0f} ms "
                     "on a prefill rank (TTFT adds the KV transfer)")
    found.append("not modelled: the experts' load imbalance (EPLB's balancedness), CUDA-graph size rounding; the "
                 "interval is the acceptance range only (not the cost model's error)")
    return found


def text(a: ScaleAdvice, width: int | None = None) -> str:
    """The report, its prose wrapped to `width` (the terminal's by default); the table and the commands are not
    (a command is pasted whole: its \"$LEADER_IP\" must stay double-quoted for the shell to expand it)."""
    width = terminal_width() if width is None else width
    s, best = a.scenario, a.row(a.best_k)
    lines = [f"verdict at scale: {a.verdict.upper()}" + (f" k = {a.best_k}" if a.best_k else ""),
             *([s.unpublished] if s.unpublished else []),
             f"{s.setup.target.name} ({s.setup.method}) on {s.hardware.name}: {shape_line(a)}",
             f"batch {s.batch} ({s.batch / a.deployment.data_parallel_size:g} per DP rank), {s.prompt_len} -> "
             f"{s.out_len} tokens; weights {a.weights_gb_per_gpu:.1f} GB per GPU"]
    if a.best_k:
        lines.append(f"gain {best.gain:.2f}x output tok/s per GPU (range {best.gain_low:.2f}-{best.gain_high:.2f}), "
                     f"{best.tokens_per_gpu:.0f} vs {a.row(0).tokens_per_gpu:.0f} tok/s/GPU, "
                     f"{1 / best.tpot_s:.1f} vs {1 / a.row(0).tpot_s:.1f} tok/s per user")
    lines = [paragraph(line, width, rest="  ") for line in lines]
    lines += [paragraph(f"note: {n}", width, rest="      ") for n in notes(a)]
    lines += ["", "k  tok/step  req/rank  bound        step ms  a2a ms  TPOT ms  tok/s/GPU   gain  range",
              "-  --------  --------  -----------  -------  ------  -------  ---------  -----  ---------"]
    for r in a.rows:
        if not r.padded_requests:
            lines.append(f"{r.k:<3}{r.tokens_per_step:8.2f}  does not fit ({r.bound_by})")
            continue
        lines.append(f"{r.k:<3}{r.tokens_per_step:8.2f}  {r.requests_per_rank:8.0f}  {r.bound_by:<11}  "
                     f"{r.step_s * 1e3:7.1f}  {r.all2all_s * 1e3:6.1f}  {r.tpot_s * 1e3:7.1f}  "
                     f"{r.tokens_per_gpu:9.0f}  {r.gain:5.2f}  {r.gain_low:.2f}-{r.gain_high:.2f}")
    commands = commands_of(a)
    lines += ["", f"vllm serve, one command per node ({len(commands)}; set LEADER_IP to node 0's address):"
              if len(commands) > 1 else "vllm serve:"]
    lines += [f"  node {i}: {c}" if len(commands) > 1 else f"  {c}" for i, c in enumerate(commands)]
    return "\n".join(lines) + "\n"


def markdown(a: ScaleAdvice) -> str:
    """The text report in a fenced block, 120 columns (its table and commands are fixed-width)."""
    return f"```text\n{text(a, width=120)}```\n"


def commands_of(a: ScaleAdvice) -> list[str]:
    s = a.scenario
    return node_commands(s.setup, a.deployment, a.best_k, max_model_len=s.prompt_len + s.out_len,
                         gpu_memory_utilization=s.gpu_memory_utilization)


def to_json(a: ScaleAdvice) -> str:
    """The scale document: deployment, verdict, best k, per-k rows (null where nothing fits), commands, notes."""
    def clean(value):
        return None if isinstance(value, float) and not math.isfinite(value) else value

    rows = [{key: clean(v) for key, v in asdict(r).items()} for r in a.rows]
    d = a.deployment
    return json.dumps({
        "schema": SCALE_SCHEMA, "verdict": a.verdict, "best_k": a.best_k, "unpublished": a.scenario.unpublished,
        "deployment": {**{f: getattr(d, f) for f in d.__dataclass_fields__}, "gpus": d.gpus, "ep_size": d.ep_size},
        "target": a.scenario.setup.target.name, "method": a.scenario.setup.method, "gpu": a.scenario.hardware.name,
        "batch": a.scenario.batch, "prompt_len": a.scenario.prompt_len, "out_len": a.scenario.out_len,
        "alpha": a.scenario.acceptance.alpha, "token_cap": a.token_cap, "prefill_s": a.prefill_s,
        "weights_gb_per_gpu": a.weights_gb_per_gpu, "per_k": rows, "serve_commands": commands_of(a),
        "notes": notes(a)}, indent=2) + "\n"
