"""A Review as a document: built once as blocks (headings, paragraphs, tables, lists, images, code), then
written out as Markdown or as one self-contained HTML page (plots embedded as base64, no external resources)."""

from __future__ import annotations

import base64
import html as html_lib
import json

from advisor.model.cost import capacity
from advisor.review.evaluate import Cell, Review, totals

VERDICT_CLASS = {"enable": "ok", "marginal": "warn", "disable": "bad"}


def _num(v, fmt: str, none: str = "n/a") -> str:
    return none if v is None else format(v, fmt)


def _pair(c: Cell, attr: str, fmt: str) -> str:
    if c.base is None or c.base.best.rate == c.spec.best.rate == 0:
        return "n/a"
    b, s = getattr(c.base, attr), getattr(c.spec, attr)
    return f"{_num(b, fmt, 'SLO missed')} → {_num(s, fmt, 'SLO missed')}"


def _rate(c: Cell) -> str:
    if c.base is None or c.base.best.rate == c.spec.best.rate == 0:
        return "n/a"
    show = lambda side: f"{side.best.rate:.2f}" if side.best.rate > 0 else "SLO missed"  # noqa: E731
    return f"{show(c.base)} → {show(c.spec)}"


def _usd(v) -> str:
    return "n/a" if v is None else f"${v:.2f}"


def _side_line(label: str, side, w, c: Cell) -> str:
    b = side.best
    if b.rate == 0:
        return f"{label}: no load meets the SLOs (one request alone: TPOT {b.tpot * 1e3:.1f} ms, TTFT {b.ttft * 1e3:.0f} ms)"
    k = f", k={b.k} at that load" if label.startswith("with") else ""
    return (f"{label}: {b.rate:.2f} req/s per replica at a mean concurrency of {b.batch:.1f} (TPOT {b.tpot * 1e3:.1f} ms,"
            f" TTFT {b.ttft * 1e3:.0f} ms{k}); bound by {b.bound}; KV cache holds {side.max_concurrency} sequences; "
            f"{side.gpus} GPUs for {w.rate:g} req/s; {_usd(side.usd_per_mtok)} per million output tokens")


def _band(b) -> str:
    """A speedup with its interval: 1.47x (1.15-1.88x)."""
    return f"{b.point:.2f}x ({b.low:.2f}-{b.high:.2f}x)" if b.high > b.low else f"{b.point:.2f}x"


def _details(r: Review, c: Cell) -> list[tuple]:
    w = next(x for x in r.plan.workload if x.name == c.workload)
    d = next(x for x in r.plan.deployment if x.name == c.deployment)
    out: list[tuple] = [("h3", f"{c.workload} on {c.deployment}: {c.recommendation}")]
    items = [f"warning: {w}" for w in (c.advice.warnings if c.advice is not None else ())]
    items.append(f"why: {c.reason}")
    gpus = f"{d.count}x {d.gpu}, tensor parallel {d.tensor_parallel}; {d.target} + {d.draft or 'default drafter'} ({d.method})"
    items.append(f"deployment: {gpus}" + (f"; ${d.usd_per_gpu_hour:g}/GPU-hour" if d.usd_per_gpu_hour is not None else ""))
    if c.shape is not None:
        items.append(f"requests: {w.rate:g}/s, prompt mean {c.shape.prompt_mean:.0f} / p90 {c.shape.prompt_p90:.0f} "
                     f"tokens, output mean {c.shape.out_mean:.0f} tokens, T={w.temperature:g}; SLOs: TTFT "
                     f"{w.slo.ttft_ms:g} ms, TPOT {w.slo.tpot_ms:g} ms")
    items += [f"problem: {p}" for p in c.problems]
    if c.base is not None:
        items.append(_side_line("without speculation", c.base, w, c))
        items.append(_side_line("with speculation", c.spec, w, c)
                     + (f" ({c.gpus_spec_low_alpha} GPUs at the low end of α)"
                        if c.spec.gpus is not None and c.gpus_spec_low_alpha != c.spec.gpus else ""))
    a = c.advice
    if a is not None:
        inp = a.inputs
        items.append(f"acceptance: α {inp.alpha:.2f} (range {a.interval.alpha_low:.2f}-"
                     f"{a.interval.alpha_high:.2f}); {inp.acceptance_source}")
        items += [f"note: {n}" for n in inp.acceptance_notes]
        items.append(f"at the planned load (mean concurrency {c.load_batch:.1f} per replica, advised at batch "
                     f"{inp.batch}): {a.verdict}, k={a.best_k}, "
                     + (f"at k={a.shown_k} " if a.shown_k != a.best_k else "")  # the interval's k: off shows k = 1
                     + (f"end-to-end {_band(a.interval.e2e)}, TPOT {_band(a.interval.tpot)} ({a.interval.level:.0%} "
                        "intervals" + (f"; the {a.interval.dominant} dominates" if a.interval.dominant else "") + "); "
                        if a.interval.e2e is not None else "does not fit; ")
                     + "; ".join(a.reasons))
        items += [f"check {ch.name}: {'pass' if ch.ok else 'FAIL'}: {ch.detail}" for ch in a.checks]
        items.append(f"step costs: {a.cost_source}")
        items += [f"note: {n}" for n in a.gpu_caveats]
    items += [f"note: {n}" for n in c.notes]
    out.append(("ul", items))
    if c.speculative_config:
        out.append(("p", f"vLLM --speculative-config of this plan (k ≤ {c.spec.k_cap}, the best per batch size):"))
        out.append(("pre", json.dumps(c.speculative_config, separators=(",", ":"))))
    return out


