"""A pasted `vllm serve` line read by vLLM 0.32's own `vllm serve` argument parser (the serve subcommand's:
vllm/entrypoints/launchers/cli_args.py `make_arg_parser`, FrontendArgs then AsyncEngineArgs, `--headless` among
them) into its AsyncEngineArgs. An unknown flag or a value vLLM does not take exits (argparse), as `vllm serve`
would."""

import shlex


def serve_engine_args(command: str):
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    argv = shlex.split(command)
    assert argv[:2] == ["vllm", "serve"], command
    args = make_arg_parser(FlexibleArgumentParser()).parse_args(argv[2:])
    validate_parsed_serve_args(args)
    args.model = args.model_tag  # `vllm serve MODEL` (vllm/entrypoints/cli/serve.py)
    return AsyncEngineArgs.from_cli_args(args), args
