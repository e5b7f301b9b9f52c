"""The vLLM processes alive on this machine (vLLM names them VLLM::EngineCore, VLLM::Worker_TP<rank>), for engine
tests that check a run leaves none of its own behind."""

import subprocess


def vllm_processes() -> list[tuple[int, int, str]]:
    """(pid, parent pid, command) of every live vLLM process; zombies, already dead, are left out."""
    ps = subprocess.run(["ps", "-eo", "pid,ppid,stat,cmd"], capture_output=True, text=True, check=True).stdout
    rows = [line.split(None, 3) for line in ps.splitlines()[1:]]
    return [(int(pid), int(parent), cmd) for pid, parent, stat, cmd in rows if "VLLM::" in cmd and "Z" not in stat]
