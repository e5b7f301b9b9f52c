from advisor.advise import advise
from advisor.recommendation import from_advice
from advisor.render.report import markdown, text
from advisor.resolve import build_scenario


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
    from advisor.resolve import AcceptanceInput

    r = recommendation(acceptance=AcceptanceInput(alpha=0.05))
    assert r.best_k == 0
    out = text(r, colour=False)
    assert "speculation off" in out and "--speculative-config" not in out and "schedule" not in out
    assert "--speculative-config" not in markdown(r)
