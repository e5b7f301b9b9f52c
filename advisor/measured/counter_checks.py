"""The checks every read of vLLM's counters passes, whichever reader (`metrics.parse` for `recommend --metrics`,
`observe.snapshot.engines_of` for a window): a counter counts (finite, non-negative, whole, below 2**53), a gauge of
requests is a number of requests, and the speculative counters agree with one another as vLLM keeps them
(vllm/v1/spec_decode/metrics.py). Whatever fails is refused in one line naming the series."""

from __future__ import annotations

import math

from advisor.errors import InputError

# Prometheus counters are float64: past 2**53 they no longer count one by one, so a larger value is not a count
# any server reached (a server drafting a million tokens a second would take 285 years).
MAX_COUNT = 2.0**53


def shown(name: str, labels: dict) -> str:
    """A series as Prometheus text writes it; label values escaped, so a newline in one cannot split the line."""
    text = ",".join(f"{key}={json_quote(value)}" for key, value in sorted(labels.items()))
    return f"{name}{{{text}}}" if text else name


def json_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"') + '"'


def check_counter(name: str, labels: dict, value: float, origin: str, whole: bool = True) -> None:
    """A counter's value: finite, >= 0, at most MAX_COUNT and (`whole`: counts of drafts, tokens, requests) an
    integer; a histogram's _sum of seconds need not be whole."""
    if not math.isfinite(value) or not 0.0 <= value <= MAX_COUNT or (whole and value != math.floor(value)):
        kind = "a whole count" if whole else "a non-negative total"
        raise InputError(f"{origin}: {shown(name, labels)} reads {value:g}, not {kind} as vLLM's counters keep")


def check_requests_gauge(name: str, value: float, origin: str, most: float | None = None) -> None:
    """A gauge of requests (running, waiting): a whole number >= 0 and, with `most`, no more than the server can
    hold (max_num_seqs for each engine)."""
    if not math.isfinite(value) or value < 0 or value != math.floor(value):
        raise InputError(f"{origin}: {name} reads {value:g}, not a number of requests")
    if most is not None and value > most:
        raise InputError(f"{origin}: {name} reads {value:g}, more than the {most:g} requests the server's "
                         "max_num_seqs lets run at once (pass the server's --max-num-seqs if it set one)")


def check_spec_totals(totals: dict[str, float], per_position: list[float], origin: str,
                      drafts: str, draft_tokens: str, accepted: str, per_pos: str) -> None:
    """The speculative counters agree as vLLM keeps them: each draft proposes at least one token and at most k (one
    per-position counter each), accepts no more than it proposed, position 0 accepts at most once per draft, and the
    per-position counts sum to the accepted total (position i counts steps whose first i+1 drafts were accepted: each
    accepted token once)."""
    if totals[draft_tokens] < totals[drafts]:
        raise InputError(f"{origin}: {draft_tokens} ({totals[draft_tokens]:g}) is below {drafts} "
                         f"({totals[drafts]:g}): every draft proposes at least one token")
    if totals[accepted] > totals[draft_tokens]:
        raise InputError(f"{origin}: {accepted} ({totals[accepted]:g}) exceeds {draft_tokens} "
                         f"({totals[draft_tokens]:g}): no more tokens can be accepted than were drafted")
    if per_position and per_position[0] > totals[drafts]:
        raise InputError(f"{origin}: {per_pos}{{position=\"0\"}} ({per_position[0]:g}) exceeds {drafts} "
                         f"({totals[drafts]:g}): a draft's first token is accepted at most once")
    if per_position and totals[draft_tokens] > len(per_position) * totals[drafts]:
        raise InputError(f"{origin}: {draft_tokens} ({totals[draft_tokens]:g}) exceeds k = {len(per_position)} (its "
                         f"per-position counters) times {drafts} ({totals[drafts]:g}): a draft proposes at most k "
                         "tokens")
    if per_position and sum(per_position) != totals[accepted]:
        raise InputError(f"{origin}: {per_pos} sums to {sum(per_position):g} over its positions but {accepted} "
                         f"reads {totals[accepted]:g}: vLLM counts each accepted token once in both")
