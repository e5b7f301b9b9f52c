"""`specadvisor preflight`: check a `vllm serve` command (or a --speculative-config) against what vLLM 0.32 refuses,
overrides or drops. Exit 0: clean (notes allowed); 1: a problem; 2: bad input."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from advisor.errors import InputError
from advisor.model.acceptance.published import STRUCTURED_TASKS, check_task


def preflight(
    command: Optional[str] = typer.Argument(None, help="The `vllm serve MODEL ...` command line, quoted as one "
                                            "argument (or - to read it from stdin)."),
    speculative_config: Optional[str] = typer.Option(None, "--speculative-config", help="Instead of a command: "
                                                     "the speculative config JSON (needs --model)."),
    config: Optional[str] = typer.Option(None, "--config", help="vllm serve's YAML config file (vllm serve "
                                         "--config), alone or with a command line whose flags override it."),
    model: Optional[str] = typer.Option(None, "--model", help="The target, with --speculative-config."),
    max_model_len: Optional[int] = typer.Option(None, "--max-model-len", help="With --speculative-config: "
                                                "vLLM's --max-model-len (default: the model's context)."),
    task: Optional[str] = typer.Option(None, "--task", help="The traffic (`specadvisor list tasks`): "
                                       f"{', '.join(STRUCTURED_TASKS)} requests carry a grammar."),
    structured_output: bool = typer.Option(False, "--structured-output", help="Requests use structured output "
                                           "(a JSON schema, regex or grammar)."),
    measured_k: Optional[int] = typer.Option(None, "--measured-k", help="The k the acceptance was measured at."),
    gpu: str = typer.Option("rtx-pro-6000-blackwell", "--gpu", help="Where it runs (vLLM's batch defaults depend "
                            "on the GPU class), or auto."),
    exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even when a problem is found (report only; "
                                   "bad input still exits 2)."),
) -> None:
    """Check a speculative `vllm serve` against every known problem in vLLM 0.32: one line each with why, the vLLM
    source file that decides it, and the fix. Exit 0 when clean, 1 when a problem is found, 2 on bad input."""
    from advisor.cli.options import check_counts
    from advisor.preflight.command import MAX_COMMAND_CHARS, from_config, parse_serve
    from advisor.preflight.run import preflight as run

    check_counts(dict(max_model_len=max_model_len, measured_k=measured_k))
    structured = structured_output or check_task(task) in STRUCTURED_TASKS
    if config is not None and speculative_config is not None:
        raise InputError("--config is vllm serve's YAML file: give it alone or with a `vllm serve ...` line, not "
                         "with --speculative-config")
    if command == "-":
        try:
            command = sys.stdin.read(MAX_COMMAND_CHARS + 1)
        except UnicodeDecodeError:
            raise InputError("stdin is not text: pipe in the `vllm serve ...` command line") from None
    if config is not None:
        import shlex

        command = f"{command or 'vllm serve'} --config {shlex.quote(config)}"
    if (command is None) == (speculative_config is None):
        raise InputError("give a `vllm serve ...` command line, --config FILE, or --speculative-config JSON (with "
                         "--model): one")
    if speculative_config is not None:
        if model is None:
            raise InputError("--speculative-config needs --model (the target it drafts for)")
        serve = from_config(speculative_config, model, max_model_len=max_model_len, structured=structured)
    else:
        serve = parse_serve(command, structured=structured)
    from advisor.render.wrap import paragraph, terminal_width

    report = run(serve, gpu=gpu, measured_k=measured_k)
    lines = [f.line() for f in report.findings] + [f"not checked: {line}" for line in report.skipped]
    width = terminal_width()
    for line in lines or ["clean: no known problem for vLLM 0.32"]:
        typer.echo(paragraph(line, width, rest="  "))
    raise typer.Exit(1 if report.failed and not exit_zero else 0)
