"""The `model` tier: `tandem serve` over stdio against a real model, Qwen2.5-Coder 0.5B in llama.cpp's server.

Needs `tandem local setup` (both models; CI's `.ci/run` does it, the build once per machine). Without it
these tests skip, unless TANDEM_MODEL_TIER=required (CI), where a missing model is a failure. They check
that each path works on a real model, not how well: the figures come from `tandem replay --local` and
`bench/bench_local.py`.
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from e2e_support import Session, serve
from lsprotocol import types

from tandem.local.pins import QWEN_05B, QWEN_15B, ModelPin
from tandem.local.servers import LocalServer, chat_settings, free_port, model_settings, start
from tandem.local.setup import model_file, server_binary

pytestmark = pytest.mark.model


def _server(pin: ModelPin, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    if not (server_binary().is_file() and model_file(pin).is_file()):
        reason = f"the local model is not set up: run `tandem local setup --model {pin.name}`"
        if os.environ.get("TANDEM_MODEL_TIER") == "required":
            pytest.fail(reason)
        pytest.skip(reason)
    server = start(pin, free_port(), log_dir=tmp_path_factory.mktemp("llama"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    """Qwen2.5-Coder 0.5B, the local pair's fast model."""
    yield from _server(QWEN_05B, tmp_path_factory)


@pytest.fixture(scope="module")
def llama_accurate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    """Qwen2.5-Coder 1.5B, the local pair's accurate model."""
    yield from _server(QWEN_15B, tmp_path_factory)


async def _until(condition: Callable[[], bool], *, seconds: float = 60.0) -> None:
    """Wait for a condition another process makes true (the server's trace file), yielding between checks."""
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)  # sleep-ok: polling another process's file, bounded
    raise AssertionError("condition never became true")


def _options(server: LocalServer, accurate: LocalServer | None = None, **extra: Any) -> dict[str, Any]:
    return {"models": {"fast": model_settings(server), "accurate": chat_settings(accurate or server)}, **extra}


async def test_a_completion_from_the_real_model_is_shown(tmp_path: pathlib.Path, llama: LocalServer) -> None:
    text = "def add(a, b):\n    return \n\n\nprint(add(2, 3))\n"
    async with serve(tmp_path, "vscode", options=_options(llama)) as session:
        uri = session.open("calc.py", text)
        shown = await session.inline(uri, types.Position(line=1, character=11))
        assert shown.strip(), "the real model's completion was not shown"
        assert "print(add(2, 3))" not in shown  # the code after the cursor is not repeated
        # The request is traced when its stream ends (the model may still be writing).
        await _until(lambda: any(r["kind"] == "inline" for r in session.records()))
        [record] = [r for r in session.records() if r["kind"] == "inline"]
        assert record["outcome"] == "shown" and record["tier"] == "fast" and record["tokens"]["out"] > 0


class _Editor:
    """Applies `workspace/applyEdit` to its own copy of the document, as an editor does (ASCII text)."""

    def __init__(self, session: Session, uri: str, text: str) -> None:
        self.text, self.uri, self.applied = text, uri, asyncio.Event()

        @session.client.feature(types.WORKSPACE_APPLY_EDIT)
        def apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            for change in params.edit.document_changes or []:
                assert isinstance(change, types.TextDocumentEdit) and change.text_document.uri == self.uri
                for edit in sorted(change.edits, key=lambda e: (e.range.start.line, e.range.start.character)):
                    assert isinstance(edit, types.TextEdit)
                    self.text = self._replace(edit)
            self.applied.set()
            return types.ApplyWorkspaceEditResult(applied=True)

    def _replace(self, edit: types.TextEdit) -> str:
        lines = self.text.split("\n")

        def offset(position: types.Position) -> int:
            return sum(len(line) + 1 for line in lines[: position.line]) + position.character

        return self.text[: offset(edit.range.start)] + edit.new_text + self.text[offset(edit.range.end) :]


async def test_an_edit_by_the_real_accurate_model_is_applied(
    tmp_path: pathlib.Path, llama: LocalServer, llama_accurate: LocalServer
) -> None:
    # The 1.5B (the 0.5B answers edit instructions with malformed blocks: 'SEARCH\ndef plus(...' with no
    # opening marker or divider, which tandem rightly applies nothing of).
    text = "def add(a, b):\n    return a + b\n\n\nprint(add(2, 3))\n"
    options = _options(llama, llama_accurate, router={"force": "accurate"})
    async with serve(tmp_path, "vscode", options=options) as session:
        uri = session.open("calc.py", text)
        editor = _Editor(session, uri, text)
        whole = {"start": {"line": 0, "character": 0}, "end": {"line": 5, "character": 0}}
        result = await session.client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="tandem.edit",
                arguments=[{"uri": uri, "range": whole, "instruction": "Rename the function add to plus."}],
            )
        )
        assert isinstance(result, dict), result
        assert editor.applied.is_set(), f"no edit was applied: {result}"
        assert "def plus(" in editor.text, editor.text


@pytest.mark.timeout(600)
async def test_the_readmes_local_demo_runs_on_the_real_model(tmp_path: pathlib.Path, llama: LocalServer) -> None:
    """`tandem demo --local` as the README gives it (shortened): its own llama-server, the real 0.5B."""
    del llama  # set up (or skipped) by the fixture; the demo starts a server of its own
    # In a thread: starting a process forks this one, which holds the event loop (the loop watch) under load.
    demo = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "tandem", "demo", "--local", "--seconds", "15", "--json",
         "--trace", str(tmp_path / "trace.jsonl")],
        capture_output=True,
        check=False,
    )  # fmt: skip
    out, err = demo.stdout, demo.stderr
    assert demo.returncode == 0, err.decode()[-2000:]
    summary = json.loads(out)
    assert summary["simulated_provider"] is False and summary["provider"]["local"] is True
    assert summary["requests"] > 0 and summary["cost_usd"] == 0.0
