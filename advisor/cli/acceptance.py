"""`specadvisor acceptance ...`: get α from what the user has (a server, prompts + weights, or text), with counts
and an interval, and save it in a form `recommend --metrics FILE` reads. Thin: the work is in advisor.measured.metrics,
advisor.measured.ngram_corpus and calibration.measure_acceptance; only typer is imported at module level."""

from __future__ import annotations

from enum import Enum
from typing import Optional

import typer

from advisor.cli.needs import GPU_MEMORY_HELP, engine_imports, require
from advisor.errors import InputError
from advisor.vllm.defaults import NGRAM_LOOKUP_DEFAULT

acceptance_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,  # plain help: see app.py
                             help="Measure acceptance: from a vLLM server's metrics, by running your prompts "
                             "through vLLM, or by replaying n-gram lookup over text.")


class OutFormat(str, Enum):
    text = "text"
    json = "json"


class OnError(str, Enum):
    stop = "stop"
    skip = "skip"


class MeasureMethod(str, Enum):
    draft_model = "draft_model"
    ngram = "ngram"


SAVE_HELP = ("Also write the counts as Prometheus text, which `specadvisor recommend --metrics FILE` reads. Refused "
             "when it names a file this command reads: nothing is overwritten.")


def _not_inputs(save: Optional[str], **inputs: Optional[str]) -> None:
    """--save may not replace what the command reads (issue 49: `from-metrics acc.prom --save acc.prom` replaced a
    full scrape with four series)."""
    from advisor.fileio.atomic_write import refuse_overwriting

    local = {"the " + name.replace("_", " "): None if p is None or p.startswith(("http://", "https://")) else p
             for name, p in inputs.items()}
    refuse_overwriting({"--save": save}, local)


def _lines(s: dict, origin: str) -> list[str]:
    rates = " ".join(f"{r:.3f}" for r in s["per_position_rates"])
    per = "decode step" if s["decode_steps"] is not None else "draft"
    out = [f"source: {origin}",
           f"k = {s['k']}: {s['drafts']} drafts, {s['accepted']} of {s['draft_tokens']} draft tokens accepted"
           + (f", {s['decode_steps']} decode steps ({s['drafts'] / max(s['decode_steps'], 1):.0%} drafted)"
              if s["decode_steps"] is not None else ""),
           f"acceptance rate {s['acceptance_rate']:.3f} (accepted/drafted) | mean acceptance length "
           f"{s['mean_acceptance_length']:.3f} tokens per draft, bonus included",
           f"accepted tokens per {per}: {s['accepted_per_step']:.3f} ({s['tokens_per_step']:.3f} tokens per {per})",
           f"per-position acceptance (per {per}): {rates}  (counts {' '.join(map(str, s['per_position_counts']))})",
           f"α {s['alpha']:.3f}, {s['level']:.0%} interval {s['alpha_low']:.3f}-{s['alpha_high']:.3f} (Beta posterior, "
           f"Jeffreys prior, {s['effective_n']} {per}s as independent observations; i.i.d. MLE {s['alpha_mle']:.3f})"]
    return out


def _emit(counts, origin: str, format: OutFormat, save: Optional[str], temperature: Optional[float],
          extra: Optional[dict] = None, extra_lines: tuple[str, ...] = (), method: str = "",
          live: Optional[str] = None) -> None:
    """Print the counts (text or JSON), save them if asked, and say how to feed them to `recommend`:
    --metrics with the saved file or the live server, else the per-position rates."""
    from advisor.measured.posterior import summary

    s = summary(counts)
    if save is not None:
        from advisor.fileio.atomic_write import write_atomic
        from advisor.measured.metrics import render

        write_atomic(save, render(counts, origin, temperature))
    source = save or live
    use = (f"--metrics {source}" if source else
           f"--acceptance-per-pos {','.join(f'{r:.4f}' for r in s['per_position_rates'])}") + method
    if format is OutFormat.json:
        import json

        typer.echo(json.dumps(dict(source=origin, measured_temperature=temperature, **s, **(extra or {}),
                                   recommend_flags=use), indent=2))
        return
    from advisor.render.wrap import paragraph, terminal_width

    width = terminal_width()  # lines wrap to the terminal (80 columns when piped), continued two spaces in
    for line in (*_lines(s, origin), *extra_lines):
        typer.echo(paragraph(line, width, rest="  "))
    if temperature is not None:
        typer.echo(f"measured at temperature {temperature:g}")
    measured_at = f" --measured-temperature {temperature:g}" if temperature is not None and not save else ""
    typer.echo(paragraph(f"use it: specadvisor recommend ... {use}{measured_at}", width, rest="  "))


