"""`--gpu auto`: which GPU is this? Asked of NVML (the `nvml` extra), matched to a datasheet profile by name."""

from __future__ import annotations

import difflib

from advisor.errors import InputError

try:
    import pynvml  # the `nvml` extra: only `--gpu auto` needs it
except ImportError:
    pynvml = None
from advisor.profiles.catalog import load_hardware, names


def local_gpu_name() -> str:
    """The driver's name for GPU 0, e.g. 'NVIDIA H100 80GB HBM3'."""
    if pynvml is None:
        raise InputError("--gpu auto needs pynvml: pip install 'specadvisor[nvml]'")
    try:
        pynvml.nvmlInit()
        name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
    except pynvml.NVMLError as exc:
        raise InputError(f"--gpu auto: NVML sees no GPU ({exc}); name one with --gpu") from None
    return name.decode() if isinstance(name, bytes) else name


def match_profile(driver_name: str) -> str:
    """The driver's name, less vendor words, as a profile name or alias, dropping trailing words (memory type, form
    factor) until one matches; failing that, the profile whose display name is closest."""
    words = [w for w in driver_name.lower().replace("-", " ").split() if w not in ("nvidia", "geforce", "amd", "instinct")]
    for end in range(len(words), 0, -1):
        try:
            return load_hardware(" ".join(words[:end])).slug
        except InputError:
            continue
    displays = {load_hardware(slug).name.lower(): slug for slug in names("hardware")}
    close = difflib.get_close_matches(driver_name.lower(), list(displays), n=1, cutoff=0.6)
    if not close:
        raise InputError(f"--gpu auto found {driver_name!r}, which matches no profile; name one with --gpu")
    return displays[close[0]]


def resolve_gpu(name: str) -> str:
    return match_profile(local_gpu_name()) if name == "auto" else name
