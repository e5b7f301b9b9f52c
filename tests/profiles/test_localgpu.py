import pytest

from advisor.profiles.localgpu import match_profile


@pytest.mark.parametrize("driver, profile", [
    ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H100 PCIe", "h100-pcie"), ("NVIDIA A100-SXM4-40GB", "a100-40gb-sxm"),
    ("NVIDIA A10G", "a10g"), ("NVIDIA GeForce RTX 4090", "rtx-4090"), ("AMD Instinct MI300X", "mi300x"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000-blackwell"),
])
def test_driver_names_map_to_profiles(driver, profile):
    assert match_profile(driver) == profile