@acceptance_app.command("from-metrics", short_help="From a vLLM server's /metrics (or a saved scrape).")
def from_metrics(
    source: str = typer.Argument(..., help="A vLLM server (http://host:8000 or .../metrics) or a file of Prometheus text."),
    second: Optional[str] = typer.Option(None, help="A later scrape of the same server: report what accrued in between."),
    save: Optional[str] = typer.Option(None, help=SAVE_HELP),
    format: OutFormat = typer.Option(OutFormat.text, "--format", help="text or json."),
) -> None:
    """Acceptance from vLLM's spec-decode counters (one scrape, or the delta of two)."""
    from advisor.measured.metrics import scrape

    _not_inputs(save, scrape=source, second_scrape=second)
    found = scrape(source, second)
    _emit(found.counts, found.origin, format, save, found.measured_temperature, live=None if second else source)


@acceptance_app.command("ngram", short_help="Replay n-gram lookup over your prompts and responses.")
def ngram(
    corpus: str = typer.Option(..., help="JSON Lines: {\"prompt\": ..., \"response\": ...} or prompt_token_ids + "
                               "response_token_ids per line."),
    tokenizer: Optional[str] = typer.Option(None, help="Local folder with the model's tokenizer (exact counts); "
                                            "without it, text is split into words and punctuation (rough)."),
    k: int = typer.Option(5, help="num_speculative_tokens."),
    prompt_lookup_min: int = typer.Option(NGRAM_LOOKUP_DEFAULT[0], help="vLLM's prompt_lookup_min (its default)."),
    prompt_lookup_max: int = typer.Option(NGRAM_LOOKUP_DEFAULT[1], help="vLLM's prompt_lookup_max (its default)."),
    max_model_len: Optional[int] = typer.Option(None, help="vLLM's max_model_len, if responses may reach it."),
    on_error: OnError = typer.Option(OnError.stop, help="A bad line: stop (default) or skip it and go on."),
    save: Optional[str] = typer.Option(None, help=SAVE_HELP),
    format: OutFormat = typer.Option(OutFormat.text, "--format", help="text or json."),
) -> None:
    """Replay vLLM's n-gram proposer over prompt + response text: the acceptance n-gram speculation would get."""
    from advisor.measured.ngram import NgramConfig
    from advisor.measured.ngram_corpus import replay
    from advisor.measured.tokens import encoder

    _not_inputs(save, corpus=corpus)
    cfg = NgramConfig(k=k, min_n=prompt_lookup_min, max_n=prompt_lookup_max, max_model_len=max_model_len)
    if tokenizer is None:
        encoding = encoder()
    else:
        # transformers takes ~5 s to import: only when a tokenizer is asked for
        from advisor.measured.hf_tokenizer import load_tokenizer

        encoding = encoder(load_tokenizer(tokenizer), tokenizer)
    result = replay(corpus, cfg, encoding, on_error.value)
    c = result.counts
    if c.decode_steps == 0:
        raise InputError(f"{corpus}: every response is a single token, so there is no decode step to replay")
    origin = (f"n-gram replay of {corpus} ({len(result.rows)} rows, k={k}, prompt_lookup {prompt_lookup_min}-"
              f"{prompt_lookup_max}, tokens: {result.tokens})")
    per_row = [dict(line=row.line, prompt_tokens=len(row.prompt), response_tokens=len(row.response),
                    decode_steps=len(t.drafted), drafts=sum(d > 0 for d in t.drafted), accepted=sum(t.accepted))
               for row, t in result.rows]
    extra = dict(rows=per_row, skipped_lines=[dict(line=s.line, reason=s.reason) for s in result.skipped])
    lines = [f"skipped {len(result.skipped)} bad lines: {', '.join(str(s.line) for s in result.skipped)}"] if result.skipped else []
    _emit(c, origin, format, save, 0.0, extra, tuple(lines), method=" --method ngram")


