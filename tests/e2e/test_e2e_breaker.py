"""A provider that refuses tandem's key: the user is told once (window/showMessage and window/logMessage,
so Helix without a plugin sees it in its log too), and the provider is left alone while the user types on.
A provider that fails and comes back: the outage is told once, and its end once."""

from __future__ import annotations

import asyncio
import pathlib

import pytest
from e2e_support import Session, fast_model, serve
from fixtures_sim import SimFactory
from lsprotocol import types
from test_e2e_server import _until

pytestmark = pytest.mark.e2e

BODY = b'{"error": {"message": "Incorrect API key provided"}}'
RESPONSE = b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
    len(BODY),
    BODY,
)


class Refusing:
    """A provider on loopback that answers 401 to everything, counting requests."""

    def __init__(self) -> None:
        self.requests = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:")), 0
                )
                await reader.readexactly(length)
                if not head.startswith(b"GET"):  # the warm-up probe is not a completion
                    self.requests += 1
                writer.write(RESPONSE)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def test_refused_key_is_announced_once_and_the_provider_left_alone(tmp_path: pathlib.Path) -> None:
    provider = Refusing()
    server = await asyncio.start_server(provider.handle, "127.0.0.1", 0)
    base_url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    try:
        async with serve(tmp_path, "helix", options=fast_model(base_url)) as session:
            text = "def fibonacci(n):\n    return n\n"
            typist = Typist(session, session.open("a.py", ""))
            await typist.type(text[:10])
            await _until(lambda: any("refuses" in m.message for m in session.client.messages))
            after_notice = provider.requests
            await typist.type(text[10:])
            shown = [m.message for m in session.client.messages if "refuses" in m.message]
            logged = [m.message for m in session.client.log_messages if "refuses" in m.message]
    finally:
        server.close()
    assert len(shown) == 1 and len(logged) == 1 and "401" in shown[0]
    assert provider.requests == after_notice  # nothing more while the back-off runs
    assert provider.requests <= 5


class Typist:
    """Types at the end of one document (a didChange per character), asking for a completion after each."""

    def __init__(self, session: Session, uri: str) -> None:
        self.session, self.uri = session, uri
        self.line = self.character = 0

    async def type(self, chars: str) -> None:
        for char in chars:
            self.session.insert(self.uri, types.Position(line=self.line, character=self.character), char)
            self.line, self.character = (self.line + 1, 0) if char == "\n" else (self.line, self.character + 1)
            await self.session.client.text_document_completion_async(
                types.CompletionParams(
                    text_document=types.TextDocumentIdentifier(uri=self.uri),
                    position=types.Position(line=self.line, character=self.character),
                )
            )


async def test_an_outage_and_its_end_are_told_once_each(tmp_path: pathlib.Path, sim_factory: SimFactory) -> None:
    """The provider answers 500 until the fault is cleared: after a few failures in a row the user is told
    it cannot be reached (once, however long the typing goes on); the first request after its back-off
    that succeeds ends the outage, which is told once too."""
    sim = sim_factory(profile="instant")
    sim.arm_fault("500", 1000)
    async with serve(tmp_path, "helix", options=fast_model(sim.base_url)) as session:
        typist = Typist(session, session.open("a.py", ""))
        down = "cannot be reached"
        while not any(down in m.message for m in session.client.messages):
            await typist.type("x")
        await typist.type("y" * 5)
        sim.clear_faults()
        back = "answering again"
        while not any(back in m.message for m in session.client.messages):
            await typist.type("z")
        await typist.type("w" * 5)
        shown = [m.message for m in session.client.messages]
        logged = [m.message for m in session.client.log_messages]
    for words in (down, back):
        assert sum(words in m for m in shown) == 1, shown
        assert sum(words in m for m in logged) == 1, logged
    assert shown.index(next(m for m in shown if down in m)) < shown.index(next(m for m in shown if back in m))


async def test_edits_trip_the_breaker_and_then_leave_the_refusing_model_alone(
    tmp_path: pathlib.Path, sim_factory: SimFactory
) -> None:
    """Edits read a model through the same tier path as completions: the fast provider refusing the key
    opens its breaker (the user is told once), the accurate model serves the edit, and the next edit asked
    of the fast model does not reach the fast provider while its breaker is open."""
    from test_e2e_edits import SAMPLE, SAMPLE_TYPED, Editor, _sim, set_truth

    provider = Refusing()
    server = await asyncio.start_server(provider.handle, "127.0.0.1", 0)
    fast_url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    try:
        accurate = sim_factory(_sim("codex"))
        set_truth(accurate, {"invoice.py": SAMPLE_TYPED})
        models = {
            "fast": {"provider": "openai-chat", "base_url": fast_url, "model": "sim-spark"},
            "accurate": {"provider": "openai-chat", "base_url": accurate.base_url, "model": "sim-codex"},
        }
        async with serve(tmp_path, "vscode", options={"models": models}) as session:
            editor = Editor(session)
            uri = editor.open("invoice.py", SAMPLE)
            results = []
            for _ in range(2):
                argument = {
                    "uri": uri,
                    "range": {"start": {"line": 3, "character": 0}, "end": {"line": 8, "character": 0}},
                    "instruction": "Add type hints.",
                    "model": "fast",
                }
                results.append(
                    await session.client.workspace_execute_command_async(
                        types.ExecuteCommandParams(command="tandem.edit", arguments=[argument])
                    )
                )
                if len(results) == 1:
                    asked_by_first = provider.requests
                    editor.type(uri, SAMPLE)  # the user puts the text back for the second edit
            records = [r for r in session.records() if r["kind"] == "edit"]
            shown = [m.message for m in session.client.messages if "refuses tandem's requests" in m.message]
    finally:
        server.close()
    assert asked_by_first == 1  # the first edit asked the fast provider once, and its 401 opened the breaker
    assert provider.requests == asked_by_first  # the second edit did not reach it
    assert [r["tier"] for r in records] == ["accurate", "accurate"], records
    assert all(result["applied"] for result in results), results
    first_tries, second_tries = (r["edit"]["attempts"] for r in records)
    assert [a["tier"] for a in first_tries] == ["fast", "accurate"]
    assert "401" in first_tries[0]["error"]
    assert [a["tier"] for a in second_tries] == ["fast", "accurate"]
    assert second_tries[0]["outcome"] == "unavailable" and "fast model refuses requests" in second_tries[0]["error"]
    assert len(shown) == 1, shown  # the outage is told once
