"""`tandem serve` end to end: a real subprocess over stdio, real clients' capabilities, and the simulator
on loopback HTTP as the model provider."""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import Awaitable, Callable

import pytest
from e2e_support import fast_model, serve
from fixtures_sim import SimFactory
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

from tandem.sim.runner import SimHandle, SimSettings

pytestmark = pytest.mark.e2e

TRUTH = '''"""A small module: the ground truth the simulator answers from."""


def fibonacci(n):
    if n < 2:
        return n
    return fibonacci(n - 1) + fibonacci(n - 2)


def greet(name):
    banner = "héllo — 日本 🎉"; label = name.title() + banner
    return label


class Counter:
    def __init__(self):
        self.count = 0

    def increment(self, step=1):
        self.count += step
        return self.count
'''


def _cut(marker: str) -> tuple[str, str]:
    """The document text up to and including `marker`, and the rest of the truth after it."""
    end = TRUTH.index(marker) + len(marker)
    return TRUTH[:end], TRUTH[end:]


@pytest.fixture
def truth_file(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "truth" / "sample.py"
    path.parent.mkdir()
    path.write_text(TRUTH)
    return path


@pytest.fixture
def sim(truth_file: pathlib.Path, sim_factory: SimFactory) -> SimHandle:
    handle = sim_factory(profile="spark", ttft_ms=5, truth=(str(truth_file),))
    return handle


@pytest.fixture
def slow_sim(truth_file: pathlib.Path, sim_factory: SimFactory) -> SimHandle:
    # Long enough that a request is still waiting when the test cancels or supersedes it.
    handle = sim_factory(profile="codex", ttft_ms=3000, truth=(str(truth_file),))
    return handle


@pytest.mark.parametrize("client", ["vscode", "neovim"])
async def test_inline_completion_is_the_true_continuation(tmp_path: pathlib.Path, sim: SimHandle, client: str) -> None:
    before, _ = _cut("return fibonacci(n - 1) + ")
    async with serve(tmp_path, client, options=fast_model(sim.base_url)) as session:
        uri = session.open("sample.py", before)
        assert await session.inline(uri, session.position_at_end(before)) == "fibonacci(n - 2)"
        # The request's record is written when the stream behind it ends (with the provider's usage).
        await _until(lambda: any(r["outcome"] == "shown" for r in session.records()))
    [record] = [r for r in session.records() if r["outcome"] == "shown"]
    assert record["source"] == "model" and record["mode"] == "single"
    assert record["tokens"]["out"] > 0 and record["tokens"]["in"] > 0
    for phase in ("request_sent", "first_token", "first_line", "answered", "done"):
        assert phase in record["ms"], phase
    assert sim.stats()["last_request"]["had_authorization"] is False  # no api_key_env configured


@pytest.mark.parametrize("client", ["vscode", "neovim", "helix", "eglot"])
async def test_completion_item_inserts_full_text_with_negotiated_positions(
    tmp_path: pathlib.Path, sim: SimHandle, client: str
) -> None:
    # The cursor sits after multi-byte characters: utf-8 (Helix, Neovim) and utf-16 columns differ here.
    before, _ = _cut('banner = "héllo — 日本 🎉"; label = name.ti')
    async with serve(tmp_path, client, options=fast_model(sim.base_url)) as session:
        expected_encoding = {"vscode": "utf-16", "neovim": "utf-8", "helix": "utf-8", "eglot": "utf-16"}[client]
        assert session.encoding == expected_encoding
        uri = session.open("sample.py", before)
        cursor = session.position_at_end(before)
        result = await session.client.text_document_completion_async(
            types.CompletionParams(text_document=types.TextDocumentIdentifier(uri=uri), position=cursor)
        )
    assert isinstance(result, types.CompletionList)
    [item] = result.items
    assert isinstance(item.text_edit, types.TextEdit)
    assert item.text_edit.new_text == "title() + banner"
    word_start = before.rsplit("\n", 1)[1][: -len("ti")]
    assert item.text_edit.range.start == types.Position(line=cursor.line, character=session.units(word_start))
    assert item.text_edit.range.end == cursor


async def test_multi_line_completion_answers_a_block(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    before, _ = _cut("def increment(self, step=1):")
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url)) as session:
        uri = session.open("sample.py", before + "\n")
        text = await session.inline(uri, session.position_at_end(before))
    assert text == "\n        self.count += step\n        return self.count"


async def test_typing_through_a_suggestion_is_served_from_the_stream(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    before, _ = _cut("return fibonacci(n - 1) + ")
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url)) as session:
        uri = session.open("sample.py", before)
        cursor = session.position_at_end(before)
        assert await session.inline(uri, cursor) == "fibonacci(n - 2)"
        session.insert(uri, cursor, "fib")
        moved = types.Position(line=cursor.line, character=cursor.character + 3)
        assert await session.inline(uri, moved) == "onacci(n - 2)"
        requests_to_model = sim.stats()["requests"].get("chat.completions", 0)
    assert requests_to_model == 1
    reused = [r for r in session.records() if r["source"] == "stream"]
    assert len(reused) == 1 and reused[0]["waited_for_model"] is False and reused[0]["outcome"] == "shown"


