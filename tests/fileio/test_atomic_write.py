"""advisor/fileio/atomic_write.py: a killed writer leaves the old file or the new one, never half of either."""

import json
import signal
import subprocess
import sys
import time

import pytest

from advisor.errors import InputError
from advisor.fileio.atomic_write import write_atomic

# Rewrites the file as fast as it can, each version ~4 MB, so a kill lands mid-write almost every time.
WRITER = """
import json, sys
from advisor.fileio.atomic_write import write_atomic
for i in range(1, 10**9):
    write_atomic(sys.argv[1], json.dumps({"version": i, "pad": "x" * 4_000_000}))
"""


def _version(path) -> int:
    return json.loads(path.read_text())["version"]  # raises on a torn file


def test_readers_and_a_kill_mid_write_only_ever_see_a_whole_file(tmp_path):
    path = tmp_path / "cal.json"
    for delay in (0.05, 0.11, 0.17, 0.23, 0.31):
        write_atomic(path, json.dumps({"version": 0}))
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)])
        deadline = time.monotonic() + 60
        while _version(path) == 0 and time.monotonic() < deadline:  # it is writing now
            pass
        stop = time.monotonic() + delay
        versions = [_version(path)]
        while time.monotonic() < stop:  # a reader (a resumed run, `recommend --calibration`) between the writes
            versions.append(_version(path))
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        versions.append(_version(path))
        assert versions == sorted(versions) and versions[0] >= 1, versions


def test_a_folder_is_not_a_file_name(tmp_path):
    with pytest.raises(InputError, match="is a folder: give a file name"):
        write_atomic(tmp_path, "{}")
