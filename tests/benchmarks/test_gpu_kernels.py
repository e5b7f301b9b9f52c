"""benchmarks/gpu_kernels.py on the CPU (--smoke, tiny sizes): it runs, and prints each kernel's measured time beside
the cost model's for the named GPU. What it reads on a GPU is for a GPU machine to say."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_smoke_run_prints_both_columns():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_kernels.py"), "--smoke", "--gpu", "h100-sxm",
                           "--repeats", "3"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "h100-sxm's datasheet costs" in lines[0] and lines[1].split()[-4:] == ["us", "model", "us", "ratio"]
    number = r"([\d.e+-]+)"
    rows = [re.match(rf"(.+?)\s+{number}\s+{number}\s+{number}$", line) for line in lines[2:]]
    assert all(rows) and len(rows) == 2 * 3 + 4 + 2 * 2, lines
    kinds = {row.group(1).split()[0] for row in rows}
    assert kinds == {"GEMM", "grouped", "RMSNorm", "rotary"}
    assert all(float(row.group(2)) > 0 and float(row.group(3)) > 0 for row in rows)


def test_without_a_gpu_it_asks_for_a_profile():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_kernels.py"), "--smoke"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2 and "--gpu PROFILE" in done.stderr
