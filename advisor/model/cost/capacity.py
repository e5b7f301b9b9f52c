"""How much traffic one replica sustains within latency SLOs, with and without speculation.

A replica is one vLLM instance (tp GPUs). In steady state it runs B sequences in decode at once, and between
decode steps it prefills newly arrived prompts (chunked prefill mixes the two in one step, so prefill time is
taken out of decode time). With T(B) the decode time per output token at concurrency B (a plain step, or one
draft-and-verify iteration / E), t_pf the prefill time of one mean prompt, O the mean output length:

  ρ      = λ · t_pf                   share of engine time spent prefilling
  TPOT   = T(B) / (1 - ρ)             decode slows down by the time prefill takes away
  B      = λ · (O - 1) · TPOT         Little's law, L = λW (Little 1961): B requests each decoding O - 1 tokens
  =>  λ(B) = B / ((O - 1)·T(B) + B·t_pf)                      requests/s at concurrency B
  TTFT   = W_q + t_pf(p90 prompt) + chunks · T_step(B)        a p90 prompt, its prefill chunks sharing steps
  W_q    = ρ · t_pf / (2 · (1 - ρ))   mean wait of an M/D/1 queue (Pollaczek-Khinchine; Kleinrock 1975, §5.7)

The sustainable rate is λ at the largest B of the run 1..B* whose TPOT and TTFT meet the SLOs and whose KV cache
fits (all three grow with B at a fixed k; where the schedule drops to a smaller k the step, and with it TTFT, can
shrink a little, and a B past the first miss is not counted). B is a time average (Little's L), so it runs on
a fine grid, not only whole numbers: at long outputs one more whole sequence can be +50% load. Simplifications, stated
in every review: arrivals are Poisson and prefill is the only queue (M/D/1); TPOT is the mean over a request's life
(every sequence in a step waits for the same step, so it is set by the mean context); TTFT adds the mean wait to a p90
prompt's prefill; vLLM's speculation schedule (num_speculative_tokens_per_batch_size) picks the k with the lowest time
per token at each B, k = 0 included, so the drafter costs throughput only through its memory and its prefill.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.model.cost.costmodel import chunks, prefill_time
from advisor.model.cost.speculative import Setup

GRID_STEP = 0.05  # resolution of the concurrency grid, sequences (coarser past GRID_POINTS)
GRID_POINTS = 4000


@dataclass(frozen=True, slots=True)
class Shape:
    """A workload's request lengths, in tokens."""

    prompt_mean: float
    prompt_p90: float
    out_mean: float

    @property
    def context(self) -> float:
        """Mean tokens in a decoding sequence's KV cache."""
        return self.prompt_mean + self.out_mean / 2


@dataclass(frozen=True, slots=True)
class LoadCurve:
    """One replica's steady state at each mean concurrency B from 1 to the most that fits."""

    batch: np.ndarray  # mean number of sequences decoding at once (Little's L)
    k: np.ndarray  # draft length at each B (0: plain decode)
    rate: np.ndarray  # requests/s completed
    tpot: np.ndarray  # s per output token, prefill interruptions included
    ttft: np.ndarray  # s to the first token of a p90 prompt, mean queueing included
    prefill_share: np.ndarray  # ρ: share of engine time spent prefilling


def load_curve(setup: Setup, tokens_per_step: np.ndarray, shape: Shape, max_batch: int,
               speculative: bool) -> LoadCurve:
    """`tokens_per_step[k]`: tokens per step at draft length k over the mean output (index 0 = 1.0); without
    speculation only k = 0 is used."""
    top = float(max(max_batch, 1))
    B = np.linspace(1.0, top, int(min(GRID_POINTS, (top - 1.0) / GRID_STEP + 1)))
    ks = np.arange(len(tokens_per_step)) if speculative else np.array([0])
    E = np.asarray(tokens_per_step, dtype=float)[ks]
    step = setup.iteration_time(ks[None, :], B[:, None], shape.context)  # (B, k) seconds per iteration
    per_token = step / E[None, :]
    best = per_token.argmin(axis=1)
    T = per_token[np.arange(B.size), best]
    T_step = step[np.arange(B.size), best]

    def prefill(prompt: float) -> float:
        target = float(prefill_time(setup.target, setup.target_cost, 1, prompt, setup.tp))
        return target + (float(setup.draft_prefill(1, prompt)) if speculative else 0.0)

    t_pf, t_pf90 = prefill(shape.prompt_mean), prefill(shape.prompt_p90)
    decode_tokens = max(shape.out_mean - 1.0, 1.0)
    rate = B / (decode_tokens * T + B * t_pf)
    rho = rate * t_pf
    wait = rho * t_pf / (2.0 * (1.0 - rho))
    # a prompt prefills in chunks of max_num_batched_tokens, each sharing a step with the running decodes
    ttft = wait + t_pf90 + chunks(setup.target_cost, 1, shape.prompt_p90) * T_step
    return LoadCurve(B, ks[best], rate, T / (1.0 - rho), ttft, rho)


@dataclass(frozen=True, slots=True)
class Sustainable:
    """The most load one replica carries within the SLOs."""

    batch: float  # mean concurrency at that load; 0 when even one request misses an SLO
    rate: float  # requests/s
    tpot: float  # s
    ttft: float  # s
    k: int  # draft length the schedule uses there
    bound: str  # what stops more load


def sustainable(curve: LoadCurve, ttft_slo: float, tpot_slo: float, bound_at_max: str) -> Sustainable:
    """Largest B meeting both SLOs. `bound_at_max` names what caps B when the curve's end is reached (the KV
    cache or max_num_seqs)."""
    ok = (curve.tpot <= tpot_slo) & (curve.ttft <= ttft_slo)
    if not ok[0]:
        return Sustainable(0.0, 0.0, float(curve.tpot[0]), float(curve.ttft[0]), int(curve.k[0]), "SLO unreachable")
    failing = np.nonzero(~ok)[0]
    i = int(failing[0]) - 1 if failing.size else curve.batch.size - 1
    if failing.size:
        j = i + 1
        bound = "TPOT SLO" if curve.tpot[j] > tpot_slo else "TTFT SLO"
    else:
        bound = bound_at_max
    return Sustainable(float(curve.batch[i]), float(curve.rate[i]), float(curve.tpot[i]), float(curve.ttft[i]),
                       int(curve.k[i]), bound)


def concurrency_at(curve: LoadCurve, rate: float) -> float:
    """The concurrency at which the replica completes `rate` requests/s (λ rises with B); the curve's end if it
    cannot."""
    i = int(np.searchsorted(curve.rate, rate))
    return float(curve.batch[min(i, curve.batch.size - 1)])


def unreachable(curve: LoadCurve, ttft_slo: float, tpot_slo: float, shape: Shape) -> list[str]:
    """Why even a lone request misses the SLOs, in numbers (empty when it does not)."""
    why = []
    if curve.tpot[0] > tpot_slo:
        why.append(f"TPOT SLO {tpot_slo * 1e3:.0f} ms is impossible: one request alone decodes at "
                   f"{curve.tpot[0] * 1e3:.1f} ms per token")
    if curve.ttft[0] > ttft_slo:
        why.append(f"TTFT SLO {ttft_slo * 1e3:.0f} ms is impossible: prefilling one p90 prompt of "
                   f"{shape.prompt_p90:.0f} tokens alone takes {curve.ttft[0] * 1e3:.0f} ms")
    return why
