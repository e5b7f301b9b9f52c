"""Reading vLLM's spec-decode counters: the committed real samples (tests/data, from capture_metrics.py), files we
write, a live HTTP endpoint, two-scrape deltas, and every way the input can be wrong."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loopback import closed_port, serving_page
from typer.testing import CliRunner

from advisor.cli.app import app
from advisor.errors import InputError
from advisor.measured.counts import Counts
from advisor.measured.metrics import parse, read_text, render, scrape

DATA = Path(__file__).resolve().parents[1] / "data"
NGRAM_TEXT = (DATA / "vllm_metrics_ngram.prom").read_text()
runner = CliRunner()


def _expected_from_get_metrics() -> Counts:
    """The same counters as read in-process through LLM.get_metrics() when the sample was captured."""
    m = json.loads((DATA / "vllm_metrics_ngram.json").read_text())["get_metrics"]
    return Counts(m["vllm:spec_decode_num_drafts"], m["vllm:spec_decode_num_draft_tokens"],
                  m["vllm:spec_decode_num_accepted_tokens"], tuple(m["vllm:spec_decode_num_accepted_tokens_per_pos"]))


def test_real_server_text_parses_to_what_get_metrics_reported():
    found = parse(NGRAM_TEXT, "sample")
    assert found.counts == _expected_from_get_metrics()
    assert found.origin == "vLLM metrics sample" and found.measured_temperature is None
    assert found.counts.k == json.loads((DATA / "vllm_metrics_ngram.json").read_text())["speculative_config"][
        "num_speculative_tokens"]


def test_names_without_total_suffix_are_read_too():
    # what LLM.get_metrics() names them, and what some exporters write
    text = NGRAM_TEXT.replace("_total{", "{").replace("_total counter", " counter")
    assert parse(text, "no-suffix").counts == _expected_from_get_metrics()


def test_engines_are_summed():
    two = NGRAM_TEXT + "\n".join(line.replace('engine="0"', 'engine="1"') for line in NGRAM_TEXT.splitlines()
                                 if line.startswith("vllm:spec_decode_") and "_created" not in line) + "\n"
    one = _expected_from_get_metrics()
    assert parse(two, "two engines").counts == Counts(2 * one.drafts, 2 * one.draft_tokens, 2 * one.accepted,
                                                      tuple(2 * c for c in one.per_position))


def test_server_without_speculation_is_named_as_such():
    with pytest.raises(InputError, match="no vllm:spec_decode_\\* counters"):
        parse((DATA / "vllm_metrics_nospec.prom").read_text(), "nospec")


@pytest.mark.parametrize("text, match", [
    ("this is { not prometheus\n", "not Prometheus text"),
    ('vllm:spec_decode_num_drafts_total{engine="0"} 3.0\n', "lacks"),
    (NGRAM_TEXT.replace('position="3"', 'position="9"'), "positions"),
    (NGRAM_TEXT + NGRAM_TEXT.replace('model_name="', 'model_name="other-'), "several models"),
])
def test_malformed_or_incomplete_text_is_refused(text, match):
    with pytest.raises(InputError, match=match):
        parse(text, "bad")


def _with_value(series: str, value: str) -> str:
    """The committed server text with one series' value replaced (a line starting with `series`)."""
    lines = NGRAM_TEXT.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith(series))
    lines[i] = lines[i].rsplit(" ", 1)[0] + " " + value
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("series", ["vllm:spec_decode_num_drafts_total{",
                                    "vllm:spec_decode_num_accepted_tokens_total{",
                                    'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name='])
@pytest.mark.parametrize("value", ["NaN", "+Inf", "-Inf", "1e300", "-31", "12.5"])
@pytest.mark.parametrize("command", [["acceptance", "from-metrics"],
                                     ["recommend", "--prompt-len", "500", "--out-len", "300", "--metrics"]])
