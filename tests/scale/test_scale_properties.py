"""Properties of the answer at scale over scale scenarios (DP, EP, backends, DBO, PD, nodes; tests/scale_scenarios.py):
no request runs where the weights (and the KV cache it needs) exceed a GPU's usable memory; k never passes what
`recommend` without scale flags would allow (advice.advise.candidates); every pasted command, the PD pools' both,
passes `preflight`."""

import numpy as np
from hypothesis import HealthCheck, given, settings

from advisor.advice.advise import candidates
from advisor.errors import InputError
from advisor.preflight.command import parse_serve
from advisor.preflight.run import preflight
from advisor.scale import fit
from advisor.scale.advise import K_TABLE, priced_setup
from advisor.scale.load import answer
from advisor.scale.serve import decode_commands, prefill_commands
from tests.scale_scenarios import scale_cases

def answered(s, d):
    """The answer, or None where it is refused in one line (an EP flag on a dense target: nothing is pasted)."""
    try:
        return answer(s, d)
    except InputError:
        return None


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                        HealthCheck.filter_too_much])


@SETTINGS
@given(case=scale_cases())
def test_no_request_runs_where_it_does_not_fit_and_k_stays_where_recommend_would(case):
    if case is None:
        return
    s, d, _ = case
    a = answered(s, d)
    if a is None:
        return
    setup, _, _ = priced_setup(s, d)
    for row in a.rows:
        if not row.padded_requests:
            continue
        b = fit.budget(s, setup, d, row.k)
        weights = b.target_weights + (b.draft_weights if row.k else 0.0)
        per_request = (b.kv_per_token_spec * b.tokens_per_sequence_spec if row.k else
                       b.kv_per_token_baseline * b.tokens_per_sequence)
        assert weights + b.reserve + row.padded_requests * per_request <= b.usable * (1 + 1e-9), (row, d)
    allowed = candidates(s, np.arange(0, K_TABLE + 1))
    assert a.best_k == 0 or allowed[a.best_k], (a.best_k, s.acceptance.per_position, s.acceptance.known_positions)
    if a.does_not_fit:
        assert a.verdict == "disable" and not decode_commands(a)


@SETTINGS
@given(case=scale_cases())
def test_every_scale_paste_passes_preflight(case):
    if case is None:
        return
    s, d, gpu = case
    a = answered(s, d)
    if a is None:
        return
    said = set(s.acceptance.warnings)  # what recommend says itself before any number (a head past its context)
    for command in [*decode_commands(a), *prefill_commands(a)]:
        report = preflight(parse_serve(command), gpu=gpu)
        problems = [f.line() for f in report.findings if f.problem and f.why not in said]
        assert not problems, (command, problems)
