"""advisor/preflight/serve_config.py: `vllm serve --config FILE` read as vLLM 0.32 reads it, against the installed
vLLM's own FlexibleArgumentParser on the same file."""

import json

import pytest

from advisor.cli.app import main
from advisor.preflight.command import parse_serve
from advisor.preflight.serve_config import config_flags, with_config

CONFIG = """model: Qwen/Qwen3-8B
max-model-len: 4096
tensor-parallel-size: 1
enable-prefix-caching: false
async-scheduling: true
speculative-config:
  method: dflash
  model: z-lab/Qwen3-8B-DFlash-b16
  num_speculative_tokens: 15
"""


def test_the_flags_are_the_ones_vllms_parser_builds(tmp_path):
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    path = tmp_path / "serve.yaml"
    path.write_text(CONFIG)
    parser = FlexibleArgumentParser()
    for flag in ("--model", "--max-model-len", "--tensor-parallel-size", "--speculative-config"):
        parser.add_argument(flag)
    parser.add_argument("--enable-prefix-caching", action="store_true")
    parser.add_argument("--no-enable-prefix-caching", action="store_true")
    parser.add_argument("--async-scheduling", action="store_true")
    assert config_flags(str(path)) == parser.load_config_file(str(path))


def test_the_command_line_wins_over_the_file(tmp_path):
    path = tmp_path / "serve.yaml"
    path.write_text(CONFIG)
    serve = parse_serve(f"vllm serve --config {path} --max-model-len 8192")
    assert (serve.model, serve.max_model_len, serve.prefix_caching, serve.method, serve.k) == \
        ("Qwen/Qwen3-8B", 8192, False, "dflash", 15)
    assert with_config(["m", "--config", str(path), "-tp", "2"])[:3] == ["m", "--model", "Qwen/Qwen3-8B"]


def test_preflight_reads_a_config_file_alone(tmp_path, capsys):
    path = tmp_path / "serve.yml"
    path.write_text(CONFIG.replace("num_speculative_tokens: 15", "num_speculative_tokens: 16"))
    assert main(["preflight", "--config", str(path), "--gpu", "h100-sxm"]) == 1
    assert "[block_k]" in capsys.readouterr().out


@pytest.mark.parametrize("name, text, words", [
    ("a.json", "{}", "a .yaml or .yml file"),
    ("a.yaml", "model: [unclosed", "not valid YAML"),
    ("a.yaml", "- just\n- a list\n", "must map flag names"),
    ("a.yaml", "x: &a [1, 2]\ny: *a\n", "alias"),
    ("a.yaml", "speculative-config: " + "[" * 3000 + "]" * 3000, "nests too deep"),
    ("missing.yaml", None, "no such file (it should be a vllm serve config)"),
    ("big.yaml", "# " + "x" * (1 << 20) + "\n", "is larger than 1 MiB: not a vllm serve config"),
])
def test_a_bad_config_file_is_one_line(tmp_path, capsys, name, text, words):
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    assert main(["preflight", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err


def test_a_config_without_a_model_is_vllms_refusal(tmp_path, capsys):
    path = tmp_path / "serve.yaml"
    path.write_text("max-model-len: 4096\n")
    assert main(["preflight", "--config", str(path)]) == 2
    assert "names no model" in capsys.readouterr().err
    assert json.loads(json.dumps(config_flags(str(path)))) == ["--max-model-len", "4096"]
