"""The traffic math on small hand-written scrapes (each a few series of the real vLLM 0.32 names); the recorded
windows of real servers are tests/cli/test_observe.py's."""

import numpy as np
import pytest

from advisor.errors import InputError
from advisor.observe.scrape import Sample, Window
from advisor.observe.traffic import OUTPUT, PROMPT, concurrency_mix, difference, histogram, snapshot, traffic

BOUNDS = (10.0, 20.0, 50.0, 100.0)


def _hist(name: str, per_bucket: list[float], total: float, engine: str = "0") -> list[str]:
    labels = f'engine="{engine}",model_name="m"'
    lines, cum = [], 0.0
    for bound, n in zip([*map(str, BOUNDS), "+Inf"], per_bucket):
        cum += n
        lines.append(f'{name}_bucket{{{labels},le="{bound}"}} {cum}')
    return lines + [f"{name}_count{{{labels}}} {cum}", f"{name}_sum{{{labels}}} {total}"]


def _scrape(prompts: list[float], prompt_sum: float, outputs: list[float], output_sum: float, done: float) -> str:
    lines = [f'vllm:request_success_total{{engine="0",finished_reason="length",model_name="m"}} {done}']
    lines += _hist(PROMPT, prompts, prompt_sum) + _hist(OUTPUT, outputs, output_sum)
    return "\n".join(lines) + "\n"


def test_bucket_lengths_keep_the_exact_mean_inside_their_buckets():
    snap = snapshot(_scrape([0, 0, 4, 0, 0], 4 * 37, [0, 3, 1, 0, 0], 3 * 15 + 40, 4), "t")
    prompt, output = histogram(snap, PROMPT), histogram(snap, OUTPUT)
    assert prompt.values.tolist() == pytest.approx([37.0])  # one bucket: its length is the mean itself
    assert (output.counts * output.values).sum() / output.counts.sum() == pytest.approx(output.mean)
    assert np.all((output.lo <= output.values) & (output.values <= output.hi))
    assert output.quantile(0.5) == output.values[0] and output.quantile(0.9) == output.values[1]
    assert output.quantile_bound(0.5) == 20.0 and output.quantile_bound(0.9) == 50.0
    assert prompt.spread() == pytest.approx(30 / np.sqrt(12) * np.sqrt(4 / 3))  # one bucket: its width, uniform


def test_a_counter_that_went_down_is_a_restart_and_the_end_alone_counts():
    before = snapshot(_scrape([0, 0, 9, 0, 0], 300, [0, 9, 0, 0, 0], 130, 9), "a")
    after = snapshot(_scrape([0, 0, 2, 0, 0], 70, [0, 2, 0, 0, 0], 30, 2), "b")
    delta, restarted = difference(before, after)
    assert restarted and delta is after
    grown = snapshot(_scrape([0, 0, 11, 0, 0], 370, [0, 11, 0, 0, 0], 160, 11), "c")
    delta, restarted = difference(before, grown)
    assert not restarted and histogram(delta, PROMPT).mean == pytest.approx(35.0)


def test_engines_are_summed_and_a_window_without_finished_requests_is_refused():
    two = "\n".join(_hist(PROMPT, [0, 1, 0, 0, 0], 15, "0") + _hist(PROMPT, [0, 1, 0, 0, 0], 17, "1")
                    + _hist(OUTPUT, [1, 1, 0, 0, 0], 20)) + "\n"
    assert histogram(snapshot(two, "t"), PROMPT).mean == pytest.approx(16.0)
    same = _scrape([0, 1, 0, 0, 0], 15, [1, 0, 0, 0, 0], 5, 1)
    with pytest.raises(InputError, match="no request finished"):
        traffic(Window("w", same, same, 5.0, ()))


def test_concurrency_is_the_share_of_samples_at_each_level():
    assert concurrency_mix([1, 1, 8, 8, 8, 0, 7.6], 0.0) == ((0, 1 / 7), (1, 2 / 7), (8, 4 / 7))
    assert concurrency_mix([], 2.6) == ((3, 1.0),)  # no samples: Little's law's mean


def test_not_vllm_and_not_prometheus_are_refused():
    with pytest.raises(InputError, match="not a vLLM server"):
        snapshot('process_cpu_seconds_total 3.5\n', "x")
    with pytest.raises(InputError, match="not Prometheus text"):
        snapshot("<html>\n", "x")
    with pytest.raises(InputError, match="positive time"):
        Window("w", "", "", 0.0, (Sample(0, 0, 0),))


def test_one_token_requests_do_not_pull_the_measured_tpot_down():
    """vLLM observes TPOT 0 for a request with one output token (no decode); those zeros are not decode speed."""
    lines = _scrape([0, 0, 4, 0, 0], 160, [4, 0, 0, 0, 0], 4, 4).splitlines()  # (0, 10] holds them here
    lines += _hist("vllm:request_time_per_output_token_seconds", [4, 0, 0, 0, 0], 0.0)
    lines += _hist("vllm:request_time_per_output_token_seconds", [2, 0, 0, 0, 0], 0.1, engine="1")
    snap = snapshot("\n".join(lines) + "\n", "t")
    zeros = 4.0  # the four one-token requests: what the output histogram's first bucket counts
    assert histogram(snap, "vllm:request_time_per_output_token_seconds", zeros=zeros).total == 2


@pytest.mark.parametrize("line, named", [
    # issue 36 #2: "-31 requests finished" and ENABLE; a negative TPOT sum was a traceback
    ('vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} -31', "vllm:request_success_total"),
    ('vllm:request_time_per_output_token_seconds_sum{engine="0",model_name="m"} -5', "_seconds_sum"),
    ('vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 2.5', "vllm:request_success_total"),
    ('vllm:num_requests_running{engine="0",model_name="m"} -5', "vllm:num_requests_running"),
])
def test_counters_and_gauges_that_no_server_reports_are_refused_naming_the_series(line, named):
    text = _scrape([0, 1, 0, 0, 0], 15, [1, 0, 0, 0, 0], 5, 1) + line + "\n"
    with pytest.raises(InputError, match=named):
        snapshot(text, "t")


@pytest.mark.parametrize("running", [-5.0, 2.5])
def test_a_running_sample_that_is_not_a_number_of_requests_is_refused(running):
    start = _scrape([0, 1, 0, 0, 0], 15, [1, 0, 0, 0, 0], 5, 1)
    end = _scrape([0, 2, 0, 0, 0], 30, [1, 1, 0, 0, 0], 20, 2)
    with pytest.raises(InputError, match="vllm:num_requests_running reads"):
        traffic(Window("w", start, end, 5.0, (Sample(1.0, running, 0.0),)))
