"""A stand-in for pynvml (advisor/profiles/visible_gpu.py reads the GPU through it): the calls NVML answers, on GPUs
the test describes, with no driver or GPU here. Install it with
`monkeypatch.setattr(visible_gpu, "pynvml", fake_nvml(...))`."""

import types

GIB = 1024**3


class NVMLError(Exception):
    pass


def fake_nvml(devices: dict, uuids: dict | None = None, mig: tuple = (), *, text: bool = False,
              driver: str = "570.86.15"):
    """A pynvml module whose GPUs are `devices` {index: (name, total bytes)} or {index: (name, total, free)}
    (free: half the total when not given); `uuids` {uuid: index}; `mig` the indices that are MIG slices. Names and
    the driver's version come back as bytes, as older pynvml releases return them, or as str with `text`."""
    def by_index(i):
        if i not in devices:
            raise NVMLError(f"no device {i}")
        return i

    def by_uuid(uuid):
        if uuid not in (uuids or {}):
            raise NVMLError(f"no device {uuid}")
        return uuids[uuid]

    def memory(h):
        total, free = devices[h][1], (devices[h][2] if len(devices[h]) > 2 else devices[h][1] // 2)
        return types.SimpleNamespace(total=total, free=free, used=total - free)

    def out(s: str):
        return s if text else s.encode()

    return types.SimpleNamespace(
        NVMLError=NVMLError, nvmlInit=lambda: None, nvmlDeviceGetHandleByIndex=by_index,
        nvmlDeviceGetHandleByUUID=by_uuid, nvmlDeviceGetName=lambda h: out(devices[h][0]),
        nvmlDeviceGetMemoryInfo=memory, nvmlDeviceIsMigDeviceHandle=lambda h: h in mig,
        nvmlSystemGetDriverVersion=lambda: out(driver))
