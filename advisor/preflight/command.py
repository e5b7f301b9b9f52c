"""A `vllm serve ...` command line (or a bare --speculative-config and its model) read into the settings the
pre-flight checks look at. Flags vLLM has that no check reads are skipped; a malformed one is one InputError line.

Flag spellings are vLLM 0.32's (vllm/engine/arg_utils.py `EngineArgs.add_cli_args`): `--flag value`,
`--flag=value`, and the `--no-flag` form of its booleans.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from advisor.errors import InputError
from advisor.fileio.json_input import parse_json
from advisor.preflight.serve_config import with_config
from advisor.vllm.drafting import new_slots, parallel

# flags that take a value, by the field they set (the short aliases vLLM declares too)
_VALUED = {
    "--speculative-config": "speculative", "-sc": "speculative",
    "--max-model-len": "max_model_len", "--max-num-seqs": "max_num_seqs",
    "--max-num-batched-tokens": "max_num_batched_tokens",
    "--tensor-parallel-size": "tp", "-tp": "tp", "--data-parallel-size": "dp", "-dp": "dp",
    "--all2all-backend": "all2all_backend", "--kv-transfer-config": "kv_transfer",
    "--compilation-config": "compilation", "-cc": "compilation",
}
_SWITCHES = {
    "--enable-expert-parallel": ("expert_parallel", True), "-ep": ("expert_parallel", True),
    "--enable-prefix-caching": ("prefix_caching", True), "--no-enable-prefix-caching": ("prefix_caching", False),
    "--async-scheduling": ("async_scheduling", True), "--no-async-scheduling": ("async_scheduling", False),
    "--enable-dbo": ("dbo", True), "--no-enable-dbo": ("dbo", False),
}
# environment variables a pasted line may set before `vllm serve` (NAME=value ...) that the checks read
ENV_READ = ("VLLM_USE_V2_MODEL_RUNNER",)
_INTS = ("max_model_len", "max_num_seqs", "max_num_batched_tokens", "tp", "dp")
_JSONS = ("speculative", "kv_transfer", "compilation")
# Values the checks compare as text, which vLLM's config classes type as text (vllm/config/speculative.py
# SpeculativeConfig.method and .model; vllm/config/kv_transfer.py KVTransferConfig.kv_role): anything else vLLM
# refuses, and `["eagle"]` compared as a method was a traceback.
_TEXTS = (("speculative", "method", "--speculative-config"), ("speculative", "model", "--speculative-config"),
          ("kv_transfer", "kv_role", "--kv-transfer-config"))
# A pasted `vllm serve` line is a few kB (a per-batch schedule in its --speculative-config under 10 kB); shlex
# reads it a character at a time, so a bound keeps a hostile paste from taking seconds.
MAX_COMMAND_CHARS = 128 * 2**10


@dataclass(frozen=True, slots=True)
class Serve:
    """The settings of one `vllm serve` the checks read; None: not given (vLLM's default applies)."""

    model: str  # the target: a Hugging Face id, a local directory or a profile name
    speculative: dict  # --speculative-config ({}: speculation off)
    max_model_len: int | None = None  # --max-model-len (None: the model's own context)
    max_num_seqs: int | None = None  # --max-num-seqs
    max_num_batched_tokens: int | None = None  # --max-num-batched-tokens
    tp: int = 1  # --tensor-parallel-size
    dp: int = 1  # --data-parallel-size
    expert_parallel: bool = False  # --enable-expert-parallel
    all2all_backend: str | None = None  # --all2all-backend
    prefix_caching: bool | None = None  # --[no-]enable-prefix-caching (None: vLLM's default, on)
    async_scheduling: bool | None = None  # --[no-]async-scheduling (None: vLLM decides per method)
    kv_transfer: dict | None = None  # --kv-transfer-config (prefill/decode disaggregation)
    # requests carry a grammar (preflight's --structured-output, or --task json/structured/sql); a server's
    # --structured-outputs-config only picks the backend, each request decides whether it uses one
    structured: bool = False
    compilation: dict | None = None  # --compilation-config
    dbo: bool = False  # --enable-dbo (dual batch overlap: micro-batched steps)
    env: tuple[tuple[str, str], ...] = ()  # ENV_READ variables the line sets before `vllm serve`

    def env_value(self, name: str) -> str | None:
        return dict(self.env).get(name)

    @property
    def method(self) -> str | None:
        return self.speculative.get("method") if self.speculative else None

    @property
    def parallel_drafting(self) -> bool:
        """Drafting all k tokens in one forward: DFlash, DSpark, or parallel_drafting set (P-EAGLE, PARD)."""
        return bool(self.speculative.get("parallel_drafting")) or parallel(self.method or "")

    @property
    def drafting_slots(self) -> int:
        """The scheduler slots a request takes for drafting beyond its k+1 (`SpeculativeConfig.
        max_num_new_slots_for_drafting`: `advisor.vllm.drafting.new_slots`)."""
        return new_slots(self.method or "", self.k, self.parallel_drafting) if self.k else 0

    @property
    def k(self) -> int:
        """num_speculative_tokens (the largest of a per-batch schedule's: vLLM requires them equal or below)."""
        return int(self.speculative.get("num_speculative_tokens") or 0) if self.speculative else 0


def _json(flag: str, text: str) -> dict:
    try:
        value = parse_json(text, flag, "a JSON object", MAX_COMMAND_CHARS)
    except json.JSONDecodeError as exc:
        raise InputError(f"{flag} is not valid JSON ({exc.msg} at column {exc.colno}): {text[:60]}") from None
    if not isinstance(value, dict):
        raise InputError(f"{flag} must be a JSON object, got {text[:60]}")
    return value


def _scalar(text: str):
    """A dotted --speculative-config.KEY value: JSON where it reads as JSON (3, true, [..]), else the text."""
    try:
        return parse_json(text, "a --speculative-config.KEY value", "JSON")
    except json.JSONDecodeError:
        return text


def _int(flag: str, text: str) -> int:
    try:
        value = int(text) if len(text) <= 20 else None  # past 20 digits no count vLLM takes (it parses int64)
    except ValueError:
        value = None
    if value is None:
        raise InputError(f"{flag} takes a whole number, got {text[:30]!r}{'...' if len(text) > 30 else ''}")
    if value < 1:
        raise InputError(f"{flag} must be at least 1, got {value}")
    return value


def _texts(fields: dict) -> dict:
    """`fields`, once every value in _TEXTS is text where given."""
    for block, key, flag in _TEXTS:
        value = (fields.get(block) or {}).get(key)
        if value is not None and not isinstance(value, str):
            raise InputError(f"{flag} {key} must be text, as vLLM takes it; got {json.dumps(value)[:60]}")
    return fields


def parse_serve(line: str, *, structured: bool = False) -> Serve:
    """`vllm serve MODEL [flags]` (a shell line, as pasted) -> Serve."""
    if len(line) > MAX_COMMAND_CHARS:
        raise InputError(f"the command line is {len(line):,} characters long, past the {MAX_COMMAND_CHARS:,} a "
                         "`vllm serve` line takes here")
    try:
        words = shlex.split(line.replace("\\\n", " "))
    except ValueError as exc:
        raise InputError(f"cannot read the command line as a shell would ({exc})") from None
    env = []
    while words and "=" in words[0] and not words[0].startswith("-"):  # NAME=value before the command, or `env`
        name, _, value = words.pop(0).partition("=")
        if name in ENV_READ:
            env.append((name, value))
    if words[:1] == ["env"]:
        return parse_serve(shlex.join(words[1:]), structured=structured)
    if words[:2] == ["vllm", "serve"]:
        words = words[2:]
    elif words[:1] == ["serve"]:
        words = words[1:]
    else:
        raise InputError("give a `vllm serve MODEL ...` command line (or --speculative-config JSON with --model)")
    words = with_config(words)
    fields: dict = {"structured": structured, "env": tuple(env)}
    model = None
    i = 0
    while i < len(words):
        flag, eq, value = words[i].partition("=")
        if flag.startswith("--"):  # vLLM's parser reads --max_model_len as --max-model-len
            head, dot, key = flag.partition(".")
            flag = head.replace("_", "-") + dot + key
        if flag.startswith("--speculative-config."):  # vLLM's dotted form: --speculative-config.method eagle3
            if not eq:
                if i + 1 >= len(words):
                    raise InputError(f"{flag} needs a value")
                i += 1
                value = words[i]
            fields.setdefault("speculative", {})[flag.partition(".")[2]] = _scalar(value)
        elif flag in _SWITCHES:
            name, on = _SWITCHES[flag]
            fields[name] = on
        elif flag in _VALUED:
            if not eq:
                if i + 1 >= len(words):
                    raise InputError(f"{flag} needs a value")
                i += 1
                value = words[i]
            name = _VALUED[flag]
            fields[name] = _int(flag, value) if name in _INTS else _json(flag, value) if name in _JSONS else value
        elif flag in ("--model",):
            model, i = (value, i) if eq else (words[i + 1] if i + 1 < len(words) else None, i + 1)
        elif not flag.startswith("-") and model is None:
            model = flag
        i += 1
    if not model:
        raise InputError("the command names no model: `vllm serve MODEL ...`")
    _texts(fields)
    return Serve(model=model, speculative=fields.pop("speculative", {}), **fields)


def from_config(config: str, model: str, *, max_model_len: int | None = None, structured: bool = False) -> Serve:
    """A --speculative-config JSON and the model it serves -> Serve."""
    speculative = _texts({"speculative": _json("--speculative-config", config)})["speculative"]
    return Serve(model=model, speculative=speculative, max_model_len=max_model_len, structured=structured)
