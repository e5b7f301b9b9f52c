"""`specadvisor acceptance measure`: bad prompt files and model folders are refused before any engine starts; a run
that measured nothing is refused as each model runner counts it (on the simulated CUDA platform: Model Runner V2
counts n-gram's fillers as drafts); and (marker `engine`) a real draft-model run on a generated test pair, per prompt
and overall, saved and fed to `recommend`, with the engine's own Prometheus text agreeing."""

import json

import pytest
from typer.testing import CliRunner

from advisor.cli.app import app
from advisor.errors import InputError
from advisor.measured.metrics import parse
from calibration.measure_acceptance import MeasureConfig, load_prompts
from simulated_cuda import cuda  # noqa: F401  (the fixture)

runner = CliRunner()


@pytest.fixture
def model_dir(tmp_path):
    d = tmp_path / "target"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"vocab_size": 100}))
    return d


def _prompts(tmp_path, lines):
    path = tmp_path / "prompts.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def test_prompt_file_lines_are_checked_with_their_numbers(tmp_path, model_dir):
    path = _prompts(tmp_path, ['{"prompt_token_ids": [1, 2, 3]}', "", '{"prompt_token_ids": [5, 500]}',
                               '{"prompt_token_ids": []}', '{"text": "x"}', "nonsense"])
    with pytest.raises(InputError, match="line 3: 'prompt_token_ids' holds token id 500, outside the vocabulary"):
        load_prompts(path, model_dir, "stop")
    good, skipped = load_prompts(path, model_dir, "skip")
    assert good == [(1, [1, 2, 3])]
    assert [(s.line, s.reason.split(" ")[0]) for s in skipped] == [(3, "'prompt_token_ids'"), (4, "empty"),
                                                                  (5, "needs"), (6, "not")]


def test_text_prompts_need_the_targets_tokenizer(tmp_path, model_dir):
    path = _prompts(tmp_path, ['{"prompt": "hello there"}'])
    with pytest.raises(InputError, match="a text prompt needs the target's tokenizer"):
        load_prompts(path, model_dir, "stop")


@pytest.mark.parametrize("args, match", [
    (["--draft", "{d}"], "not a model folder: it has no config.json"),  # the target folder lacks config.json
    (["--method", "draft_model"], "needs --draft"),
    (["--draft", "{t}", "--k", "0"], "--k must be in 1..16"),
    (["--draft", "{t}", "--max-tokens", "1"], "at least 2"),
])
def test_bad_measure_flags_fail_before_any_engine(tmp_path, model_dir, args, match):
    prompts = _prompts(tmp_path, ['{"prompt_token_ids": [1, 2, 3]}'])
    target = str(tmp_path) if "{d}" in args else str(model_dir)
    args = [a.replace("{d}", str(model_dir)).replace("{t}", str(model_dir)) for a in args]
    result = runner.invoke(app, ["acceptance", "measure", "--target", target, "--prompts", prompts, *args])
    assert result.exit_code != 0 and isinstance(result.exception, InputError)
    assert match in str(result.exception)


def test_speculative_config_is_what_vllm_takes():
    assert MeasureConfig(target="t", draft="d", k=3).speculative_config() == {
        "method": "draft_model", "model": "d", "num_speculative_tokens": 3}
    assert MeasureConfig(target="t", method="ngram", k=2, prompt_lookup_min=2, prompt_lookup_max=4
                         ).speculative_config()["prompt_lookup_max"] == 4


