"""advisor/observe/snapshot.py: a scrape per engine and summed, and the window between two (a restart read only
when the request counters fell too)."""

import pytest
from observe_windows import hist, scrape

from advisor.errors import InputError
from advisor.observe.histogram import histogram
from advisor.observe.scrape import Sample, Window
from advisor.observe.snapshot import OUTPUT, PROMPT, difference, engines_of, snapshot, total, window


def test_a_counter_that_went_down_is_a_restart_and_the_end_alone_counts():
    before = snapshot(scrape([0, 0, 9, 0, 0], 300, [0, 9, 0, 0, 0], 130, 9), "a")
    after = snapshot(scrape([0, 0, 2, 0, 0], 70, [0, 2, 0, 0, 0], 30, 2), "b")
    delta, restarted = difference(before, after)
    assert restarted and delta is after
    grown = snapshot(scrape([0, 0, 11, 0, 0], 370, [0, 11, 0, 0, 0], 160, 11), "c")
    delta, restarted = difference(before, grown)
    assert not restarted and histogram(delta, PROMPT).mean == pytest.approx(35.0)


def test_a_counter_that_fell_while_the_requests_rose_is_no_restart_but_refused_naming_it():
    """Issue 49: only the spec-decode counters falling (requests still rising) was read as a server restart."""
    spec = 'vllm:spec_decode_num_drafts_total{{engine="1",model_name="m"}} {}\n'
    before = engines_of(scrape([0, 0, 9, 0, 0], 300, [0, 9, 0, 0, 0], 130, 9, "1") + spec.format(500), "a")
    after = engines_of(scrape([0, 0, 11, 0, 0], 370, [0, 11, 0, 0, 0], 160, 11, "1") + spec.format(20), "b")
    with pytest.raises(InputError, match=r'w: vllm:spec_decode_num_drafts_total\{engine="1"\} went down from 500 '
                                         "to 20 while the requests finished rose"):
        window(before, after, "w")


def test_an_engine_that_restarted_restarts_the_whole_window():
    one = scrape([0, 0, 9, 0, 0], 300, [0, 9, 0, 0, 0], 130, 9, "0")
    two_before = scrape([0, 0, 9, 0, 0], 300, [0, 9, 0, 0, 0], 130, 9, "1")
    two_after = scrape([0, 0, 1, 0, 0], 30, [0, 1, 0, 0, 0], 15, 1, "1")
    deltas, restarted = window(engines_of(one + two_before, "a"), engines_of(one + two_after, "b"), "w")
    assert restarted and total(deltas).values[OUTPUT + "_count"] == 10  # every engine from its end scrape


def test_engines_are_read_apart_and_summed():
    two = "\n".join(hist(PROMPT, [0, 1, 0, 0, 0], 15, "0") + hist(PROMPT, [0, 1, 0, 0, 0], 17, "1")
                    + hist(OUTPUT, [1, 1, 0, 0, 0], 20)) + "\n"
    per = engines_of(two, "t")
    assert sorted(per) == ["0", "1"] and per["1"].values[PROMPT + "_sum"] == 17
    assert histogram(total(per), PROMPT).mean == pytest.approx(16.0) == histogram(snapshot(two, "t"), PROMPT).mean


def test_not_vllm_and_not_prometheus_are_refused():
    with pytest.raises(InputError, match="not a vLLM server"):
        snapshot('process_cpu_seconds_total 3.5\n', "x")
    with pytest.raises(InputError, match="not Prometheus text"):
        snapshot("<html>\n", "x")
    with pytest.raises(InputError, match="positive time"):
        Window("w", "", "", 0.0, (Sample(0, 0, 0),))


@pytest.mark.parametrize("line, named", [
    # issue 36 #2: "-31 requests finished" and ENABLE; a negative TPOT sum was a traceback
    ('vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} -31', "vllm:request_success_total"),
    ('vllm:request_time_per_output_token_seconds_sum{engine="0",model_name="m"} -5', "_seconds_sum"),
    ('vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 2.5', "vllm:request_success_total"),
    ('vllm:num_requests_running{engine="0",model_name="m"} -5', "vllm:num_requests_running"),
])
def test_counters_and_gauges_that_no_server_reports_are_refused_naming_the_series(line, named):
    text = scrape([0, 1, 0, 0, 0], 15, [1, 0, 0, 0, 0], 5, 1) + line + "\n"
    with pytest.raises(InputError, match=named):
        snapshot(text, "t")
