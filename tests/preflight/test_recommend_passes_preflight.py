"""The property of issue 37: no command `recommend` pastes fails `preflight`, over the verdict sweep's scenarios,
except where recommend says so itself before any number: an EAGLE head asked to draft past its trained context
(the workload's own length: recommend warns with the words preflight prints). The sweep is
tests/advice/test_verdict.py's (GPUs, methods, pairs, TP, batches, lengths, acceptances, a fixed or chosen k); 60
examples, new ones each run."""

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.advice.test_verdict import GPUS, PAIRS

from advisor.advice.advise import advise
from advisor.advice.recommendation import from_advice
from advisor.advice.resolve import AcceptanceInput, build_scenario
from advisor.errors import InputError
from advisor.model.cost.enginecost import is_cpu
from advisor.preflight.command import parse_serve
from advisor.preflight.run import preflight

PAIRS_HERE = [*PAIRS, ("llama-3.3-70b-instruct", "eagle3", None), ("qwen3-30b-a3b", "eagle3", None),
              ("llama-3.1-8b-instruct", "ngram_gpu", None), ("llama-3.1-8b-instruct", "suffix", None)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gpu=st.sampled_from(GPUS), pair=st.sampled_from(PAIRS_HERE), tp=st.sampled_from([1, 2, 4, 8]),
       batch=st.sampled_from([1, 4, 16, 64, 256]), prompt=st.integers(16, 16000), out=st.integers(2, 2000),
       alpha=st.floats(0.05, 0.95), k=st.one_of(st.none(), st.integers(1, 12)))
@example(gpu="b200", pair=("llama-3.3-70b-instruct", "eagle3", None), tp=1, batch=1, prompt=8000, out=200,
         alpha=0.7, k=None)  # the head was trained on 2048 positions: recommend warns, as preflight says
def test_the_pasted_command_passes_preflight(gpu, pair, tp, batch, prompt, out, alpha, k):
    target, method, draft = pair
    try:
        s = build_scenario(target=target, draft=draft, method=method, gpu=gpu, num_gpus=tp, batch=batch,
                           prompt_len=prompt, out_len=out, k=k, acceptance=AcceptanceInput(alpha=alpha))
    except InputError:
        return  # refused in one line: nothing pasted
    r = from_advice(advise(s))
    if not r.vllm.serve_command:
        return
    report = preflight(parse_serve(r.vllm.serve_command), gpu=gpu)
    problems = [f for f in report.findings if f.problem and f.why not in r.warnings]
    assert not problems, (r.vllm.serve_command, [f.line() for f in problems], is_cpu(s.hardware))