@pytest.mark.engine
def test_measure_a_real_pair_per_prompt_save_and_recommend(tmp_path):
    import prometheus_client
    import vllm  # noqa: F401  (imported here, vLLM's log handler binds to the real stdout, not the runner's)

    from calibration.engine.testpair import PairSpec, TinyArch, make_pair

    arch = TinyArch(vocab_size=512, hidden_size=128, num_layers=4, num_heads=4, num_kv_heads=4,
                     intermediate_size=352, max_position_embeddings=512)
    pair = make_pair(tmp_path / "pair", PairSpec(scale=0.05, draft_layers=2, arch=arch))
    lines = [json.dumps({"prompt_token_ids": [(37 * i + 11 * j) % 500 + 3 for j in range(20 + 4 * i)]})
             for i in range(4)]
    prompts = _prompts(tmp_path, [lines[0], "{broken", *lines[1:]])
    saved = tmp_path / "measured.prom"
    result = runner.invoke(app, ["acceptance", "measure", "--target", str(pair.target_dir), "--draft",
                                 str(pair.draft_dir), "--prompts", prompts, "--k", "3", "--max-tokens", "40",
                                 "--on-error", "skip", "--save", str(saved), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [p["line"] for p in data["per_prompt"]] == [1, 3, 4, 5]
    assert [s["line"] for s in data["skipped_lines"]] == [2]
    assert data["drafts"] == sum(p["drafts"] for p in data["per_prompt"])
    assert data["accepted"] == sum(p["accepted"] for p in data["per_prompt"])
    assert data["draft_tokens"] == 3 * data["drafts"]  # a draft model always proposes k
    assert 0 < data["accepted"] < data["draft_tokens"]
    assert data["alpha_low"] < data["alpha"] < data["alpha_high"]
    # the engine's own exposition text (what `vllm serve` would publish) says the same
    live = parse(prometheus_client.generate_latest().decode(), "engine registry").counts
    stored = parse(saved.read_text(), "saved")
    assert live == stored.counts and stored.measured_temperature == 0.0
    assert (live.drafts, live.accepted, list(live.per_position)) == (data["drafts"], data["accepted"],
                                                                    data["per_position_counts"])

    rec = runner.invoke(app, ["recommend", "--prompt-len", "1000", "--out-len", "300", "--metrics", str(saved),
                              "--temperature", "0.7", "--format", "json"])
    assert rec.exit_code == 0, rec.output
    out = json.loads(rec.output)
    assert out["inputs"]["acceptance_source"].startswith("vLLM measurement of")
    assert any("extrapolated" in n for n in out["inputs"]["acceptance_notes"])
    assert out["interval"]["e2e_low"] <= out["speedup"]["e2e_latency"] <= out["interval"]["e2e_high"]


def _gpu_measure(tmp_path, monkeypatch, method: str):
    """`acceptance measure` on the simulated CUDA platform, random prompts (no n-gram of them recurs), vLLM's engine
    stood in for by one whose arguments and runner come from this project's engine layer and vLLM's own rules."""
    from simulated_engine import StandInEngine

    from calibration import measure_acceptance

    target = tmp_path / "target"
    target.mkdir()
    (target / "config.json").write_text(json.dumps({"vocab_size": 256}))
    prompts = _prompts(tmp_path, ['{"prompt_token_ids": [11, 42, 97, 5]}', '{"prompt_token_ids": [7, 8, 9]}'])
    StandInEngine.opened = []
    monkeypatch.setattr(measure_acceptance, "open_engine", StandInEngine)
    cfg = MeasureConfig(target=str(target), draft=str(target) if method == "draft_model" else None, method=method,
                        k=3, max_tokens=9)
    return measure_acceptance.measure(cfg, prompts)


def test_on_a_gpu_ngram_that_matched_nothing_is_told_from_its_accepted_tokens(cuda, tmp_path, monkeypatch):
    """Model Runner V2 (vLLM's pick on a GPU) counts every request-step as a draft of k filler tokens, so the V1
    runner's "drafted nothing" never shows: none of 48 filler tokens accepted is the same refusal, in one line."""
    with pytest.raises(InputError, match=r"accepted none of 48 n-gram draft tokens over 2 prompts: no n-gram of the "
                                         r"prompts recurred \(lower --prompt-lookup-min\)"):
        _gpu_measure(tmp_path, monkeypatch, "ngram")
    from simulated_engine import StandInEngine

    assert StandInEngine.opened[0].vllm_config["model_runner"] == "v2"


def test_on_the_v1_runner_ngram_that_matched_nothing_drafted_nothing(cuda, tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_USE_V2_MODEL_RUNNER", "0")
    with pytest.raises(InputError, match="vLLM drafted nothing over 2 prompts: no n-gram of the prompts recurred"):
        _gpu_measure(tmp_path, monkeypatch, "ngram")


def test_only_ngram_on_v2_is_judged_by_its_accepted_tokens():
    """A draft model whose every token was rejected measured α = 0; so did n-gram on the V1 runner, whose counted
    drafts are matches. On V2 the counted drafts are fillers too: nothing accepted is nothing measured."""
    from advisor.measured.counts import Counts
    from calibration.measure_acceptance import refuse_empty

    rejected = Counts(drafts=16, draft_tokens=48, accepted=0, per_position=(0, 0, 0))
    refuse_empty(rejected, 2, "draft_model", filled=False)
    refuse_empty(rejected, 2, "ngram", filled=False)
    with pytest.raises(InputError, match="accepted none of 48"):
        refuse_empty(rejected, 2, "ngram", filled=True)
    refuse_empty(Counts(drafts=16, draft_tokens=48, accepted=1, per_position=(1, 0, 0)), 2, "ngram", filled=True)
