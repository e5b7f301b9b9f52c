"""advisor/observe/traffic.py: the traffic of a window for one data-parallel rank. The recorded windows of real
servers through the whole command are tests/cli/test_observe.py's."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from observe_windows import recorded, scrape, served_by

from advisor.errors import InputError
from advisor.observe.scrape import Sample, Window
from advisor.observe.traffic import concurrency_mix, per_engine_running, traffic


def _window(data: dict) -> Window:
    samples = tuple(Sample(t, r, w, tuple(e[0]) if e else ()) for t, r, w, *e in data["samples"])
    return Window("w", data["start"], data["end"], data["seconds"], samples)


def test_concurrency_is_the_share_of_samples_at_each_level():
    assert concurrency_mix([1, 1, 8, 8, 8, 0, 7.6], 0.0) == ((0, 1 / 7), (1, 2 / 7), (8, 4 / 7))
    assert concurrency_mix([], 2.6) == ((3, 1.0),)  # no samples: Little's law's mean
    assert concurrency_mix([1, 3, 3], 0.0, [0.5, 0.25, 0.25]) == ((1, 0.5), (3, 0.5))


def test_each_engine_is_a_sample_of_a_ranks_running_requests():
    samples = (Sample(1.0, 6.0, 0.0, (2.0, 4.0)), Sample(2.0, math.nan, math.nan), Sample(3.0, 8.0, 0.0))
    running, weights = per_engine_running(samples, 2)
    assert running == [2.0, 4.0, 4.0] and weights == [0.5, 0.5, 1.0]  # a sample without engines: the mean


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 64), st.sampled_from(["observe_base.json", "observe_spec.json"]))
def test_n_engines_of_identical_traffic_are_one_engines_traffic_per_rank(n, name):
    one, many = traffic(_window(recorded(name))), traffic(_window(served_by(recorded(name), n)))
    assert many.engines == n and many.requests == n * one.requests
    # what the bug summed over engines (n x the running requests, read as one engine's batch)
    assert [c for c, _ in many.concurrency] == [c for c, _ in one.concurrency]
    assert [s for _, s in many.concurrency] == pytest.approx([s for _, s in one.concurrency])
    assert many.rank_rate == pytest.approx(one.rate)
    assert many.little_concurrency == pytest.approx(one.little_concurrency)
    for h in ("prompt", "output", "tpot", "ttft"):
        assert getattr(many, h).mean == pytest.approx(getattr(one, h).mean)
        assert getattr(many, h).share() == pytest.approx(getattr(one, h).share())


def test_the_front_ends_unlabelled_series_are_no_engine_of_their_own():
    """vLLM 0.32's API server exports vllm:admission_rejections_total by model and reason, without an engine label,
    beside its engines' series: the window is still one engine's (a live server's window read it as two, and each
    engine's share of one running request as 0)."""
    data = recorded("observe_base.json")
    model = data["end"].split('model_name="', 1)[1].split('"', 1)[0]
    front = f'\nvllm:admission_rejections_total{{model_name="{model}",reason="queue_full"}} 0.0\n'
    plain = traffic(_window(data))
    with_front = traffic(_window({**data, "start": data["start"] + front, "end": data["end"] + front}))
    assert with_front.engines == plain.engines == 1 and with_front.concurrency == plain.concurrency


def test_a_running_sample_that_is_not_a_number_of_requests_is_refused():
    start = scrape([0, 1, 0, 0, 0], 15, [1, 0, 0, 0, 0], 5, 1)
    end = scrape([0, 2, 0, 0, 0], 30, [1, 1, 0, 0, 0], 20, 2)
    for sample in (Sample(1.0, -5.0, 0.0), Sample(1.0, 2.5, 0.0), Sample(1.0, 2.0, 0.0, (1.0, -1.0))):
        with pytest.raises(InputError, match="vllm:num_requests_running.* reads"):
            traffic(Window("w", start, end, 5.0, (sample,)))


def test_a_window_without_finished_requests_is_refused():
    same = scrape([0, 1, 0, 0, 0], 15, [1, 0, 0, 0, 0], 5, 1)
    with pytest.raises(InputError, match="no request finished"):
        traffic(Window("w", same, same, 5.0, ()))
