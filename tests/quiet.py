"""A lock between pytest-xdist's workers (tests/run.sh runs two), so that a test that times vLLM and judges the
timings runs with nothing beside it. calibrate refuses a fit whose held-out error is over its gate (15%): with the
other worker's tests running beside it, one CI run's target repeats differed by up to 209% and the gate failed.
Such a test runs its timed part inside `with alone():` (tests/conftest.py), which holds the lock exclusively;
every other test holds it shared, so the other worker waits between its tests until the timed part ends. Without
pytest-xdist there is one process: no lock."""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

POLL_S = 0.2  # how often a waiting test looks whether the quiet one has ended


def _paths() -> tuple[Path, Path] | None:
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")  # the same in every worker of one run
    if run is None:
        return None
    base = Path(tempfile.gettempdir()) / f"specadvisor-tests-{run}"
    return base.with_suffix(".lock"), base.with_suffix(".wanted")


@contextmanager
def holding(exclusive: bool):
    """The lock, exclusive for a timed part, shared for any other test. An exclusive taker first raises a flag that
    holds new shared takers back, so a worker that runs short tests back to back cannot keep it waiting."""
    paths = _paths()
    if paths is None:
        yield
        return
    lock, wanted = paths
    if exclusive:
        wanted.touch()
    else:
        while wanted.exists():
            time.sleep(POLL_S)
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            if exclusive:
                wanted.unlink(missing_ok=True)
            fcntl.flock(handle, fcntl.LOCK_UN)
