"""Which round `calibrate` measures next: interrupted rounds first, then the rounds asked for, then more until the
model has been measured long enough for a burst of load to spoil only a minority of them."""

from calibration.calibrate.measure import MAX_ROUNDS, next_round


def test_the_rounds_asked_for_come_first_whatever_the_time():
    assert next_round([0, 0, 0], seconds=0.0, repeats=3, min_seconds=20.0) == 0
    assert next_round([2, 2, 2], seconds=99.0, repeats=3, min_seconds=20.0) == 2


def test_a_round_cut_short_by_an_interruption_is_finished_before_stopping():
    assert next_round([4, 3, 4], seconds=99.0, repeats=3, min_seconds=20.0) == 3
    assert next_round([4, 4, 4], seconds=99.0, repeats=3, min_seconds=20.0) is None


def test_a_quick_grid_gets_more_rounds_until_the_minimum_time():
    assert next_round([3, 3], seconds=4.0, repeats=3, min_seconds=20.0) == 3
    assert next_round([9, 9], seconds=19.9, repeats=3, min_seconds=20.0) == 9
    assert next_round([9, 9], seconds=20.0, repeats=3, min_seconds=20.0) is None
    assert next_round([3, 3], seconds=0.0, repeats=3, min_seconds=0.0) is None  # --min-seconds 0: exactly --repeats


def test_rounds_stop_at_the_cap_however_quick_the_grid():
    assert next_round([MAX_ROUNDS - 1] * 2, seconds=1.0, repeats=3, min_seconds=20.0) == MAX_ROUNDS - 1
    assert next_round([MAX_ROUNDS] * 2, seconds=1.0, repeats=3, min_seconds=20.0) is None


def test_nothing_to_measure_is_complete():
    assert next_round([], seconds=0.0, repeats=3, min_seconds=20.0) is None


def test_contexts_snap_to_the_engines_block_size():
    """qwen3-next's engine enlarges the KV block (Mamba/GDN state pages): the grid's 128-token contexts become whole
    blocks of it, coinciding points go, and a grid left with one context is refused in one line."""
    import pytest

    from advisor.errors import InputError
    from calibration.calibrate import profile_file as prof
    from calibration.calibrate.measure import snap_contexts

    def run(contexts):
        points = [{"kind": "prefill", "batch": 1, "new_tokens": 128, "context": 0, "heldout": False}]
        points += [{"kind": k, "batch": 2, "new_tokens": 1, "context": c, "heldout": False}
                   for k in ("decode", "verify") for c in contexts]
        return prof.ModelRun(name="t", source="t", arch={}, config={}, points=points)

    r = run([128, 256, 512, 768, 1024])
    snap_contexts(r, 528)
    assert sorted({m.context for m in r.points if m.kind == "decode"}) == [0, 528]
    assert all(m.context % 528 == 0 for m in r.points) and len(r.points) == 5
    with pytest.raises(InputError, match="raise --max-context to at least 1056"):
        snap_contexts(run([256, 512]), 528)
    same = run([128, 256])
    snap_contexts(same, 16)
    assert [m.context for m in same.points] == [0, 128, 256, 128, 256]


def test_an_engine_error_is_one_line_not_a_traceback():
    from advisor.errors import InputError
    from calibration.engine.vllm_engine import EngineError

    assert issubclass(EngineError, InputError)  # the CLI's main() prints it on one line, exit 2
