"""The test-pair generator: configs vLLM and transformers load, a draft that is exactly the target's first layers,
deterministic bytes, and a residual scale that really dials how often the draft agrees with the target."""

import json

import pytest
import torch
from safetensors.torch import load_file

from advisor.cli.app import main
from advisor.errors import InputError
from advisor.profiles.catalog import load_model
from calibration.engine.testpair import (
    ARCHS,
    LEVELS,
    PairSpec,
    TestPair,
    TinyArch,
    family_arch,
    make_pair,
    pair_family,
    target_weights,
)

SMALL = TinyArch(vocab_size=512, hidden_size=64, num_layers=4, num_heads=4, num_kv_heads=2, intermediate_size=128)
SMALL_QWEN2 = TinyArch(family="qwen2", vocab_size=512, hidden_size=80, num_layers=5, num_heads=5, num_kv_heads=1,
                       intermediate_size=224)
SMALL_MOE = TinyArch(family="mixtral", vocab_size=512, hidden_size=64, num_layers=4, num_heads=4, num_kv_heads=2,
                     intermediate_size=32, num_experts=8, experts_per_token=2)


def test_pair_on_disk_is_a_llama_target_and_its_first_layers(tmp_path):
    pair = make_pair(tmp_path, PairSpec(scale=0.05, draft_layers=2, arch=SMALL))
    target, draft = load_file(pair.target_dir / "model.safetensors"), load_file(pair.draft_dir / "model.safetensors")
    assert json.loads((pair.target_dir / "config.json").read_text())["num_hidden_layers"] == 4
    assert json.loads((pair.draft_dir / "config.json").read_text())["num_hidden_layers"] == 2
    assert set(draft) < set(target)
    assert not any(k.startswith(("model.layers.2.", "model.layers.3.")) for k in draft)
    for name, tensor in draft.items():  # shared embeddings, head, norms and layers: bit-identical
        assert target[name].equal(tensor), name
    # advisor's own ModelSpec reads the directories (what `recommend --target DIR` and validate do)
    assert load_model(str(pair.draft_dir)).num_layers == 2
    assert load_model(str(pair.target_dir)).vocab_size == 512
    assert json.loads((tmp_path / "pair.json").read_text())["scale"] == 0.05


def test_qwen2_family_is_a_deeper_wider_grouped_target_with_qkv_biases(tmp_path):
    pair = make_pair(tmp_path, PairSpec(scale=0.05, draft_layers=2, arch=SMALL_QWEN2))
    config = json.loads((pair.target_dir / "config.json").read_text())
    assert (config["architectures"], config["model_type"], config["rope_theta"]) == (["Qwen2ForCausalLM"], "qwen2", 1e6)
    target = load_file(pair.target_dir / "model.safetensors")
    assert target["model.layers.0.self_attn.k_proj.bias"].shape == (16,)  # one KV head of 80 / 5 = 16
    assert load_model(str(pair.target_dir)).num_kv_heads == 1
    llama, llama_draft = ARCHS["llama"]
    qwen2, qwen2_draft = family_arch("qwen2")
    assert qwen2.num_layers > llama.num_layers and qwen2.hidden_size > llama.hidden_size
    assert qwen2.num_heads // qwen2.num_kv_heads > llama.num_heads // llama.num_kv_heads
    assert (llama_draft, qwen2_draft) == (1, 2)
    assert family_arch("qwen2", 3) == (qwen2, 3)  # a given draft depth wins over the family's default
    with pytest.raises(InputError, match="--family must be one of llama, qwen2"):
        family_arch("gpt2")


def test_moe_family_is_a_sparse_mixtral_whose_router_spreads_tokens_over_the_experts(tmp_path):
    pair = make_pair(tmp_path, PairSpec(scale=0.05, draft_layers=2, arch=SMALL_MOE))
    config = json.loads((pair.target_dir / "config.json").read_text())
    assert (config["architectures"], config["num_local_experts"], config["num_experts_per_tok"]) == \
        (["MixtralForCausalLM"], 8, 2)
    spec = load_model(str(pair.target_dir))  # the advisor reads it as the sparse MoE it is
    assert (spec.num_experts, spec.experts_per_token, spec.intermediate_size) == (8, 2, 32)
    target = load_file(pair.target_dir / "model.safetensors")
    assert target["model.layers.0.block_sparse_moe.experts.7.w2.weight"].shape == (64, 32)
    # a real initialisation's router: logits of std ~1 over unit-RMS states, so 200 random tokens' top-2 reach
    # every expert, as E·(1 - (1 - k/E)^N) expects (vLLM's dummy weights give logits of ~1e-5)
    states = torch.randn(200, 64)
    logits = states @ target["model.layers.0.block_sparse_moe.gate.weight"].float().T
    assert 0.7 < float(logits.std()) < 1.4
    assert len(set(logits.topk(2).indices.flatten().tolist())) == 8
    moe, layers = family_arch(pair_family("llama", moe=True))
    assert (moe.family, moe.num_experts, moe.experts_per_token, layers) == ("mixtral", 32, 4, 2)
    with pytest.raises(InputError, match="--moe writes a mixtral pair"):
        pair_family("qwen2", moe=True)
    with pytest.raises(InputError, match="MoE families need"):
        TinyArch(family="llama", num_experts=8, experts_per_token=2)


