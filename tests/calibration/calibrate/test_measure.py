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
