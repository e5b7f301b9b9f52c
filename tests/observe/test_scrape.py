"""Recording a window from a live endpoint (a loopback server answering a recorded vLLM scrape), on a fake clock,
and saving it for replay."""

import json
from pathlib import Path

import pytest
from loopback import serving_page

from advisor.errors import InputError
from advisor.observe import scrape

SCRAPE = json.loads((Path(__file__).resolve().parents[1] / "data" / "observe_base.json").read_text())["end"].encode()


def test_a_window_is_two_scrapes_with_the_gauge_sampled_between_and_replays_as_saved(tmp_path):
    now = [0.0]
    with serving_page(SCRAPE) as url:
        window = scrape.record(url, 1.0, 0.25, clock=lambda: now[0],
                               sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert window.seconds == pytest.approx(1.0) and len(window.samples) == 3
    assert [s.t for s in window.samples] == pytest.approx([0.25, 0.5, 0.75])
    assert window.start == window.end == SCRAPE.decode()
    scrape.save(window, tmp_path / "w.json")
    again = scrape.load(tmp_path / "w.json")
    assert (again.start, again.end, again.seconds, again.samples) == (window.start, window.end, window.seconds,
                                                                      window.samples)


@pytest.mark.parametrize("seconds, every, message", [(0, 1, "--seconds"), (10, 0.001, "--every"),
                                                     (float("nan"), 1, "--seconds")])
def test_a_window_that_cannot_be_watched_is_refused_before_any_scrape(seconds, every, message):
    with pytest.raises(InputError, match=message):
        scrape.record("http://127.0.0.1:9", seconds, every)
