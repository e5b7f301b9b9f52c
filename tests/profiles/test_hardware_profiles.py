"""The GPU datasheets: every tensor peak is dense (NVIDIA quotes most with 2:4 sparsity), per GPU, and the Blackwell
parts carry an FP4 peak. Expected values are the datasheets' own figures, divided out by hand below. A figure no
source states is marked derived, with its arithmetic (checked here), and is never also claimed from a page."""

import tomllib

import pytest

from advisor.errors import InputError
from advisor.model.gpu.hardware import ARCHITECTURES, FIGURES, Hardware
from advisor.profiles.catalog import load_hardware, names, profiles_dir

BLACKWELL = ["b200", "b300", "gb200", "gb300", "rtx-pro-6000-blackwell", "rtx-5090"]
NO_FP4 = ["h100-sxm", "h200", "l40s", "rtx-4090", "a100-80gb-sxm", "mi300x"]


@pytest.mark.parametrize("slug, fp4, fp8, bf16", [
    # HGX B200, 8 GPUs, with sparsity: FP4 144, FP8 72, BF16 36 PFLOPS -> / 8 GPUs / 2 for dense
    ("b200", 144_000 / 8 / 2, 72_000 / 8 / 2, 36_000 / 8 / 2),
    # HGX B300, 8 GPUs: FP4 108 PFLOPS dense (144 sparse); FP8 72 and BF16 36 PFLOPS sparse
    ("b300", 108_000 / 8, 72_000 / 8 / 2, 36_000 / 8 / 2),
    # GB200 superchip, 2 GPUs, with sparsity: FP4 40, FP8 20, BF16 10 PFLOPS -> / 2 GPUs / 2 for dense
    ("gb200", 40_000 / 2 / 2, 20_000 / 2 / 2, 10_000 / 2 / 2),
    # GB300 NVL72, 72 GPUs: FP4 1,080 PFLOPS dense (1,440 sparse); FP8 720 and BF16 360 PFLOPS sparse
    ("gb300", 1_080_000 / 72, 720_000 / 72 / 2, 360_000 / 72 / 2),
    # RTX PRO 6000: 188 SMs x 4096 (FP4) / 2048 (FP8) / 1024 (BF16) dense FLOP per clock x 2.617 GHz
    ("rtx-pro-6000-blackwell", 188 * 4096 * 2.617e-3, 188 * 2048 * 2.617e-3, 188 * 1024 * 2.617e-3),
    # RTX 5090: 3,352 sparse FP4 'AI TOPS' / 2; FP8 419 and BF16 209.5 (FP32 accumulate) from the whitepaper
    ("rtx-5090", 3352 / 2, 419, 209.5),
])
def test_blackwell_dense_peaks_are_the_datasheet_divided_per_gpu(slug, fp4, fp8, bf16):
    hw = load_hardware(slug)
    assert hw.fp4_tflops == pytest.approx(fp4, rel=1e-3)
    assert hw.fp8_tflops == pytest.approx(fp8, rel=1e-3)
    assert hw.bf16_tflops == pytest.approx(bf16, rel=1e-3)


def test_only_blackwell_has_fp4_tensor_cores():
    assert all(load_hardware(slug).fp4_tflops for slug in BLACKWELL)
    assert not any(load_hardware(slug).fp4_tflops for slug in NO_FP4)


@pytest.mark.parametrize("slug", names("hardware"))
def test_peaks_are_dense_and_consistent(slug):
    """A sparse figure next to dense ones shows up as a narrower type running more than twice as fast as the next
    wider one (5% slack for datasheet rounding: the L40S lists 362.05 BF16 and 733 FP8); every profile with an fp8 or
    fp4 peak says in its notes that its figures are dense."""
    hw = load_hardware(slug)
    if hw.fp8_tflops:
        assert hw.bf16_tflops <= hw.fp8_tflops <= 2 * 1.05 * hw.bf16_tflops, slug
    if hw.fp4_tflops:  # the RTX 5090's FP4 runs at 4x its FP32-accumulate FP8 (GeForce halves the latter)
        assert hw.fp8_tflops and hw.fp8_tflops <= hw.fp4_tflops <= 4 * hw.fp8_tflops, slug
    if hw.fp8_tflops or hw.fp4_tflops:
        assert "dense" in hw.notes.lower() and "sparsity" in hw.notes.lower(), slug


