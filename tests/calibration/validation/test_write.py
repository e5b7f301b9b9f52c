"""`validate --resume` runs the engines the interrupted run left out as the run had them."""

import pytest

from calibration.validation import write
from calibration.validation.grid import Grid


class Stop(Exception):
    pass


def test_resume_keeps_the_gpu_memory_share(tmp_path, monkeypatch):
    grid = Grid(scales=(0.1,), ks=(1,), batches=(1,), prompt_lens=(8,), out_lens=(4,), ngram=False)
    asked = []

    def run_grid(*args, **kwargs):
        asked.append(kwargs.get("gpu_memory_utilization"))
        raise Stop

    monkeypatch.setattr(write, "run_grid", run_grid)
    write._write_measurements(tmp_path, grid, [], {"engine": {}, "gpu_memory_utilization": 0.5, "partial": True})
    common = dict(out=str(tmp_path), scales="", ks="", batches="", prompt_lens="", out_lens="", temperatures="",
                  ngram=False, calibration=None, from_json=None, resume=True)
    for given, used in ((0.4, 0.4), (None, 0.5)):  # the flag, else the share the interrupted run had
        with pytest.raises(Stop):
            write.validate_command(**common, gpu_memory_utilization=given)
        assert asked.pop() == used