def blocks(r: Review, images: dict[str, str]) -> list[tuple]:
    """The document. `images` maps a figure name to the alt text it is shown with (order kept)."""
    p = r.plan
    doc: list[tuple] = [("h1", p.title)]
    if p.description:
        doc.append(("p", p.description))
    doc.append(("p", f"Plan: {r.source}. Each workload runs on its own replicas; every number is the model's "
                     "prediction from datasheets (or a calibration), not a measurement."))
    doc.append(("h2", "Summary"))
    doc.append(("table", ["workload", "deployment", "recommendation", "why", "req/s per replica", "GPUs needed",
                          "$ per M output tokens"],
                [[c.workload, c.deployment, c.recommendation, c.reason, _rate(c), _pair(c, "gpus", "d"),
                  _pair(c, "usd_per_mtok", ".2f") if c.base is not None else "n/a"] for c in r.cells]))
    doc.append(("p", "Pairs read without → with speculation. Rates and costs are at the most load one replica "
                     "carries within both SLOs."))
    doc.append(("h2", "Totals per deployment"))
    rows = []
    for t in totals(r):
        fits = lambda g: "n/a" if g is None else ("yes" if g <= t["pool"] else f"no: {g - t['pool']} short")  # noqa: E731
        rows.append([t["deployment"], str(t["pool"]), f"{_num(t['gpus_base'], 'd')} → {_num(t['gpus_spec'], 'd')}",
                     f"{fits(t['gpus_base'])} → {fits(t['gpus_spec'])}",
                     f"{_usd(t['usd_hour_base'])} → {_usd(t['usd_hour_spec'])}", "; ".join(t["left_out"]) or "none"])
    doc.append(("table", ["deployment", "GPUs in pool", "GPUs needed", "fits the pool", "$ per hour",
                          "workloads left out of the sums"], rows))
    problems = [f"{c.workload} on {c.deployment}: {p}" for c in r.cells for p in c.problems]
    if problems:
        doc += [("h2", "Problems"), ("ul", problems)]
    doc.append(("h2", "Pictures"))
    doc += [("img", name, alt) for name, alt in images.items()]
    doc.append(("h2", "Details"))
    for c in r.cells:
        doc += _details(r, c)
    doc += [("h2", "How the capacity is computed"), ("pre", capacity.__doc__.strip())]
    return doc


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(doc: list[tuple], image_files: dict[str, str]) -> str:
    out: list[str] = []
    for block in doc:
        kind = block[0]
        if kind in ("h1", "h2", "h3"):
            out += ["#" * int(kind[1]) + " " + block[1], ""]
        elif kind == "p":
            out += [block[1], ""]
        elif kind == "ul":
            out += [f"- {item}" for item in block[1]] + [""]
        elif kind == "pre":
            out += ["```", block[1], "```", ""]
        elif kind == "table":
            header, rows = block[1], block[2]
            out.append("| " + " | ".join(header) + " |")
            out.append("|" + "---|" * len(header))
            out += ["| " + " | ".join(_md_cell(x) for x in row) + " |" for row in rows]
            out.append("")
        elif kind == "img":
            out += [f"![{block[2]}]({image_files[block[1]]})", ""]
    return "\n".join(out)


CSS = """body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:1180px;margin:2em auto;padding:0 1em;
color:#1f2328;line-height:1.45}table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.9em}
th,td{border:1px solid #d0d7de;padding:.35em .6em;text-align:left;vertical-align:top}th{background:#f3f5f7}
td.ok{background:#dcefe2}td.warn{background:#fbf0cf}td.bad{background:#f6dcda}img{max-width:100%;height:auto;
border:1px solid #e5e8eb;margin:.5em 0}pre{background:#f6f8fa;padding:.8em;overflow-x:auto;font-size:.85em;
white-space:pre-wrap}h1{font-size:1.6em}h2{border-bottom:1px solid #d0d7de;padding-bottom:.2em;margin-top:1.6em}"""


def html(doc: list[tuple], images: dict[str, bytes], mime: str = "image/png") -> str:
    e = html_lib.escape
    title = next((b[1] for b in doc if b[0] == "h1"), "specadvisor review")
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{e(title)}</title><style>{CSS}</style></head><body>"]
    for block in doc:
        kind = block[0]
        if kind in ("h1", "h2", "h3", "p"):
            out.append(f"<{kind}>{e(block[1])}</{kind}>")
        elif kind == "ul":
            out.append("<ul>" + "".join(f"<li>{e(item)}</li>" for item in block[1]) + "</ul>")
        elif kind == "pre":
            out.append(f"<pre>{e(block[1])}</pre>")
        elif kind == "table":
            head = "".join(f"<th>{e(h)}</th>" for h in block[1])
            body = "".join("<tr>" + "".join(
                f'<td class="{VERDICT_CLASS[x]}">{e(x)}</td>' if x in VERDICT_CLASS else f"<td>{e(x)}</td>"
                for x in row) + "</tr>" for row in block[2])
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif kind == "img":
            data = base64.b64encode(images[block[1]]).decode("ascii")
            out.append(f'<figure><img alt="{e(block[2])}" src="data:{mime};base64,{data}"></figure>')
    out.append("</body></html>")
    return "\n".join(out) + "\n"
