import pytest

from advisor.advice.advise import advise
from advisor.advice.recommendation import from_advice
from advisor.advice.resolve import AcceptanceInput, build_scenario
from advisor.render.report import COLUMNS, _table_rows, markdown, text


def recommendation(**kw):
    return from_advice(advise(build_scenario(prompt_len=kw.pop("prompt_len", 8000), out_len=kw.pop("out_len", 200), **kw)))


def test_text_marks_best_k_and_paints_only_on_request():
    r = recommendation()
    plain = text(r, colour=False)
    assert "\033[" not in plain
    best_line = next(line for line in plain.splitlines() if line.endswith("<- best"))
    assert best_line.split()[0] == str(r.best_k)
    assert "\033[32m" in text(r, colour=True)  # green verdict


def test_off_verdict_says_speculation_off_and_prints_no_schedule():
    from advisor.advice.resolve import AcceptanceInput

    r = recommendation(acceptance=AcceptanceInput(alpha=0.05))
    assert r.best_k == 0
    out = text(r, colour=False)
    assert "speculation off" in out and "--speculative-config" not in out and "schedule" not in out
    assert "--speculative-config" not in markdown(r)


SHAPES = {
    "default": {},
    "calibrated, a long path": dict(target="tiny-llama-target", draft="tiny-llama-draft", gpu="cpu-xeon-icelake-2vcpu",
                                    prompt_len=256, out_len=64),
    "eagle on 4 GPUs": dict(target="llama-3.3-70b-instruct", method="eagle", gpu="h100-sxm", num_gpus=4, batch=16),
    "does not fit": dict(gpu="rtx-4090", prompt_len=120000, out_len=100),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("width", [60, 80, 132])
def test_text_fits_the_width_and_keeps_the_table_whole(shape, width):
    r = recommendation(**SHAPES[shape])
    lines = text(r, colour=False, width=width).splitlines()
    header = next(i for i, line in enumerate(lines) if line.split() == " ".join(COLUMNS).split())
    table = lines[header:lines.index("", header)]  # header, rule, one row per k: never wrapped
    # one row marked best, none when nothing fits (a row that does not fit is never best)
    marked = 1 if any(p.fits for p in r.per_k) else 0
    assert len(table) == 2 + len(_table_rows(r)) and sum(line.endswith("  <- best") for line in table) == marked
    prose = [line for line in lines if line not in table]
    assert max(map(len, prose)) <= width
    if width >= 80:  # the table is ~70 columns wide: at 80 everything fits
        assert max(map(len, table)) <= width


def test_text_defaults_to_the_terminal_width(monkeypatch):
    r = recommendation()
    monkeypatch.setenv("COLUMNS", "100")
    wide = text(r, colour=False)
    assert max(map(len, wide.splitlines())) > 80 and wide == text(r, colour=False, width=100)


def test_an_asked_k_that_does_not_fit_is_the_row_the_report_shows_and_names(squeezed):
    # k = 12 does not fit where k = 1 does: its row says so, and the note gives the requests it runs (none) at k = 12,
    # not at k = 1 (which runs one)
    r = from_advice(advise(build_scenario(k=12, **squeezed)))
    assert r.per_k[1].fits and not r.per_k[12].fits
    for out in (text(r, colour=False, width=200), markdown(r)):
        rows = [line.replace("|", " ").split() for line in out.splitlines()]
        assert any(cells[:1] == ["12"] and "does not fit" in " ".join(cells) for cells in rows), out
        assert "1 without speculation, 0 at k=12; batch 1" in out
        assert "80% intervals" not in out  # no interval line for a k where nothing runs


def test_the_pasted_cap_says_which_batches_it_serves_and_the_users_batch_runs_a_paying_k():
    """Issue 36 #4: num_speculative_tokens 4 pasted, its row 0.70x at the user's batch, and nothing said."""
    r = from_advice(advise(build_scenario(target="vicuna-13b-v1.3", gpu="a100-80gb-sxm", num_gpus=4, batch=353,
                                          prompt_len=6, out_len=209, temperature=1.28, draft_quantization="fp8",
                                          acceptance=AcceptanceInput(task="code"))))
    cap, runs = r.vllm.speculative_config["num_speculative_tokens"], r.vllm.per_batch_size_schedule
    here = next(k for lo, hi, k in runs if lo <= r.concurrency.speculative <= hi)
    assert cap == max(k for *_, k in runs) > here and next(p for p in r.per_k if p.k == here).e2e_speedup >= 1.0
    (lo, hi), = [(lo, hi) for lo, hi, k in runs if k == cap]  # the cap runs at the smallest batches only
    report = text(r, colour=False, width=200)
    assert f"num_speculative_tokens {cap} is the schedule's largest k" in report
    assert f"runs only at batches {lo}-{hi}" in report and hi < r.concurrency.speculative
    assert f"the schedule runs k={here}" in report
