"""`recommend`, `--method compare`, `plot`, `review` and `acceptance`-fed recommendations with the 2026 drafters
(DFlash, DSpark, P-EAGLE) on the shipped heads, through the CLI; and a config directory read by its layer kinds."""

import json
import shutil
from pathlib import Path

import pytest

from advisor.cli.app import main
from advisor.profiles.catalog import load_model, profiles_dir
from advisor.vllm.drafting import trained_length

ROOT = Path(__file__).resolve().parents[2]
ARGS = ["--gpu", "h100-sxm", "--prompt-len", "1000", "--out-len", "500"]


def recommend(capsys, *args: str, where: tuple[str, ...] = ()) -> tuple[int, str, str]:
    code = main(["recommend", *args, *(where or ARGS)])
    out = capsys.readouterr()
    return code, out.out, out.err


def paste(report: dict) -> dict:
    return report["vllm"]["speculative_config"]


# every shipped DFlash and DSpark head on the target it was trained for
HEADS = sorted(p.stem for p in (profiles_dir() / "models").glob("*.json") if p.stem.startswith(("dflash-", "dspark-")))


@pytest.mark.parametrize("head", HEADS)
def test_recommend_prices_every_shipped_block_head(capsys, head):
    spec = load_model(head)
    big = load_model(spec.trained_for).total_params > 1e11  # GLM-5.2, Kimi-K3: eight B300s
    where = ("--gpu", "b300", "--num-gpus", "8", "--prompt-len", "1000", "--out-len", "500") if big else ()
    code, out, err = recommend(capsys, "--target", spec.trained_for, "--method", spec.block.method, "--draft", head,
                               "--format", "json", where=where)
    assert code == 0, err
    r = json.loads(out)
    config = paste(r)
    assert config["method"] == spec.block.method and config["model"] == spec.hf_id
    assert "num_speculative_tokens_per_batch_size" not in config  # they draft their configured k at every step
    assert r["best_k"] <= trained_length(spec.block.method, spec.block.block_size)


def test_the_default_head_is_the_targets_own(capsys):
    code, out, err = recommend(capsys, "--target", "qwen3.6-27b", "--method", "dspark", "--format", "json")
    assert code == 0, err
    assert paste(json.loads(out))["model"] == load_model("dspark-qwen3.6-27b").hf_id
    # no published checkpoint: said before any number
    assert any("must first train" in w for w in json.loads(out)["warnings"])


def test_p_eagle_is_eagle3_with_parallel_drafting_and_its_missing_token_said(capsys):
    code, out, err = recommend(capsys, "--target", "qwen3-8b", "--method", "eagle3", "--draft", "peagle-qwen3-8b",
                               "--format", "json")
    assert code == 0, err
    r = json.loads(out)
    assert paste(r)["parallel_drafting"] is True and paste(r)["method"] == "eagle3"
    assert any("placeholder token" in w for w in r["warnings"]) and any("must first train" in w for w in r["warnings"])
    plain = json.loads(recommend(capsys, "--target", "qwen3-8b", "--method", "eagle3", "--format", "json")[1])
    assert paste(plain)["model"] == "AngelSlim/Qwen3-8B_eagle3" and not plain["warnings"]
    assert r["best_k"] > plain["best_k"]  # one pass at any k: it pays to draft further


def test_compare_lists_them_beside_the_others(capsys):
    code, out, err = recommend(capsys, "--target", "qwen3-8b", "--method", "compare", "--format", "json")
    assert code == 0, err
    rows = {(row["method"], row["draft"]) for row in json.loads(out)["comparison"]["rows"]}
    assert {("dflash", "dflash-qwen3-8b-b16"), ("dspark", "dspark-qwen3-8b-b7"), ("eagle3", "peagle-qwen3-8b"),
            ("eagle3", "eagle3-qwen3-8b"), ("ngram_gpu", None)} <= rows


@pytest.mark.parametrize("args, words", [
    (["--target", "llama-3.1-8b-instruct", "--method", "dflash"], "no DFlash head profile matches"),
    (["--target", "qwen3-8b", "--method", "dflash", "--draft", "eagle3-qwen3-8b"], "needs a dflash head"),
    (["--target", "qwen3-8b", "--method", "dspark", "--draft", "dflash-qwen3-8b-b16"], "use --method dflash"),
    (["--target", "qwen3.6-27b", "--method", "dflash", "--draft", "dflash-qwen3-8b-b16"], "cannot load it here"),
    (["--target", "deepseek-v4.1-flash", "--method", "dspark", "--num-gpus", "8"], "own DSpark stages"),
])
def test_what_vllm_would_not_load_is_one_line(capsys, args, words):
    code, _, err = recommend(capsys, *args)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err


def test_a_measured_acceptance_feeds_a_block_drafter(capsys):
    """vLLM's spec-decode counters name no method: a DFlash server's /metrics read as any drafter's."""
    code, out, err = recommend(capsys, "--target", "qwen3-8b", "--method", "dflash", "--metrics",
                               str(ROOT / "tests/data/vllm_metrics_ngram.prom"), "--format", "json")
    assert code == 0, err
    assert "metrics" in json.loads(out)["inputs"]["acceptance_source"].lower()


def test_plot_and_review_take_them(tmp_path, capsys):
    assert main(["plot", "alpha", "--target", "qwen3-8b", "--method", "dflash", *ARGS, "--out",
                 str(tmp_path / "p.png")]) == 0
    assert (tmp_path / "p.png").stat().st_size > 0
    (tmp_path / "plan.toml").write_text(
        'title = "DFlash on Qwen3-8B"\n[[workload]]\nname = "code"\nrate = 2.0\nprompt = { mean = 1000, p90 = 2000 }\n'
        'output = { mean = 400, p90 = 800 }\nacceptance = { task = "code" }\nslo = { ttft_ms = 2000, tpot_ms = 30 }\n'
        '[[deployment]]\nname = "h100"\ngpu = "h100-sxm"\ncount = 2\ntarget = "qwen3-8b"\n'
        'draft = "dflash-qwen3-8b-b16"\nmethod = "dflash"\n')
    capsys.readouterr()
    code = main(["review", str(tmp_path / "plan.toml"), "--out", str(tmp_path / "out")])
    assert code == 0, capsys.readouterr().err
    assert "dflash" in (tmp_path / "out" / "review.md").read_text()


def test_a_config_directory_read_by_its_layer_kinds(tmp_path, capsys):
    folder = tmp_path / "acme-hybrid"
    folder.mkdir()
    config = json.loads((profiles_dir() / "models" / "nemotron-3-nano-30b-a3b.json").read_text())
    config.pop("_specadvisor")
    config.update(model_type="acme_hybrid", architectures=["AcmeHybridForCausalLM"])
    (folder / "config.json").write_text(json.dumps(config))
    code, out, err = recommend(capsys, "--target", str(folder), "--method", "ngram_gpu", "--format", "json")
    assert code == 0, err
    config["hybrid_override_pattern"] = config["hybrid_override_pattern"].replace("*", "R", 1)
    (folder / "config.json").write_text(json.dumps(config))
    code, out, err = recommend(capsys, "--target", str(folder), "--method", "ngram_gpu")
    assert code == 2 and "layer kind 'R' (hybrid_override_pattern[" in err and len(err.strip().splitlines()) == 1
    shutil.rmtree(folder)
