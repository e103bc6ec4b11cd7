"""The `tandem` command: serve, sim, replay, demo, trace report, trace export.

Each subcommand's module is imported only when it runs, so `tandem serve` starts without loading the
simulator or the replay client. Errors are one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import argparse
import logging
import pathlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

EXIT_USAGE = 2


class CliError(Exception):
    """A problem the user can fix, reported as one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message} (see --help)\n")
        raise SystemExit(EXIT_USAGE)


def _host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def _without_httpx_cli() -> None:
    """httpx imports its own command-line tool (`httpx._main`) whenever click, rich and pygments are
    installed: about 6 MB of modules that `tandem serve` never runs. A None in sys.modules makes that import
    fail, which httpx expects (it then defines a `main` that says the tool is not installed). Call it before
    httpx is imported; nothing else imports `httpx._main`."""
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


def _serve(args: argparse.Namespace) -> int:
    from tandem.lsp.heap import fix_thresholds, limit_arenas

    limit_arenas()  # before any thread starts (`lsp.heap`)
    fix_thresholds()
    _without_httpx_cli()
    level = logging.DEBUG if args.verbose else logging.INFO
    if not (args.log_to_client and args.log_file is None):
        from tandem.lsp.shown import ShownFormatter

        logging.basicConfig(level=level, filename=args.log_file)
        # File names and model text reach the log: their control characters are escaped (`lsp.shown`).
        for handler in logging.getLogger().handlers:
            handler.setFormatter(ShownFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    # pygls logs every message at INFO and DEBUG, document text included: only on explicit request.
    logging.getLogger("pygls").setLevel(logging.DEBUG if args.log_protocol else logging.WARNING)
    # httpx logs a line per model request at INFO: one per keystroke is noise, not news.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    from tandem.lsp.server import build_server

    server = build_server(trace_path=args.trace)
    if args.log_to_client:
        from tandem.lsp.client_log import ClientLogHandler

        root = logging.getLogger()
        root.setLevel(level)
        root.addHandler(ClientLogHandler(server))
    if args.tcp:
        host, port = args.tcp
        server.start_tcp(host, port)
    else:
        server.serve_stdio()
    return 0


def _sim(args: argparse.Namespace) -> int:
    from tandem.sim.runner import SimConfigError, serve_forever, settings_from_args

    try:
        serve_forever(settings_from_args(args))
    except (SimConfigError, OSError) as error:  # a bad setting, an unreadable truth path, a port in use
        raise CliError(str(error)) from None
    return 0


def _replay(args: argparse.Namespace) -> int:
    from tandem.eval.replay.cli import run_replay

    return run_replay(args)


def _demo(args: argparse.Namespace) -> int:
    from tandem.eval.replay.cli import run_demo

    return run_demo(args)


def _local(args: argparse.Namespace) -> int:
    from tandem.local.cli import run

    return run(args)


def _local_arguments(local: argparse.ArgumentParser) -> None:
    from tandem.local.cli import add_arguments

    add_arguments(local)


def _check(args: argparse.Namespace) -> int:
    from tandem.local.check import run_check

    return run_check(args)


def _check_arguments(check: argparse.ArgumentParser) -> None:
    from tandem.local.check import add_arguments

    add_arguments(check)


def _trace_report(args: argparse.Namespace) -> int:
    from tandem.eval.trace_report import run_report

    return run_report(args)


def _trace_export(args: argparse.Namespace) -> int:
    from tandem.eval.perfetto import run_export

    return run_export(args)


def _serve_arguments(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--stdio", action="store_true", help="use stdio (the default; accepted for VS Code)")
    serve.add_argument("--tcp", type=_host_port, metavar="HOST:PORT", help="listen on TCP instead of stdio")
    serve.add_argument("--trace", type=pathlib.Path, metavar="FILE", help="append trace records to FILE")
    serve.add_argument("--log-file", metavar="FILE", help="write logs to FILE (default: stderr)")
    serve.add_argument(
        "--log-to-client",
        action="store_true",
        help="send logs to the editor as window/logMessage at their level (also to --log-file if given)",
    )
    serve.add_argument("-v", "--verbose", action="store_true", help="debug logging (never document text)")
    serve.add_argument(
        "--log-protocol",
        action="store_true",
        help="also log every LSP message, document text included (for debugging a client; do not share)",
    )


def _sim_arguments(sim: argparse.ArgumentParser) -> None:
    from tandem.sim.runner import add_arguments

    add_arguments(sim)


def _replay_arguments(replay: argparse.ArgumentParser) -> None:
    from tandem.eval.replay.cli import add_replay_arguments

    add_replay_arguments(replay)


def _demo_arguments(demo: argparse.ArgumentParser) -> None:
    from tandem.eval.replay.cli import add_demo_arguments

    add_demo_arguments(demo)


def _trace_arguments(trace: argparse.ArgumentParser) -> None:
    trace_commands = trace.add_subparsers(dest="trace_command", required=True, parser_class=_Parser, metavar="COMMAND")
    report = trace_commands.add_parser(
        "report",
        help="percentiles per phase from a trace file",
        description="Summarise a trace file: latency percentiles per phase, outcomes and sources.",
    )
    report.add_argument("files", type=pathlib.Path, nargs="+", metavar="FILE", help="trace files (rotated ones too)")
    report.add_argument("--json", action="store_true", help="print JSON instead of text")
    report.add_argument(
        "--html",
        type=pathlib.Path,
        metavar="OUT",
        help="also write a self-contained HTML page of plots to OUT (needs the report extra: plotly)",
    )
    report.set_defaults(run=_trace_report)
    export = trace_commands.add_parser(
        "export",
        help="trace files as Chrome Trace Event JSON for Perfetto's UI",
        description="Write trace files as Chrome Trace Event JSON (async events: one track per model, one for "
        "the cache, one per document), for ui.perfetto.dev or chrome://tracing.",
    )
    export.add_argument("files", type=pathlib.Path, nargs="+", metavar="FILE", help="trace files (rotated ones too)")
    export.add_argument("--perfetto", type=pathlib.Path, metavar="OUT.json", required=True, help="where to write")
    export.set_defaults(run=_trace_export)


@dataclass(frozen=True)
class _Command:
    help: str
    description: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int] | None


COMMANDS: dict[str, _Command] = {
    "serve": _Command(
        "run the language server (stdio by default)",
        "Run the tandem language server on stdio, or on TCP with --tcp.",
        _serve_arguments,
        _serve,
    ),
    "sim": _Command(
        "run the model simulator (a stand-in provider on loopback)",
        "Serve simulated OpenAI-compatible model APIs on loopback: speed profiles, fault injection, and answers "
        "taken from ground-truth files. Everything it answers is labelled simulated.",
        _sim_arguments,
        _sim,
    ),
    "replay": _Command(
        "drive `tandem serve` like an editor over real files",
        "Run `tandem serve` as an editor would: remove spans from real source files, type them back keystroke "
        "by keystroke, request completions, accept the ones that match; print a summary.",
        _replay_arguments,
        _replay,
    ),
    "demo": _Command(
        "simulator + server + replay on built-in defaults (no key needed)",
        "Start the simulator, run a short replay against `tandem serve`, and print a summary. Needs no API key "
        "and no network.",
        _demo_arguments,
        _demo,
    ),
    "local": _Command(
        "a local model pair: llama-server with Qwen2.5-Coder (setup, serve)",
        "Build llama.cpp's server once per machine, fetch verified Qwen2.5-Coder weights, and run them.",
        _local_arguments,
        _local,
    ),
    "check": _Command(
        "ask each configured model whether it answers, how fast, and whether FIM works",
        "Before opening an editor: for each configured model, whether it answers, its time to first token, "
        "tokens per second, whether a repeated prompt is served from its prompt cache, and whether "
        "fill-in-the-middle works.",
        _check_arguments,
        _check,
    ),
    "trace": _Command("work with trace files", "Work with trace files.", _trace_arguments, None),
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; a subcommand's arguments (and the modules they need) are loaded only for `only`, so
    `tandem serve` does not import the simulator and `tandem --help` imports nothing."""
    parser = _Parser(
        prog="tandem",
        description="AI completion language server: streams a fast model's completions into any LSP editor "
        "and routes hard edits to an accurate model.",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")
    for name, command in COMMANDS.items():
        sub = commands.add_parser(name, help=command.help, description=command.description)
        if name == only:
            command.arguments(sub)
        if command.run is not None:
            sub.set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except CliError as error:
        sys.stderr.write(f"tandem {args.command}: error: {error}\n")
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
