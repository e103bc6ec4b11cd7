"""In server mode nothing but LSP messages reaches stdout, even when something in the process writes there.

`tandem serve` runs in a harness process whose tracer also prints and writes to file descriptor 1 on every
record, as a misbehaving library would (a console exporter, a stray `print`, C code). The client reads
stdout byte for byte: it must be well-framed LSP messages and nothing else, and the stray output must be on
stderr."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import IO, Any

import pytest

pytestmark = pytest.mark.e2e

HARNESS = """
import os, sys
from tandem.completion.observe import trace

written = trace.Tracer.write

def noisy(self, record):
    print("stray print from a library")
    os.write(1, b"stray write to descriptor 1\\n")
    written(self, record)

trace.Tracer.write = noisy
from tandem.cli import main
sys.exit(main(["serve", "--trace", sys.argv[1]]))
"""


def _send(stdin: IO[bytes], message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stdin.flush()


def _read_frame(stdout: IO[bytes]) -> dict[str, Any]:
    """One message, read strictly: headers, a blank line, exactly Content-Length bytes of JSON."""
    length = None
    while True:
        line = stdout.readline()
        assert line.endswith(b"\r\n"), f"not an LSP header line: {line!r}"
        if line == b"\r\n":
            break
        name, _, value = line.decode("ascii").partition(":")
        assert name.strip().lower() in ("content-length", "content-type"), f"not an LSP header: {line!r}"
        if name.strip().lower() == "content-length":
            length = int(value)
    assert length is not None
    message: dict[str, Any] = json.loads(stdout.read(length))
    return message


def _until_response(stdout: IO[bytes], request_id: int) -> dict[str, Any]:
    while True:
        message = _read_frame(stdout)
        if message.get("id") == request_id and "method" not in message:
            return message


def test_stdout_carries_only_lsp_messages_when_the_process_writes_there(tmp_path: pathlib.Path) -> None:
    uri = (tmp_path / "m.py").as_uri()
    with subprocess.Popen(
        [sys.executable, "-P", "-c", HARNESS, str(tmp_path / "trace.jsonl")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    ) as process:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        try:
            _send(process.stdin, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
            assert "capabilities" in _until_response(process.stdout, 1)["result"]
            _send(process.stdin, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
            document = {"uri": uri, "languageId": "python", "version": 1, "text": "def add(a, b):\n    return "}
            opened = {"textDocument": document}
            _send(process.stdin, {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": opened})
            params = {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 11}}
            # No model is configured: the request is answered empty and traced, and the tracer makes its noise.
            _send(process.stdin, {"jsonrpc": "2.0", "id": 2, "method": "textDocument/completion", "params": params})
            assert "result" in _until_response(process.stdout, 2)
            _send(process.stdin, {"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
            _until_response(process.stdout, 3)
            _send(process.stdin, {"jsonrpc": "2.0", "method": "exit"})
            process.stdin.close()
            rest = process.stdout.read()
            stderr = process.stderr.read().decode()
            assert process.wait(timeout=30) == 0
        finally:
            if process.poll() is None:
                process.kill()
    # Whatever followed the shutdown answer is whole messages too (notifications), never stray text.
    assert b"stray" not in rest, rest
    assert "stray print from a library" in stderr and "stray write to descriptor 1" in stderr, stderr[-2000:]