def test_non_finite_counters_are_one_line_exit_2(series, value, command, tmp_path, capsys):
    from advisor.cli.app import main

    path = tmp_path / "bad.prom"
    path.write_text(_with_value(series, value))
    assert main([*command, str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"specadvisor: error: {path}: vllm:spec_decode_")
    assert "not a whole count as vLLM's counters keep" in err


def _total(name: str, factor: float) -> str:
    """NGRAM_TEXT with the engine-0 series `name` multiplied by `factor`."""
    line = next(line for line in NGRAM_TEXT.splitlines() if line.startswith(name + "{"))
    return _with_value(name + "{", repr(float(round(float(line.rsplit(" ", 1)[1]) * factor))))


@pytest.mark.parametrize("text, named", [
    # issue 36 #2: an accepted total a tenth of its per-position counts read as α 0.15 beside a 1.8x ENABLE
    (_total("vllm:spec_decode_num_accepted_tokens_total", 0.1), "vllm:spec_decode_num_accepted_tokens_per_pos_total"),
    (_total("vllm:spec_decode_num_draft_tokens_total", 0.1), "vllm:spec_decode_num_draft_tokens_total"),
    (_total("vllm:spec_decode_num_drafts_total", 0.1), "vllm:spec_decode_num_accepted_tokens_per_pos_total"),
])
def test_counters_that_contradict_each_other_are_refused_naming_the_series(text, named):
    with pytest.raises(InputError, match=named):
        parse(text, "m.prom")


def test_a_label_with_an_escaped_newline_stays_on_one_line():
    text = _with_value("vllm:spec_decode_num_drafts_total{", "-1").replace('model_name="', 'model_name="a\\nb', 1)
    with pytest.raises(InputError) as err:
        parse(text, "m.prom")
    assert "\n" not in str(err.value) and 'model_name="a\\nb' in str(err.value)



def test_a_position_label_that_is_not_a_number_is_named():
    with pytest.raises(InputError, match="needs a position label 0, 1, 2"):
        parse(NGRAM_TEXT.replace('position="1"', 'position="one"'), "bad")


@pytest.mark.parametrize("value", ["NaN", "5.0", "-0.5", "+Inf"])
def test_a_temperature_vllm_does_not_sample_at_is_refused(value):
    """Issue 49: `specadvisor:measured_temperature 5` in a saved scrape was read, though the flag refuses 5."""
    counts = _expected_from_get_metrics()
    with pytest.raises(InputError, match=r"not a sampling temperature vLLM takes \(0 to 2\)"):
        parse(render(counts, "run", 0.7).replace("measured_temperature 0.7", f"measured_temperature {value}"), "saved")


def test_more_draft_tokens_than_k_per_draft_are_refused():
    """Issue 49: num_draft_tokens above k x drafts printed an acceptance rate of 0.000 beside α 0.851."""
    counts = _expected_from_get_metrics()
    text = _with_value("vllm:spec_decode_num_draft_tokens_total{", repr(float(counts.k * counts.drafts + 1)))
    with pytest.raises(InputError, match=f"exceeds k = {counts.k}"):
        parse(text, "m.prom")
    with pytest.raises(InputError, match="at most k=3"):
        Counts(10, 31, 5, (3, 1, 1))


def test_save_may_not_replace_the_scrape_it_reads(tmp_path, capsys):
    """Issue 49: `from-metrics acc.prom --save acc.prom` replaced a full scrape with its four series."""
    from advisor.cli.app import main

    scrape_file = tmp_path / "acc.prom"
    scrape_file.write_text(NGRAM_TEXT)
    assert main(["acceptance", "from-metrics", str(scrape_file), "--save", str(scrape_file)]) == 2
    assert "is the scrape this reads" in capsys.readouterr().err and scrape_file.read_text() == NGRAM_TEXT
    later = tmp_path / "later.prom"
    later.write_text(NGRAM_TEXT)
    assert main(["acceptance", "from-metrics", str(scrape_file), "--second", str(later), "--save", str(later)]) == 2
    assert "is the second scrape this reads" in capsys.readouterr().err and later.read_text() == NGRAM_TEXT


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=8), st.integers(0, 5000), st.booleans())
def test_render_then_parse_round_trips(per_pos, extra_drafts, with_steps):
    per = tuple(sorted(per_pos, reverse=True))
    drafts = per[0] + extra_drafts
    counts = Counts(drafts, drafts * len(per), sum(per), per, drafts + 3 if with_steps else None)
    found = parse(render(counts, 'my "run" \\ 1', 0.7), "saved")
    assert found.counts == counts and found.measured_temperature == pytest.approx(0.7)
    assert found.origin == 'my "run" \\ 1 (from saved)'


