"""The validation grid: what it runs (which family of test pairs, at which tensor parallelism) and what it refuses."""

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from advisor.errors import InputError
from calibration.validation.grid import Grid
from calibration.validation.markdown import TP_TARGETS, targets
from calibration.validation.run import run_grid


def test_the_grid_runs_its_family_at_its_tensor_parallelism(tmp_path, monkeypatch):
    """`validate --family qwen2 --num-gpus 2`: the pairs are the family's (here a 2-layer draft) and every engine,
    baseline included, is started at the grid's TP. The engine layer is stood in for only to see what it is asked
    (the committed TP=2 validation in docs/validation/tp2/ ran the real one)."""
    import calibration.validation.run as run

    seen = []

    def no_engine(model, **args):
        seen.append((json.loads((Path(model) / "config.json").read_text()), args["tensor_parallel_size"]))
        raise RuntimeError("not started")

    monkeypatch.setattr(run, "open_engine", no_engine)
    grid = Grid(scales=(0.1,), ks=(1,), batches=(1,), prompt_lens=(8,), out_lens=(4,), ngram=False, family="qwen2",
                draft_layers=2, tensor_parallel_size=2)
    out = run_grid(grid, tmp_path)
    assert len(seen) == 3 and {(c["model_type"], c["num_hidden_layers"], tp) for c, tp in seen} == {("qwen2", 12, 2)}
    assert all(r.error == "engine failed to start: not started" for r in out.runs)
    assert json.loads((out.pairs[0.1].draft_dir / "config.json").read_text())["num_hidden_layers"] == 2
    assert targets(asdict(grid)) == TP_TARGETS and targets({}) != TP_TARGETS
    with pytest.raises(InputError, match="--num-gpus must be at least 1"):
        Grid(scales=(0.1,), ks=(1,), batches=(1,), prompt_lens=(8,), out_lens=(4,), tensor_parallel_size=0)
    with pytest.raises(InputError, match="--draft-layers must be in 1..12"):
        Grid(scales=(0.1,), ks=(1,), batches=(1,), prompt_lens=(8,), out_lens=(4,), family="qwen2", draft_layers=13)


def test_a_gpu_grid_adds_a_synchronous_baseline_for_ngram():
    from calibration.validation.grid import SYNC_BASELINE

    grid = Grid(scales=(0.1,), ks=(1,), batches=(1,), prompt_lens=(8,), out_lens=(4,), sync_baseline=True)
    assert [e[0] for e in grid.engines()] == ["baseline", SYNC_BASELINE, "draft_model", "ngram", "baseline"]
    no_ngram = Grid(scales=(0.1,), ks=(1,), batches=(1,), prompt_lens=(8,), out_lens=(4,), ngram=False,
                    sync_baseline=True)
    assert SYNC_BASELINE not in [e[0] for e in no_ngram.engines()]


def test_validate_looks_for_its_calibration_before_measuring(tmp_path, monkeypatch):
    """No calibration applies: the refusal comes before any engine starts, not after the whole grid."""
    from advisor.errors import InputError
    from calibration.validation import write

    def no_run(*args, **kwargs):
        raise AssertionError("the grid ran")

    monkeypatch.setattr(write, "run_grid", no_run)
    monkeypatch.setattr(write, "detect_hardware", lambda gpu: ("no-such-hardware", {}))
    with pytest.raises(InputError, match="no calibration matches"):
        write.validate_command(out=str(tmp_path / "v"), scales="0.1", ks="1", batches="1", prompt_lens="8",
                               out_lens="4", temperatures="0", ngram=True, calibration=None, from_json=None)
