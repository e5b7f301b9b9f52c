import pytest

from advisor.profiles.localgpu import match_profile


@pytest.mark.parametrize("driver, profile", [
    ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H100 PCIe", "h100-pcie"), ("NVIDIA A100-SXM4-40GB", "a100-40gb-sxm"),
    ("NVIDIA A10G", "a10g"), ("NVIDIA GeForce RTX 4090", "rtx-4090"), ("AMD Instinct MI300X", "mi300x"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000-blackwell"),
])
def test_driver_names_map_to_profiles(driver, profile):
    assert match_profile(driver) == profile


# --- `--gpu auto` through a simulated NVML: the device CUDA sees, its memory, loud refusals --------------------------
from simulated_nvml import GIB, fake_nvml  # noqa: E402

from advisor.errors import InputError  # noqa: E402
from advisor.profiles import localgpu, visible_gpu  # noqa: E402


# NVML's names and totals (MiB as nvidia-smi prints them) for the parts item 6 of issue #26 lists
NAMED = [("NVIDIA H20", 97871, "h20", None), ("NVIDIA GH200 480GB", 97871, "gh200", None),
         ("NVIDIA GH200 144G HBM3e", 146081, None, "gh200"), ("NVIDIA H800", 81559, "h800", None),
         ("NVIDIA H800 PCIe", 81559, None, "h100-pcie"),
         ("NVIDIA RTX 6000 Ada Generation", 49140, "rtx-6000-ada", None),
         ("NVIDIA RTX PRO 5000 Blackwell", 49152, "rtx-pro-5000-blackwell", None),
         ("NVIDIA RTX PRO 5000 Blackwell", 73728, "rtx-pro-5000-blackwell-72gb", None),
         ("NVIDIA RTX PRO 4500 Blackwell", 32768, "rtx-pro-4500-blackwell", None),
         ("NVIDIA L20", 46068, "l20", None),
         ("NVIDIA GB10", 124546, "dgx-spark", None),  # its unified pool less the OS: a total assumed, none published
         ("NVIDIA RTX PRO 5000 Blackwell", 98304, None, "rtx-pro-5000-blackwell"),
         ("NVIDIA A100-PCIE-40GB", 40960, "a100-40gb-pcie", None), ("NVIDIA H200 NVL", 143771, "h200-nvl", None)]


@pytest.mark.parametrize("name, mib, profile, nearest", NAMED)
def test_gpu_auto_picks_the_right_profile_or_refuses_naming_the_nearest(monkeypatch, name, mib, profile, nearest):
    monkeypatch.setattr(visible_gpu, "pynvml", fake_nvml({0: (name, mib * 1024**2)}))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    if profile is not None:
        assert localgpu.resolve_gpu("auto") == profile
        return
    with pytest.raises(InputError) as err:
        localgpu.resolve_gpu("auto")
    line = str(err.value)
    assert "\n" not in line and name in line and f"--gpu {nearest}" in line


def test_memory_disagreeing_with_the_named_profile_is_refused():
    """An A100 PCIe read as 40 GiB must not become the 80 GB profile its alias 'a100 pcie' names: it is the 40 GB
    profile its size names ('a100 pcie 40gb'), and a size no profile of that name has is refused."""
    assert localgpu.match_profile("NVIDIA A100-PCIE", 40 * GIB) == "a100-40gb-pcie"
    with pytest.raises(InputError, match="60 GiB.*80 GiB"):
        localgpu.match_profile("NVIDIA A100-PCIE", 60 * GIB)
    assert localgpu.match_profile("NVIDIA A100-PCIE", int(79.2 * GIB)) == "a100-80gb-pcie"


def test_gpu_auto_reads_the_device_cuda_sees(monkeypatch):
    nvml = fake_nvml({0: ("NVIDIA A10G", 23 * GIB), 1: ("NVIDIA H100 80GB HBM3", int(79.6 * GIB)),
                      2: ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", 10 * GIB)},
                     uuids={"GPU-abc": 1, "MIG-def": 2}, mig=(2,), text=True)
    monkeypatch.setattr(visible_gpu, "pynvml", nvml)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert localgpu.resolve_gpu("auto") == "a10g"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")
    assert localgpu.resolve_gpu("auto") == "h100-sxm"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-abc")
    assert localgpu.resolve_gpu("auto") == "h100-sxm"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-def")
    with pytest.raises(InputError, match="MIG slice.*--gpu h100-sxm"):
        localgpu.resolve_gpu("auto")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(InputError, match="hides every GPU"):
        localgpu.resolve_gpu("auto")


@pytest.mark.parametrize("name, mib, profile, nearest", NAMED)
def test_recommend_gpu_auto_on_a_simulated_nvml(monkeypatch, capsys, name, mib, profile, nearest):
    """The command a user runs: the profile's name in the report, or exit 2 with the refusal's one line."""
    from advisor.cli.app import main
    from advisor.profiles.catalog import load_hardware

    monkeypatch.setattr(visible_gpu, "pynvml", fake_nvml({0: (name, mib * 1024**2)}))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    code = main(["recommend", "--gpu", "auto", "--prompt-len", "2000", "--out-len", "200", "--format", "json"])
    out, err = capsys.readouterr()
    if profile is not None:
        assert code == 0, err
        assert load_hardware(profile).name in out
    else:
        assert code == 2 and err.strip().count("\n") == 0 and f"--gpu {nearest}" in err