def test_two_scrapes_give_the_delta_and_a_restart_is_caught(tmp_path):
    first = tmp_path / "a.prom"
    first.write_text(NGRAM_TEXT)
    one = _expected_from_get_metrics()
    later = Counts(one.drafts + 10, one.draft_tokens + 60, one.accepted + 5 * one.k,
                   tuple(c + 5 for c in one.per_position))
    second = tmp_path / "b.prom"
    second.write_text(render(later, "later"))
    assert scrape(str(first), str(second)).counts == Counts(10, 60, 5 * one.k, (5,) * one.k)
    with pytest.raises(InputError, match="vllm:spec_decode_num_drafts_total went down .* restarted"):
        scrape(str(second), str(first))
    with pytest.raises(InputError, match="no speculative drafts"):
        scrape(str(first), str(first))


def test_missing_file_and_closed_port_are_one_line_errors(tmp_path):
    with pytest.raises(InputError, match="no metrics file"):
        read_text(str(tmp_path / "nope.prom"))
    port = closed_port()
    result = runner.invoke(app, ["acceptance", "from-metrics", f"http://127.0.0.1:{port}"])
    assert result.exit_code != 0 and isinstance(result.exception, InputError)
    assert f"cannot reach http://127.0.0.1:{port}/metrics" in str(result.exception)


@pytest.fixture
def server():
    with serving_page(NGRAM_TEXT.encode(), at="/metrics") as url:
        yield url


def test_live_server_is_scraped_at_slash_metrics(server):
    assert scrape(server).counts == _expected_from_get_metrics()
    assert scrape(server + "/metrics").origin == f"vLLM metrics {server}/metrics"
    with pytest.raises(InputError, match="HTTP 404"):
        read_text(server + "/other")


def test_from_metrics_cli_reports_counts_rates_and_interval(server, tmp_path):
    saved = tmp_path / "saved.prom"
    result = runner.invoke(app, ["acceptance", "from-metrics", server, "--save", str(saved), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    one = _expected_from_get_metrics()
    assert (data["drafts"], data["accepted"], data["per_position_counts"]) == (one.drafts, one.accepted,
                                                                              list(one.per_position))
    assert data["acceptance_rate"] == pytest.approx(one.accepted / one.draft_tokens)
    assert data["mean_acceptance_length"] == pytest.approx(1 + one.accepted / one.drafts)
    assert data["alpha_low"] < data["alpha"] < data["alpha_high"]
    assert parse(saved.read_text(), "saved").counts == one
    text = runner.invoke(app, ["acceptance", "from-metrics", server])
    assert text.exit_code == 0 and f"--metrics {server}" in text.output and "90% interval" in text.output


def test_recommend_reads_a_server_directly(server):
    result = runner.invoke(app, ["recommend", "--prompt-len", "500", "--out-len", "300", "--method", "ngram",
                                 "--metrics", server, "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["inputs"]["acceptance_source"].startswith(f"vLLM metrics {server}")
    assert data["interval"]["alpha_low"] < data["inputs"]["alpha"] < data["interval"]["alpha_high"]


@pytest.mark.engine
def test_text_rendered_from_a_running_engine_parses_back(ngram_engine):
    import prometheus_client
    from ngram_engine import prompts

    from calibration.measure_acceptance import snapshot_counts

    ngram_engine.generate(prompts()[:3], 60)
    drafts, draft_tokens, accepted, per_pos = snapshot_counts(ngram_engine.metrics())
    found = parse(prometheus_client.generate_latest().decode(), "engine registry")
    assert found.counts == Counts(drafts, draft_tokens, accepted, per_pos)
    assert found.counts.drafts > 0


def test_25_5_a_scrape_without_per_position_counters_gives_the_mean_alpha_and_says_per_position_is_unknown(
        tmp_path):
    from advisor.model.acceptance.conventions import alpha_from_rate

    text = "\n".join(line for line in NGRAM_TEXT.splitlines() if "per_pos" not in line) + "\n"
    found = parse(text, "no per-pos")
    full = parse(NGRAM_TEXT, "full").counts
    c = found.counts
    assert (c.drafts, c.draft_tokens, c.accepted) == (full.drafts, full.draft_tokens, full.accepted)
    k = -(-c.draft_tokens // c.drafts)
    assert c.k == k and "per-position rates unknown" in found.origin
    assert f"mean α {alpha_from_rate(c.accepted / c.draft_tokens, k):.3f}" in found.origin
    path = tmp_path / "scrape.prom"
    path.write_text(text)
    out = runner.invoke(app, ["acceptance", "from-metrics", str(path)])
    # prose wraps at spaces wherever the file's path (longer under pytest-xdist) ends: read it unwrapped
    assert out.exit_code == 0 and "per-position rates unknown" in " ".join(out.output.split())