@pytest.mark.parametrize("slug, memory_gib, bandwidth_gbs", [
    ("b300", 2304 / 8, 8000),  # DGX B300: 2.3 TB for 8 GPUs
    ("gb200", 372 / 2, 16_000 / 2),  # superchip: 372 GB and 16 TB/s for 2 GPUs
    ("gb300", 288, 576_000 / 72),  # NVL72: 576 TB/s for 72 GPUs
])
def test_new_blackwell_memory_is_per_gpu(slug, memory_gib, bandwidth_gbs):
    hw = load_hardware(slug)
    assert hw.memory_gib == pytest.approx(memory_gib)
    assert hw.memory_bandwidth_gbs == pytest.approx(bandwidth_gbs)
    assert hw.interconnect_gbs == 1800 / 2  # NVLink 5: 1.8 TB/s bidirectional per GPU
    assert hw.source.startswith("https://")


# Issue 39's GPUs: (slug, an alias users type, architecture, family)
NEW_GPUS = [("mi355x", "AMD MI355X", "gfx950", "cdna4"), ("mi350x", "instinct mi350x", "gfx950", "cdna4"),
            ("h20", "nvidia h20", "sm_90", "hopper"), ("l20", "NVIDIA L20", "sm_89", "ada"),
            ("rtx-pro-5000-blackwell", "rtx pro 5000", "sm_120", "blackwell-client"),
            ("rtx-pro-5000-blackwell-72gb", "RTX PRO 5000 72GB", "sm_120", "blackwell-client"),
            ("rtx-pro-4500-blackwell", "rtx pro 4500", "sm_120", "blackwell-client"),
            ("dgx-spark", "GB10", "sm_121", "blackwell-client")]


@pytest.mark.parametrize("slug, alias, architecture, family", NEW_GPUS)
def test_new_gpus_resolve_by_alias_cite_every_figure_and_name_their_architecture(slug, alias, architecture, family):
    hw = load_hardware(alias)
    assert (hw.slug, hw.architecture, hw.family) == (slug, architecture, family)
    stated = {name for name in FIGURES if getattr(hw, name) is not None}
    cited = dict(hw.cited)
    # third-party pages with gaps: every stated figure is either cited (with its page) or derived (with how)
    assert stated == set(cited) | {d.figure for d in hw.derived} and not set(cited) & {d.figure for d in hw.derived}
    assert all("https://" in text for text in cited.values())


def _basis(hw, basis) -> float:
    """A derivation's basis as a number: itself, a figure of `hw`, or another profile's ("slug.field")."""
    if not isinstance(basis, str):
        return float(basis)
    slug, _, field = basis.rpartition(".")
    return float(getattr(load_hardware(slug) if slug else hw, field))


@pytest.mark.parametrize("slug", names("hardware"))
def test_every_derived_figure_is_its_basis_times_its_factor(slug):
    hw = load_hardware(slug)
    for how in hw.derived:
        assert getattr(hw, how.figure) == pytest.approx(_basis(hw, how.basis) * how.factor, rel=1e-3), how
        if how.borrowed:  # borrowed from a profile that states the figure, or derives it without borrowing back
            lender = load_hardware(how.borrowed).derivation(how.basis.rpartition(".")[2])
            assert lender is None or lender.borrowed != slug