async def test_cancel_request_is_answered_and_the_next_request_works(
    tmp_path: pathlib.Path, slow_sim: SimHandle
) -> None:
    before, _ = _cut("return fibonacci(n - 1) + ")
    async with serve(tmp_path, "vscode", options=fast_model(slow_sim.base_url)) as session:
        uri = session.open("sample.py", before)
        cursor = session.position_at_end(before)
        protocol = session.client.protocol
        pending = asyncio.ensure_future(
            protocol.send_request_async(
                types.TEXT_DOCUMENT_INLINE_COMPLETION, session.inline_params(uri, cursor), msg_id="to-cancel"
            )
        )
        # The server must have the request before the cancel: wait until the sim sees the model call.
        await _until(lambda: slow_sim.stats()["requests"].get("chat.completions", 0) >= 1)
        protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="to-cancel"))
        with pytest.raises(JsonRpcRequestCancelled):
            await pending
        session.insert(uri, cursor, "fib")
        moved = types.Position(line=cursor.line, character=cursor.character + 3)
        assert await session.inline(uri, moved) == "onacci(n - 2)"
    outcomes = [r["outcome"] for r in session.records()]
    assert "cancelled" in outcomes and "shown" in outcomes
    # The cancelled request had started a stream, stopped before the provider reported usage: its record
    # still carries the tokens that stream cost (the prompt it sent), counted by tandem.
    [cancelled] = [r for r in session.records() if r["outcome"] == "cancelled"]
    assert cancelled["source"] == "model" and cancelled["tokens"]["in"] > 0 and cancelled["tokens"]["estimated"]


async def test_newer_request_supersedes_older_which_is_answered_empty(
    tmp_path: pathlib.Path, slow_sim: SimHandle
) -> None:
    before, _ = _cut("return fibonacci(n - 1) + ")
    async with serve(tmp_path, "vscode", options=fast_model(slow_sim.base_url)) as session:
        uri = session.open("sample.py", before)
        cursor = session.position_at_end(before)
        older = asyncio.ensure_future(session.inline(uri, cursor))
        await _until(lambda: slow_sim.stats()["requests"].get("chat.completions", 0) >= 1)
        newer = asyncio.ensure_future(session.inline(uri, cursor))
        done, _ = await asyncio.wait({older, newer}, return_when=asyncio.FIRST_COMPLETED)
        assert older in done and older.result() == ""
        assert await newer == "fibonacci(n - 2)"
    assert [r["outcome"] for r in session.records()].count("superseded") == 1


@pytest.mark.parametrize("fault", ["truncate", "malformed", "500", "reset", "stall"])
async def test_provider_fault_ends_one_completion_and_the_next_works(
    tmp_path: pathlib.Path, sim: SimHandle, fault: str
) -> None:
    before, _ = _cut("return fibonacci(n - 1) + ")
    # A short read timeout so the stall is detected quickly.
    options = fast_model(sim.base_url, timeout_s=1.0)
    async with serve(tmp_path, "neovim", options=options) as session:
        uri = session.open("sample.py", before)
        cursor = session.position_at_end(before)
        sim.arm_fault(fault, 1)
        await session.inline(uri, cursor)  # whatever survives the fault, the server must answer
        await _until(lambda: any(r["error"] for r in session.records()))
        session.insert(uri, cursor, "f")
        moved = types.Position(line=cursor.line, character=cursor.character + 1)
        assert await session.inline(uri, moved) == "ibonacci(n - 2)"
    assert sim.stats()["faults_fired"] == {fault: 1}


async def test_rate_limit_is_honoured_then_completions_resume(
    tmp_path: pathlib.Path, truth_file: pathlib.Path, sim_factory: SimFactory
) -> None:
    before, _ = _cut("return fibonacci(n - 1) + ")
    # Retry-After beyond the backend's one quick retry: tandem must hold off, not hammer the provider.
    settings = SimSettings(ttft_ms=5, truth=(str(truth_file),), retry_after_s=2)
    sim = sim_factory(settings)
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url)) as session:
        uri = session.open("sample.py", before)
        cursor = session.position_at_end(before)
        sim.arm_fault("429", 1)
        assert await session.inline(uri, cursor) == ""
        calls = sim.stats()["requests"].get("chat.completions", 0)
        assert await session.inline(uri, cursor) == ""  # inside Retry-After: not sent
        assert sim.stats()["requests"].get("chat.completions", 0) == calls
        answers: list[str] = []

        async def answered() -> bool:
            answers.append(await session.inline(uri, cursor))
            return answers[-1] != ""

        await _until_async(answered)
        assert answers[-1] == "fibonacci(n - 2)"
    errors = [r["error"] for r in session.records() if r["error"]]
    assert any("rate limited" in e for e in errors), errors


async def _until(condition: object, *, attempts: int = 500) -> None:
    """Wait for a condition another process makes true, yielding to the loop between checks."""
    assert callable(condition)
    for _ in range(attempts):
        if condition():
            return
        await asyncio.sleep(0.01)  # sleep-ok: polling another process's counter, bounded
    raise AssertionError("condition never became true")


async def _until_async(condition: Callable[[], Awaitable[bool]], *, attempts: int = 100) -> None:
    for _ in range(attempts):
        if await condition():
            return
        await asyncio.sleep(0.1)  # sleep-ok: re-asking a server that is waiting out Retry-After
    raise AssertionError("condition never became true")


async def test_logs_reach_the_client_at_their_own_level(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    """`serve --log-to-client` (the VS Code extension's launch): INFO arrives as Info, WARNING as Warning,
    without a timestamp of its own (the editor stamps its lines)."""
    extra = ["--log-to-client"]
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url), extra_args=extra) as session:
        await session.inline((session.root / "missing.py").as_uri(), types.Position(line=0, character=0))
        await _until(lambda: len(session.client.log_messages) >= 2)
        logged = {(m.type, m.message.split(":", 1)[0]): m.message for m in session.client.log_messages}
    started = logged[types.MessageType.Info, "tandem.lsp.handlers.lifecycle"]
    assert started.startswith("tandem.lsp.handlers.lifecycle: tandem serving code-server (utf-16) in ")
    assert "fast model openai-chat sim-spark @ 127.0.0.1:" in started and "no accurate model" in started
    assert (types.MessageType.Warning, "tandem.lsp.completing") in logged
