"""The `tandem` command: serve, sim, replay, demo, trace report.

Each subcommand's module is imported only when it runs, so `tandem serve` starts without loading the
simulator or the replay client. Errors are one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import argparse
import logging
import pathlib
import sys
from collections.abc import Callable, Sequence

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


def _serve(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        filename=args.log_file,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # pygls logs every message it sends at INFO, document text included: keep it quiet unless debugging.
    logging.getLogger("pygls").setLevel(logging.DEBUG if args.verbose else logging.WARNING)
    # httpx logs a line per model request at INFO: one per keystroke is noise, not news.
    logging.getLogger("httpx").setLevel(logging.DEBUG if args.verbose else logging.WARNING)
    from lsp.server import build_server

    server = build_server(trace_path=args.trace)
    if args.tcp:
        host, port = args.tcp
        server.start_tcp(host, port)
    else:
        server.start_io()
    return 0


def _sim(args: argparse.Namespace) -> int:
    from completion.sim.runner import serve_forever, settings_from_args

    serve_forever(settings_from_args(args))
    return 0


def _replay(args: argparse.Namespace) -> int:
    from lsp.replay.cli import run_replay

    return run_replay(args)


def _demo(args: argparse.Namespace) -> int:
    from lsp.replay.cli import run_demo

    return run_demo(args)


def _trace_report(args: argparse.Namespace) -> int:
    from completion.trace_report import run_report

    return run_report(args)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tandem",
        description="AI completion language server: streams a fast model's completions into any LSP editor "
        "and routes hard edits to an accurate model.",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    serve = commands.add_parser(
        "serve",
        help="run the language server (stdio by default)",
        description="Run the tandem language server on stdio, or on TCP with --tcp.",
    )
    serve.add_argument("--stdio", action="store_true", help="use stdio (the default; accepted for VS Code)")
    serve.add_argument("--tcp", type=_host_port, metavar="HOST:PORT", help="listen on TCP instead of stdio")
    serve.add_argument("--trace", type=pathlib.Path, metavar="FILE", help="append trace records to FILE")
    serve.add_argument("--log-file", metavar="FILE", help="write logs to FILE (default: stderr)")
    serve.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    serve.set_defaults(run=_serve)

    sim = commands.add_parser(
        "sim",
        help="run the model simulator (a stand-in provider on loopback)",
        description="Serve simulated OpenAI-compatible model APIs on loopback: speed "
        "profiles, fault injection, and answers taken from ground-truth files.",
    )
    try:
        from completion.sim.runner import add_arguments as add_sim_arguments
    except ImportError:  # pragma: no cover - only while the simulator is being built
        pass
    else:
        add_sim_arguments(sim)
    sim.set_defaults(run=_sim)

    replay = commands.add_parser(
        "replay",
        help="drive `tandem serve` like an editor over real files",
        description="Run `tandem serve` as an editor would: remove spans from real "
        "source files, type them back keystroke by keystroke, request completions, "
        "accept the ones that match; print a summary.",
    )
    demo = commands.add_parser(
        "demo",
        help="simulator + server + replay on built-in defaults (no key needed)",
        description="Start the simulator, run a short replay against `tandem serve`, "
        "and print a summary. Needs no API key and no network.",
    )
    try:
        from lsp.replay.cli import add_demo_arguments, add_replay_arguments
    except ImportError:  # replay is optional at this layer until it lands
        pass
    else:
        add_replay_arguments(replay)
        add_demo_arguments(demo)
    replay.set_defaults(run=_replay)
    demo.set_defaults(run=_demo)

    trace = commands.add_parser("trace", help="work with trace files", description="Work with trace files.")
    trace_commands = trace.add_subparsers(dest="trace_command", required=True, parser_class=_Parser, metavar="COMMAND")
    report = trace_commands.add_parser(
        "report",
        help="percentiles per phase from a trace file",
        description="Summarise a trace file: latency percentiles per phase, outcomes and sources.",
    )
    report.add_argument("file", type=pathlib.Path, metavar="FILE")
    report.add_argument("--json", action="store_true", help="print JSON instead of text")
    report.set_defaults(run=_trace_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
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
