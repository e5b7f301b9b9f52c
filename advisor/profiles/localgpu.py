"""`--gpu auto`: which GPU is this? Asked of NVML (advisor/profiles/visible_gpu.py: the GPU vLLM will use), matched
to a datasheet profile by name and checked against its memory.

A match is either exact (the driver's name, less vendor words, is a profile name or alias) or exact after dropping
only words that never tell two profiles apart (memory size and type, "Generation"); and the profile's memory must
agree with what NVML reports. Anything else (a form factor dropped, H200 NVL read as H200 SXM; a 40 GB card read as
the 80 GB one; a MIG slice) is refused in one line naming the nearest profile, never picked silently.
"""

from __future__ import annotations

import difflib
import re

from advisor.errors import InputError
from advisor.profiles import visible_gpu
from advisor.profiles.catalog import load_hardware, names

VENDOR_WORDS = ("nvidia", "geforce", "amd", "instinct")
# Words a driver name may carry beyond a profile's name without changing which part it is: memory size and type.
NEUTRAL_WORD = re.compile(r"^(\d+(\.\d+)?g(b)?|hbm\d?e?|gddr\d+x?|generation)$")
MEMORY_TOLERANCE = 0.08  # NVML's total (less the driver's reserve) vs the datasheet's GiB: 80 GB H100 = 79.6 GiB


def local_gpu() -> visible_gpu.VisibleGpu:
    """The visible GPU's name and memory, from NVML."""
    try:
        gpu = visible_gpu.read()
    except visible_gpu.NvmlError as exc:
        raise InputError(f"--gpu auto: NVML sees no GPU ({exc}); name one with --gpu") from None
    if gpu is None:
        raise InputError("--gpu auto needs pynvml: pip install 'specadvisor[nvml]'")
    return gpu


def _words(driver_name: str) -> list[str]:
    return [w for w in driver_name.lower().replace("-", " ").split() if w not in VENDOR_WORDS]


def _exact(words: list[str]) -> str | None:
    """The profile whose name or alias is these words, or these words less trailing neutral ones."""
    for end in range(len(words), 0, -1):
        if end < len(words) and not NEUTRAL_WORD.match(words[end]):
            return None  # a word that tells parts apart (PCIe, NVL, Ada, ...) would be dropped
        try:
            return load_hardware(" ".join(words[:end])).slug
        except InputError:
            continue
    return None


def nearest_profile(driver_name: str) -> str:
    """The profile whose display name or alias is closest to the driver's name (for a refusal's hint)."""
    keys = {}
    for slug in names("hardware"):
        hw = load_hardware(slug)
        for key in (hw.name, slug, *hw.aliases):
            keys.setdefault(" ".join(_words(key)), slug)
    close = difflib.get_close_matches(" ".join(_words(driver_name)), list(keys), n=1, cutoff=0.0)
    return keys[close[0]]


def match_profile(driver_name: str, memory_bytes: int | None = None, *, mig: bool = False) -> str:
    """The profile of the GPU the driver names (NVML's total memory, when given, must agree with the profile's);
    InputError naming the nearest profile when none is certain."""
    found = None if mig else _exact(_words(driver_name))
    if found is not None and memory_bytes:
        gib, listed = memory_bytes / 1024**3, load_hardware(found).memory_gib
        # one driver name, two memory sizes (RTX PRO 5000 Blackwell 48 / 72 GB): the profile of the size it has
        sized = _exact([*_words(driver_name), f"{gib:.0f}gb"]) if abs(gib / listed - 1) > MEMORY_TOLERANCE else None
        if sized is not None and abs(gib / load_hardware(sized).memory_gib - 1) <= MEMORY_TOLERANCE:
            found, listed = sized, load_hardware(sized).memory_gib
        if abs(gib / listed - 1) > MEMORY_TOLERANCE:
            raise InputError(f"--gpu auto found {driver_name!r} with {gib:.0f} GiB, but profile {found!r} lists "
                             f"{listed:g} GiB: no profile describes this GPU; pass --gpu {found} to use it anyway, "
                             "or add one to profiles/hardware")
    if found is not None:
        return found
    nearest = nearest_profile(driver_name)
    what = "a MIG slice (a fraction of a GPU's bandwidth and compute)" if mig else "no profile"
    raise InputError(f"--gpu auto found {driver_name!r}, which matches {what}; the nearest profile is "
                     f"{nearest!r}: pass --gpu {nearest} to use it anyway, or add one to profiles/hardware")


def resolve_gpu(name: str) -> str:
    if name != "auto":
        return name
    gpu = local_gpu()
    return match_profile(gpu.name, gpu.memory_bytes, mig=gpu.mig)
