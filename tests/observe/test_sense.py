"""advisor/observe/sense.py: a window that could not have happened is refused in one line naming the series and its
engine (issue 49: a TPOT _sum of 0 printed "0.00 ms", one of 1e15 "52631578947368424.00 ms", falling buckets were
read as a prompt distribution, a success counter of 1e15 as that many requests)."""

import pytest
from observe_windows import hist, scrape

from advisor.errors import InputError
from advisor.observe.sense import IN_FLIGHT, MAX_TOKENS_PER_S, MIN_TPOT_S, check_scrape, check_window
from advisor.observe.snapshot import INFERENCE, OUTPUT, TPOT, engines_of

BASE = scrape([0, 2, 0, 0, 0], 30, [0, 1, 1, 0, 0], 45, 2, engine="3")  # two requests on engine "3"


def _window(*lines: str, text: str = BASE, seconds: float = 10.0) -> None:
    check_window(engines_of(text + "\n".join(lines) + "\n", "w"), seconds, "w")


def test_a_window_as_vllm_records_it_passes():
    _window(*hist(TPOT, [2, 0, 0, 0, 0], 0.05, "3"), *hist(INFERENCE, [2, 0, 0, 0, 0], 3.0, "3"),
            'vllm:generation_tokens_total{engine="3",model_name="m"} 45')
    check_scrape(engines_of(BASE, "w"), "w")


def test_falling_cumulative_buckets_are_refused():
    text = BASE.replace('le="50.0"} 2.0', 'le="50.0"} 1.0', 1)
    with pytest.raises(InputError, match=r'vllm:request_prompt_tokens_bucket\{engine="3",le="50"\} reads 1, below '
                                         r'the 2 of le="20"'):
        check_scrape(engines_of(text, "w"), "w")
    with pytest.raises(InputError, match="_bucket"):
        check_window(engines_of(text, "w"), 10.0, "w")


def test_a_count_that_is_not_its_inf_bucket_is_refused():
    text = BASE.replace('vllm:request_prompt_tokens_count{engine="3",model_name="m"} 2.0',
                        'vllm:request_prompt_tokens_count{engine="3",model_name="m"} 7.0')
    with pytest.raises(InputError, match=r'vllm:request_prompt_tokens_count\{engine="3"\} reads 7 but its \+Inf'):
        check_scrape(engines_of(text, "w"), "w")


@pytest.mark.parametrize("total", [0.0, 1e15, 39.0, 201.0])
def test_a_sum_outside_what_its_buckets_allow_is_refused(total):
    """Two outputs in (10, 20] and (20, 50]: their sum lies between 30 and 70."""
    text = BASE.replace('vllm:request_generation_tokens_sum{engine="3",model_name="m"} 45',
                        f'vllm:request_generation_tokens_sum{{engine="3",model_name="m"}} {total}')
    if 30 <= total <= 70:
        return _window(text=text)
    with pytest.raises(InputError, match=r'vllm:request_generation_tokens_sum\{engine="3"\} reads .* outside the '
                                         "30 to 70 its buckets' 2 observations allow"):
        _window(text=text)


def test_the_open_last_bucket_of_a_length_holds_no_request_past_any_context():
    text = scrape([0, 2, 0, 0, 0], 30, [0, 0, 0, 0, 2], 1e15, 2)
    with pytest.raises(InputError, match="vllm:request_generation_tokens_sum"):
        _window(text=text)
    _window(text=scrape([0, 2, 0, 0, 0], 30, [0, 0, 0, 0, 2], 5000, 2))


@pytest.mark.parametrize("success", [1e15, 2.0 + IN_FLIGHT + 1])
def test_a_success_counter_that_counts_other_requests_than_the_histograms_is_refused(success):
    text = scrape([0, 2, 0, 0, 0], 30, [0, 1, 1, 0, 0], 45, success)
    with pytest.raises(InputError, match=r'vllm:request_success_total\{engine="0"\} counts .* finished requests in '
                                         r'the window but vllm:request_generation_tokens_count\{engine="0"\} 2'):
        _window(text=text)


def test_a_tpot_above_the_requests_inference_time_is_refused():
    with pytest.raises(InputError, match="at most its inference time"):
        _window(*hist(TPOT, [0, 0, 0, 0, 2], 1e15, "3"), *hist(INFERENCE, [0, 0, 2, 0, 0], 60.0, "3"))


def test_a_tpot_faster_than_any_gpu_is_refused():
    """A TPOT _sum of 0 with every request in the first bucket passes the bucket bound (it starts at 0)."""
    with pytest.raises(InputError, match=r"0.0000 ms per output token, faster than any GPU"):
        _window(*hist(TPOT, [2, 0, 0, 0, 0], 0.0, "3"))
    _window(*hist(TPOT, [2, 0, 0, 0, 0], 2 * MIN_TPOT_S, "3"))


def test_one_token_requests_may_have_a_tpot_of_0():
    """vLLM records TPOT 0 for a request of one output token: a window of only those has a _sum of 0."""
    labels = 'engine="0",model_name="m"'
    text = scrape([0, 2, 0, 0, 0], 30, [2, 0, 0, 0, 0], 2, 2) + "\n".join([
        f'{OUTPUT}_bucket{{{labels},le="1.0"}} 2.0', *hist(TPOT, [2, 0, 0, 0, 0], 0.0)]) + "\n"
    _window(text=text)


def test_tokens_faster_than_any_gpu_serves_are_refused():
    with pytest.raises(InputError, match=r'vllm:generation_tokens_total\{engine="3"\} grew by 1e\+15 in 10 s'):
        _window('vllm:generation_tokens_total{engine="3",model_name="m"} 1e15')
    _window(f'vllm:generation_tokens_total{{engine="3",model_name="m"}} {MAX_TOKENS_PER_S:.0f}')
