"""`recommend` at scale: the deployment, the verdict and k per decode GPU, the per-k table, the per-node commands,
as text or JSON (a document of its own: `schema` "specadvisor.scale/1"; the single-group JSON is unchanged)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict

from advisor.render.wrap import paragraph, terminal_width
from advisor.scale.advise import ScaleAdvice
from advisor.scale.serve import decode_commands, prefill_commands, router
from advisor.vllm.kv_transfer import NIXL_SIDE_CHANNEL_ENV
from advisor.vllm.parallel import dbo_splits, schedule_kept

SCALE_SCHEMA = "specadvisor.scale/1"


def shape_line(a: ScaleAdvice) -> str:
    d = a.deployment
    ep = f"EP{d.ep_size} ({d.all2all_backend})" if d.enable_expert_parallel else "no EP"
    return (f"TP{d.tensor_parallel_size} x DP{d.data_parallel_size} = {d.gpus} GPUs on {d.nodes} node(s), {ep}"
            f"{', DBO' if d.enable_dbo else ''}, {'PD decode pool' if d.disaggregated else 'aggregated'}")


def first(a: ScaleAdvice) -> list[str]:
    """What is said before any number: a rate the instance cannot carry, a target that does not fit."""
    return [line for line in (a.load.saturated if a.load else "", a.does_not_fit) if line]


def notes(a: ScaleAdvice) -> list[str]:
    d, s = a.deployment, a.scenario
    found = []
    if a.load is not None and not a.load.saturated:
        found.append(f"{a.load.rate:g} requests/s puts {a.load.batch} requests on the instance at once (Little's "
                     f"law on its plain decode step{'' if d.disaggregated else ' and prefills'}, as `review`)")
    if d.enable_dbo and not dbo_splits(d.data_parallel_size):
        found.append("--enable-dbo at --data-parallel-size 1 never splits a step (coordinate_batch_across_dp returns "
                     "first) and only moves drafting to the V1 model runner: priced so; drop it")
    elif d.enable_dbo:
        found.append("DBO runs the V1 model runner (Model Runner V2 does not run dual batch overlap), whose draft "
                     "passes are piecewise CUDA graphs: priced so")
    if a.k_allowed < max(r.k for r in a.rows):
        found.append(f"k is chosen among 1-{a.k_allowed}: the acceptance speaks for no later position (as recommend)")
    if not schedule_kept(d.data_parallel_size):
        found.append("one fixed k: vLLM drops num_speculative_tokens_per_batch_size at --data-parallel-size > 1 "
                     "(_maybe_disable_dynamic_sd_for_data_parallel), so no per-batch schedule is pasted")
    capped = [r for r in a.rows if r.bound_by == "token cap"]
    if capped:
        found.append(f"the token cap ({a.token_cap} tokens per rank per step, max_num_batched_tokens) holds "
                     f"⌊{a.token_cap}/(k+1)⌋ requests per rank from k = {capped[0].k}: raise "
                     "--max-num-batched-tokens to run more")
    pool = a.prefill_pool
    if pool is not None and pool.fits:
        found.append(f"PD: the prefill pool needs {pool.instances} instance(s) of {pool.instance.gpus} GPUs "
                     f"({pool.gpus} GPUs) for {pool.rate:.2f} requests/s ({pool.rate_from}): one "
                     f"{s.prompt_len}-token prompt takes {pool.prompt_s * 1e3:.0f} ms on a prefill rank, each rank "
                     f"{pool.busy:.0%} busy, a prompt waits {pool.wait_s * 1e3:.0f} ms on average (M/D/1); TTFT adds "
                     "the KV transfer")
        if pool.k:
            found.append(f"PD over NIXL: the prefill pool carries the decode pool's speculative config at k = {pool.k} "
                         "(NIXL's compatibility hash compares the drafter on both sides; a prefill instance never "
                         "verifies a draft); on every node set "
                         f"{NIXL_SIDE_CHANNEL_ENV} to its own address")
    elif pool is not None:
        found.append(f"PD: no prefill instance of up to 64 nodes of {d.gpus_per_node} GPUs holds {s.setup.target.name}")
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
    lines = [paragraph(f"warning: {line}", width, rest="  ") for line in first(a)] + \
        [paragraph(line, width, rest="  ") for line in lines]
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
    lines += ["", *_commands(a)]
    return "\n".join(lines) + "\n"


def _commands(a: ScaleAdvice) -> list[str]:
    """The pasted commands, by pool; a line saying why there are none where the target does not fit."""
    commands = decode_commands(a)
    if not commands:
        return ["no vllm serve: the target does not fit (see above)"]
    pd = a.deployment.disaggregated
    address = "DECODE_IP" if pd else "LEADER_IP"
    what = "decode pool (kv_consumer)" if pd else "vllm serve"
    out = [f"{what}, one command per node ({len(commands)}; set {address} to node 0's address):"
           if len(commands) > 1 else f"{what}:"]
    out += [f"  node {i}: {c}" if len(commands) > 1 else f"  {c}" for i, c in enumerate(commands)]
    prefill = prefill_commands(a)
    if prefill:
        n = a.prefill_pool.instances
        out += ["", f"prefill pool (kv_producer): {n} instance(s), each {len(prefill)} node(s); set PREFILL_IP to the "
                f"instance's node 0 (PREFILL_IP_1..{n} below):"]
        out += [f"  node {i}: {c}" if len(prefill) > 1 else f"  {c}" for i, c in enumerate(prefill)]
        out += ["", "router (pip install vllm-router):", f"  {router(a)}"]
    return out


def markdown(a: ScaleAdvice) -> str:
    """The text report in a fenced block, 120 columns (its table and commands are fixed-width)."""
    return f"```text\n{text(a, width=120)}```\n"


def commands_of(a: ScaleAdvice) -> list[str]:
    return decode_commands(a)


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
        "prefill_commands": prefill_commands(a), "router_command": router(a),
        "prefill_pool": None if a.prefill_pool is None else {**{f: getattr(a.prefill_pool, f) for f in (
            "instances", "k", "rate", "rate_from", "prompt_s", "busy", "wait_s", "fits")},
            "gpus": a.prefill_pool.gpus, "instance_gpus": a.prefill_pool.instance.gpus},
        "load": None if a.load is None else asdict(a.load), "does_not_fit": a.does_not_fit,
        "warnings": first(a), "notes": notes(a)}, indent=2) + "\n"
