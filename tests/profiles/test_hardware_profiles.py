"""The GPU datasheets: every tensor peak is dense (NVIDIA quotes most with 2:4 sparsity), per GPU, and the Blackwell
parts carry an FP4 peak. Expected values are the datasheets' own figures, divided out by hand below."""

import pytest

from advisor.profiles.catalog import load_hardware, names

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
