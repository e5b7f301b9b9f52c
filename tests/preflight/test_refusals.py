"""advisor/preflight/refusals.py: each refusal preflight now reports is one vLLM 0.32's own config code makes. The
line that triggers a check is fed to vLLM's config classes (on local copies of the profiles' config.json: no
weights, no device) and refused there; its clean neighbour is accepted. The exit codes and lines themselves are
tested in test_preflight_checks.py (CASES) and test_twelve_lines.py."""

from pathlib import Path

import pytest

from advisor.preflight.command import parse_serve
from tests.preflight.test_preflight_checks import CASES
from vllm_dbo import keep_dbo  # noqa: F401  (the fixture)

vllm_config = pytest.importorskip("vllm.config")
PROFILES = Path(__file__).parents[2] / "profiles" / "models"
LOCAL = {"meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b-instruct", "deepseek-ai/DeepSeek-V3": "deepseek-v3",
         "meta-llama/Llama-3.2-1B-Instruct": "llama-3.2-1b-instruct", "Qwen/Qwen3-30B-A3B": "qwen3-30b-a3b"}


@pytest.fixture(scope="module")
def local_dir(tmp_path_factory):
    """A Hugging Face id (or a directory) -> a local directory with its profile's config.json."""
    root = tmp_path_factory.mktemp("models")

    def make(model: str) -> str:
        if Path(model).is_dir():
            return model
        folder = root / LOCAL[model]
        if not folder.exists():
            folder.mkdir()
            (folder / "config.json").write_text((PROFILES / f"{LOCAL[model]}.json").read_text())
        return str(folder)

    return make


def vllm_speculative(command: str, local_dir):
    """vLLM's SpeculativeConfig for a `vllm serve` line's --speculative-config, its target and TP."""
    serve = parse_serve(command)
    target = vllm_config.ModelConfig(model=local_dir(serve.model), skip_tokenizer_init=True,
                                     max_model_len=serve.max_model_len or 2048)
    config = dict(serve.speculative)
    if config.get("model") and config.get("method") not in ("ngram", "ngram_gpu"):
        config["model"] = local_dir(config["model"])
    parallel = vllm_config.ParallelConfig(tensor_parallel_size=serve.tp)
    return vllm_config.SpeculativeConfig(**config, target_model_config=target, target_parallel_config=parallel)


@pytest.mark.parametrize("name", ["speculative_keys", "mtp_without_layers", "k_divisible", "draft_tensor_parallel"])
def test_vllms_speculative_config_refuses_the_trigger_and_takes_the_neighbour(name, local_dir):
    _, trigger, clean = CASES[name]
    with pytest.raises(Exception) as refused:  # pydantic's ValidationError, ValueError or NotImplementedError
        vllm_speculative(trigger[0], local_dir)
    assert not isinstance(refused.value, (KeyError, FileNotFoundError, ImportError)), refused.value
    assert vllm_speculative(clean[0], local_dir).num_speculative_tokens == parse_serve(clean[0]).k


def test_vllm_refuses_dbo_on_the_default_backend(keep_dbo):
    """The microbatching assert of VllmConfig.__post_init__, on the ParallelConfig each line asks for."""
    _, trigger, clean = CASES["dbo_backend"]

    def vllm_parallel(command: str):
        s = parse_serve(command)
        parallel = vllm_config.ParallelConfig(data_parallel_size=s.dp, enable_expert_parallel=s.expert_parallel,
                                              enable_dbo=s.dbo, all2all_backend=s.all2all_backend
                                              or "allgather_reducescatter")
        return vllm_config.VllmConfig(parallel_config=parallel)

    with pytest.raises((AssertionError, ValueError), match="Microbatching currently only supports"):  # pydantic's
        vllm_parallel(trigger[0])
    assert vllm_parallel(clean[0]).parallel_config.enable_dbo