@acceptance_app.command("measure", short_help="Run your prompts through vLLM with your draft.")
def measure(
    target: str = typer.Option(..., help="Target model folder: config.json + weights (+ tokenizer for text prompts)."),
    prompts: str = typer.Option(..., help="JSON Lines: {\"prompt\": text} or {\"prompt_token_ids\": [...]} per line."),
    draft: Optional[str] = typer.Option(None, help="Draft model folder (same vocabulary) for --method draft_model."),
    method: MeasureMethod = typer.Option(MeasureMethod.draft_model, help="draft_model or ngram."),
    k: int = typer.Option(4, help="num_speculative_tokens."),
    temperature: float = typer.Option(0.0, help="Sampling temperature of the measurement."),
    max_tokens: int = typer.Option(128, help="Tokens generated per prompt."),
    prompt_lookup_min: int = typer.Option(NGRAM_LOOKUP_DEFAULT[0], help="--method ngram: vLLM's prompt_lookup_min."),
    prompt_lookup_max: int = typer.Option(NGRAM_LOOKUP_DEFAULT[1], help="--method ngram: vLLM's prompt_lookup_max."),
    max_model_len: Optional[int] = typer.Option(None, help="Default: longest prompt + max tokens + 2k + 2."),
    on_error: OnError = typer.Option(OnError.stop, help="A bad line: stop (default) or skip it and go on."),
    save: Optional[str] = typer.Option(None, help=SAVE_HELP),
    format: OutFormat = typer.Option(OutFormat.text, "--format", help="text or json."),
    gpu_memory_utilization: Optional[float] = typer.Option(None, help=GPU_MEMORY_HELP),
) -> None:
    """Run your prompts through vLLM with speculation on and count what it accepts, per prompt and overall."""
    _not_inputs(save, prompts=prompts)
    require("acceptance measure", "vllm")
    with engine_imports("acceptance measure"):
        try:
            from calibration.measure_acceptance import MeasureConfig
            from calibration.measure_acceptance import measure as run
        except ImportError as exc:
            if isinstance(exc, ModuleNotFoundError) and exc.name and not exc.name.startswith("calibration"):
                raise  # vLLM or torch: engine_imports says what to install
            raise InputError("`acceptance measure` needs the calibration package (install specadvisor from "
                             "source)") from None

        cfg = MeasureConfig(target=target, draft=draft, method=method.value, k=k, temperature=temperature,
                            max_tokens=max_tokens, prompt_lookup_min=prompt_lookup_min,
                            prompt_lookup_max=prompt_lookup_max, max_model_len=max_model_len,
                            gpu_memory_utilization=gpu_memory_utilization)
        result = run(cfg, prompts, on_error.value)
    origin = (f"vLLM measurement of {prompts} ({len(result.per_prompt)} prompts, {method.value}, k={k}, "
              f"T={temperature:g}, {max_tokens} tokens each)")
    per_prompt = [dict(line=r.line, drafts=r.counts.drafts, draft_tokens=r.counts.draft_tokens,
                       accepted=r.counts.accepted, per_position_rates=list(r.counts.rates()))
                  for r in result.per_prompt]
    lines = [f"line {p['line']}: {p['drafts']} drafts, {p['accepted']}/{p['draft_tokens']} accepted, per-position "
             + " ".join(f"{r:.2f}" for r in p["per_position_rates"]) for p in per_prompt]
    if result.skipped:
        lines.append(f"skipped {len(result.skipped)} bad lines: {', '.join(str(s.line) for s in result.skipped)}")
    extra = dict(per_prompt=per_prompt, skipped_lines=[dict(line=s.line, reason=s.reason) for s in result.skipped])
    _emit(result.counts, origin, format, save, temperature, extra, tuple(lines), method=f" --method {method.value}")