def test_cdna4_rates_follow_the_per_clock_arithmetic_and_the_mi350x_trades_8_percent():
    mi355x, mi350x, mi300x = (load_hardware(s) for s in ("mi355x", "mi350x", "mi300x"))
    assert mi355x.fp8_tflops == pytest.approx(256 * 8192 * 2.4e-3, rel=1e-3)  # CUs x FLOP/CU/clock x GHz
    assert mi300x.fp8_tflops == pytest.approx(304 * 4096 * 2.1e-3, rel=1e-3)  # the same arithmetic, CDNA3's rate
    assert mi350x.fp8_tflops / mi355x.fp8_tflops == pytest.approx(0.92, abs=0.01)  # the Register: "about 8 percent"
    for hw in (mi355x, mi350x):
        assert (hw.bf16_tflops, hw.fp4_tflops) == pytest.approx((hw.fp8_tflops / 2, hw.fp8_tflops * 2), rel=1e-3)
        assert {d.figure for d in hw.derived} >= {"bf16_tflops", "fp8_tflops", "fp4_tflops"}  # none is stated
    assert mi350x.derivation("interconnect_gbs").borrowed == "mi355x"


def test_fp4_tensor_cores_on_cdna4_and_client_blackwell_but_not_on_hopper_or_ada():
    assert all(load_hardware(s).fp4_tflops for s in ("mi355x", "mi350x", "rtx-pro-5000-blackwell",
                                                       "rtx-pro-4500-blackwell", "dgx-spark"))
    assert not any(load_hardware(s).fp4_tflops for s in ("h20", "l20"))


def test_dgx_spark_is_unified_lpddr_and_says_which_rates_are_derived():
    spark = load_hardware("dgx spark")
    assert spark.unified_memory and spark.memory_kind == "LPDDR" and not spark.gddr
    assert spark.derivation("fp4_tflops").basis == 1000  # 1 PFLOP FP4 with sparsity: the one figure stated
    assert dict(spark.cited)["memory_bandwidth_gbs"].startswith("273 GB/s")
    assert not any(load_hardware(s).unified_memory for s in names("hardware") if s != "dgx-spark")


def _profile(**changes) -> dict:
    """An issue-39 profile's TOML as read, with changes."""
    data = tomllib.loads((profiles_dir() / "hardware" / "h20.toml").read_text())
    return {**data, **changes}


@pytest.mark.parametrize("changes, error", [
    # a figure claimed from a page while it is marked derived
    ({"cited": {**_profile()["cited"], "bf16_tflops": "148 TFLOPS: https://example.com"}},
     "bf16_tflops is derived and cited"),
    # a stated figure neither cited nor derived, in a profile that cites
    ({"cited": {k: v for k, v in _profile()["cited"].items() if k != "tdp_watts"}}, "tdp_watts is neither cited nor"),
    ({"cited": {**_profile()["cited"], "tdp_watts": "400 W, a page somewhere"}}, "names no https:// page"),
    ({"derived": {**_profile()["derived"], "fp4_tflops": {"basis": 1.0, "factor": 2.0, "how": "x"}}},
     "fp4_tflops is derived or cited but not stated"),
    ({"derived": {"bf16_tflops": {"basis": 148, "factor": 1.0}}}, "takes basis, factor and how"),
    ({"derived": {"bf16_tflops": {"basis": "sm_count", "factor": 1.0, "how": "x"}}}, "basis must be"),
    ({"architecture": "sm_200"}, "architecture must be one of"),
])
def test_a_profile_claiming_a_figure_both_ways_or_neither_is_refused(changes, error):
    with pytest.raises(InputError, match=error):
        Hardware.from_dict("h20", _profile(**changes))


def test_every_shipped_profile_names_an_architecture():
    assert all(load_hardware(s).architecture in ARCHITECTURES for s in names("hardware"))
    data = _profile()
    del data["architecture"]
    with pytest.raises(InputError, match="missing keys \\['architecture'\\]"):
        Hardware.from_dict("h20", data)
