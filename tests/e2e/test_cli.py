"""The `tandem` command line: help on every command, one-line errors, and the server over TCP."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

from tandem.cli import COMMANDS, main

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("argv", [[], *([name] for name in COMMANDS), ["trace", "report"]])
def test_every_command_has_help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--help"])
    assert exit_info.value.code == 0
    assert "usage: tandem" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["bogus"], "invalid choice: 'bogus'"),
        (["serve", "--tcp", "nowhere"], "expected HOST:PORT"),
        (["sim", "--truth", "/nonexistent/path"], "/nonexistent/path"),
        (["trace", "report", "/nonexistent.jsonl"], "no such trace file"),
    ],
)
def test_errors_are_one_line_and_a_failing_exit(argv: list[str], expected: str) -> None:
    done = subprocess.run([sys.executable, "-P", "-m", "tandem", *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], done.stderr


def test_serve_over_tcp_answers_initialize() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-P", "-m", "tandem", "serve", "--tcp", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        connection = None
        for _ in range(200):
            try:
                connection = socket.create_connection(("127.0.0.1", port), timeout=10)
                break
            except ConnectionRefusedError:
                if server.poll() is not None:
                    pytest.fail(f"tandem serve --tcp exited: {server.stderr.read() if server.stderr else ''}")
                time.sleep(0.05)  # sleep-ok: waiting for another process to start listening, bounded
        assert connection is not None, "tandem serve --tcp never listened"
        with connection:
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
            connection.sendall(f"Content-Length: {len(body)}\r\n\r\n{body}".encode())
            received = b""
            while b"\r\n\r\n" not in received:
                received += connection.recv(65536)
            header, _, rest = received.partition(b"\r\n\r\n")
            length = int(header.split(b"Content-Length: ")[1].split(b"\r\n")[0])
            while len(rest) < length:
                rest += connection.recv(65536)
        answer = json.loads(rest[:length])
        assert answer["id"] == 1
        assert "inlineCompletionProvider" in answer["result"]["capabilities"]
        assert answer["result"]["serverInfo"]["name"] == "tandem"
    finally:
        server.kill()
        server.communicate(timeout=10)  # reaps it and closes its stderr pipe