@pytest.mark.parametrize("arch", [SMALL, SMALL_MOE], ids=["llama", "moe"])
def test_residual_branches_carry_the_scale(arch):
    small, large = target_weights(PairSpec(0.01, arch=arch)), target_weights(PairSpec(0.1, arch=arch))
    for name in small:
        ratio = float(large[name].float().std() / small[name].float().std()) if small[name].float().std() > 0 else 1.0
        expected = 10.0 if name.endswith(("o_proj.weight", "down_proj.weight", "w2.weight")) else 1.0
        assert ratio == pytest.approx(expected, rel=0.02), name


def test_same_seed_same_weights_other_seed_other_weights():
    a, b = target_weights(PairSpec(0.05, seed=3, arch=SMALL)), target_weights(PairSpec(0.05, seed=3, arch=SMALL))
    c = target_weights(PairSpec(0.05, seed=4, arch=SMALL))
    assert all(a[n].equal(b[n]) for n in a)
    assert not a["lm_head.weight"].equal(c["lm_head.weight"])


def test_refuses_to_overwrite_and_bad_specs(tmp_path):
    make_pair(tmp_path, PairSpec(0.05, arch=SMALL))
    with pytest.raises(InputError, match="already exists"):
        make_pair(tmp_path, PairSpec(0.05, arch=SMALL))
    with pytest.raises(InputError, match="draft-layers"):
        PairSpec(0.05, draft_layers=9)
    with pytest.raises(InputError, match="scale"):
        PairSpec(-1.0)


def test_levels_are_ordered_from_low_to_high_acceptance():
    scales, rates = list(LEVELS), list(LEVELS.values())
    assert scales == sorted(scales, reverse=True)  # a smaller residual scale means higher acceptance
    assert rates == sorted(rates) and rates[0] < 0.2 and rates[-1] > 0.9  # spans ~0.1 to ~0.9


def greedy_agreement(pair: TestPair, prompts: list[list[int]], out_len: int) -> float:
    """Share of positions where the draft's greedy token equals the target's, along the target's own greedy
    continuation of each prompt (teacher forcing, in float32 with transformers). Under greedy rejection sampling
    this is the per-token acceptance α the engine should see, up to bf16 numerics. A check that does not need
    vLLM; the engine's own counters remain the measurement."""
    from transformers import (
        AutoModelForCausalLM,  # ~10 s to import: only this test pays for it
    )

    target = AutoModelForCausalLM.from_pretrained(pair.target_dir, torch_dtype=torch.float32).eval()
    draft = AutoModelForCausalLM.from_pretrained(pair.draft_dir, torch_dtype=torch.float32).eval()
    agree = total = 0
    with torch.no_grad():
        for prompt in prompts:
            ids = torch.tensor([prompt])
            seq = target.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=out_len, do_sample=False,
                                  min_new_tokens=out_len, pad_token_id=0)
            n = len(prompt)
            want = target(seq).logits[0, n - 1:-1].argmax(-1)
            got = draft(seq).logits[0, n - 1:-1].argmax(-1)
            agree += int((want == got).sum())
            total += want.numel()
    return agree / total


@pytest.mark.parametrize("arch", [SMALL, SMALL_QWEN2, SMALL_MOE], ids=["llama", "qwen2", "moe"])
def test_agreement_falls_as_the_scale_grows(tmp_path, arch):
    """Teacher-forced greedy agreement of draft and target (transformers, float32, no vLLM) is what greedy
    rejection sampling accepts: it must fall from near 1 to low as the target's extra layers grow louder."""
    rng_prompts = [[(37 * i + 11 * j) % 500 + 3 for j in range(24)] for i in range(3)]
    agreement = [greedy_agreement(make_pair(tmp_path / f"s{s}", PairSpec(s, arch=arch)), rng_prompts, 24)
                 for s in (0.002, 0.1, 1.0)]
    assert agreement[0] > 0.9
    assert agreement[0] > agreement[1] > agreement[2]
    assert agreement[2] < 0.5


def test_cli_make_test_pair(tmp_path, capsys):
    assert main(["make-test-pair", "--out", str(tmp_path / "p"), "--scale", "0.05", "--draft-layers", "2"]) == 0
    printed = capsys.readouterr().out
    assert str(tmp_path / "p" / "target") in printed and str(tmp_path / "p" / "draft") in printed
    assert main(["make-test-pair", "--out", str(tmp_path / "p"), "--scale", "0.05"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["make-test-pair", "--out", str(tmp_path / "q"), "--scale", "0.05", "--family", "gpt2"]) == 2
    assert capsys.readouterr().err.strip() == \
        "specadvisor: error: --family must be one of llama, qwen2, mixtral, mixtral-wide, got 'gpt2'"
    assert main(["make-test-pair", "--out", str(tmp_path / "m"), "--scale", "0.05", "--moe", "--family", "qwen2"]) == 2
    assert capsys.readouterr().err.strip().startswith("specadvisor: error: --moe writes a mixtral pair")


def test_the_second_moe_shape_holds_the_same_expert_weights_as_few_big_experts():
    """`--family mixtral-wide`: issue 46's second MoE shape, 8 experts top-2 beside the 32 experts top-4 of --moe,
    the same expert weights per layer, so a validation of both compares routing and not size."""
    many, many_draft = family_arch("mixtral")
    few, few_draft = family_arch("mixtral-wide")
    assert (few.num_experts, few.experts_per_token) == (8, 2) and (many.num_experts, many.experts_per_token) == (32, 4)
    assert few.num_experts * few.intermediate_size == many.num_experts * many.intermediate_size
    assert few.experts_per_token * few.intermediate_size == 2 * many.experts_per_token * many.intermediate_size
    assert (few.num_layers, few.hidden_size, few_draft) == (many.num_layers, many.hidden_size, many_draft)
    assert pair_family("mixtral-wide", moe=False) == "mixtral-wide"
