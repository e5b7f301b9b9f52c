"""The drafter catalog: every drafter cites a published acceptance, and a resolved pair finds its entry."""

import json
from dataclasses import replace

import pytest

from advisor.errors import InputError
from advisor.model.acceptance.published import Kind, Spread
from advisor.profiles.catalog import load_model, profiles_dir
from advisor.profiles.drafters import all_kinds, kind_for, long_context_floor, match


def test_the_catalog_lists_at_least_15_drafters_each_with_a_cited_acceptance():
    drafters = [d for kind in all_kinds() for d in kind.drafters]
    assert len(drafters) >= 15
    assert len({d.name for d in drafters}) == len(drafters)
    for d in drafters:
        assert d.figures, d.name
        for f in d.figures:
            assert f.source and f.tag in "PAD" and 1.0 <= f.al <= f.k + 1, d.name


def test_every_kind_covers_the_methods_it_prices():
    covered = {m for kind in all_kinds() for m in kind.methods}
    assert covered == {"eagle3", "eagle", "mtp", "draft_model", "ngram", "ngram_gpu", "suffix", "dflash", "dspark"}
    assert kind_for("eagle3", parallel_drafting=True).name == "peagle" and kind_for("eagle3").name == "eagle3"
    with pytest.raises(InputError, match="no drafter kind"):
        kind_for("medusa")


def test_a_head_is_matched_by_its_hf_id_alias_or_a_directorys_name(tmp_path):
    kind = kind_for("eagle3")
    head = load_model("eagle3-llama3.3-instruct-70b")
    assert match(kind, head, load_model("llama-3.3-70b-instruct")) is None  # no published figure for this head
    for name in ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "eagle3-llama3.1-8b",
                 str(tmp_path / "EAGLE3-LLaMA3.1-Instruct-8B")):
        found = match(kind, replace(head, name="x", hf_id=name), load_model("llama-3.1-8b-instruct"))
        assert found is not None and found.name == "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", name


def test_mtp_layers_are_matched_by_their_target():
    kind = kind_for("mtp")
    found = match(kind, None, load_model("deepseek-v3"))
    assert found is not None and found.name == "DeepSeek-V3 MTP"
    assert match(kind, None, load_model("qwen3-next-80b-a3b-instruct")) is None


def test_text_lookups_have_no_drafter_to_match():
    assert match(kind_for("ngram"), None, load_model("llama-3.1-8b-instruct")) is None


def test_a_kind_needs_a_spread_for_every_task():
    with pytest.raises(InputError, match="no spread for"):
        Kind(name="x", label="x", methods=("x",), conditional=(1.0,), temperature_slope=0.0, temperature_basis="",
             min_half_width=0.1, spreads={"general": Spread(2.0, 2.5, "s")}, like={})


def test_the_catalog_files_are_the_ones_read():
    files = sorted(p.stem for p in (profiles_dir() / "drafters").glob("*.toml"))
    assert files == sorted([*(k.name for k in all_kinds()), "temperature", "context"])
    assert json.loads(json.dumps([k.label for k in all_kinds()]))  # labels are plain text


def test_every_kind_says_how_long_a_context_its_figures_reached_and_the_floor_past_it_is_read():
    # issue 46: the longest context a published figure of each kind was measured at, with its source
    reached = {k.name: k.measured_context for k in all_kinds()}
    assert reached["mtp"] > 65_536 and all(n >= 2048 for n in reached.values())
    assert all(k.measured_context_source for k in all_kinds())
    rate, context, source = long_context_floor()
    assert 0.0 < rate < 0.1 and context == 20_000 and "#52258" in source
