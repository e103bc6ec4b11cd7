"""One trace record per request, of every kind, end to end (docs/trace.md, "Kinds").

One `tandem serve` session over stdio does what an editor does in a minute: inline completions (a new
model request and typed-through ones), an accepted suggestion (which prefetches what follows), a menu
completion, a next edit and an edit over a range. The trace must then hold exactly one record for each
request the client sent, of its kind, and one record for every model request the simulator received:
no request goes unrecorded and none is recorded twice."""

from __future__ import annotations

import pathlib
from collections import Counter
from typing import Any

import pytest
from e2e_support import serve
from fixtures_sim import SimFactory
from lsprotocol import types
from test_e2e_edits import Editor, execute, set_truth, whole
from test_e2e_server import TRUTH, _cut, _until

from tandem.sim.runner import SimHandle

pytestmark = pytest.mark.e2e

AREA = 'def area(w, h):\n    """Area of a w by h rectangle."""\n    return w * h\n'
AREA_NEXT = 'def area(width, h):\n    """Area of a width by h rectangle."""\n    return width * h\n'
INVOICE = "def total(items):\n    return sum(items)\n"
INVOICE_EDITED = "def total(items: list[float]) -> float:\n    return sum(items)\n"


@pytest.fixture
def sim(tmp_path: pathlib.Path, sim_factory: SimFactory) -> SimHandle:
    truth = tmp_path / "truth" / "sample.py"
    truth.parent.mkdir()
    truth.write_text(TRUTH)
    handle = sim_factory(profile="spark", ttft_ms=5, error_rate=0.0, truth=(str(truth),))
    handle.set_next_edit_truth({"area.py": AREA_NEXT})
    set_truth(handle, {"invoice.py": INVOICE_EDITED})
    return handle


def _model_requests(sim: SimHandle) -> int:
    return int(sim.stats()["requests"].get("chat.completions", 0))


def _asked_a_model(record: dict[str, Any]) -> int:
    """How many model requests a record stands for (an edit's attempts each asked one)."""
    if record["kind"] == "edit":
        return len(record["edit"]["attempts"])
    return int(record["source"] == "model" and record["ms"].get("request_sent") is not None)


async def test_every_request_of_every_kind_leaves_exactly_one_record(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    options = {
        "models": {
            "fast": {"provider": "openai-chat", "base_url": sim.base_url, "model": "sim-spark", "max_tokens": 8},
            "accurate": {"provider": "openai-chat", "base_url": sim.base_url, "model": "sim-codex"},
        }
    }
    sent: Counter[str] = Counter()
    async with serve(tmp_path, "vscode", options=options) as session:
        editor = Editor(session)
        # Inline: a new model request, then two keystrokes typed through its stream.
        before, _ = _cut("return fibonacci(n - 1) + ")
        uri = session.open("sample.py", before)
        cursor = session.position_at_end(before)
        result = await session.client.text_document_inline_completion_async(session.inline_params(uri, cursor))
        sent["inline"] += 1
        assert isinstance(result, types.InlineCompletionList)
        [item] = result.items
        assert item.insert_text == "fibonacci(n - 2)" and item.command is not None
        for typed in ("f", "i"):
            session.insert(uri, cursor, typed)
            cursor = types.Position(line=cursor.line, character=cursor.character + 1)
            assert await session.inline(uri, cursor)
            sent["inline"] += 1
        # Accept: the rest goes in, the item's command reports it (and a prefetch starts).
        session.insert(uri, cursor, "bonacci(n - 2)")
        await session.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=item.command.command, arguments=item.command.arguments)
        )
        sent["accept"] += 1
        await _until(lambda: any(r["kind"] == "prefetch" for r in session.records()))
        # A menu completion (textDocument/completion), on the next line.
        end = types.Position(line=cursor.line, character=cursor.character + len("bonacci(n - 2)"))
        session.insert(uri, end, "\n")
        menu = await session.client.text_document_completion_async(
            types.CompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=end.line + 1, character=0),
            )
        )
        sent["completion"] += 1
        assert isinstance(menu, types.CompletionList)
        # A next edit, after the user's own change.
        area = session.open("area.py", AREA)
        for i, ch in enumerate("idth"):
            session.insert(area, types.Position(line=0, character=10 + i), ch)
        version = session._next_version  # the last version the client sent
        answer = await session.client.protocol.send_request_async(
            "textDocument/copilotInlineEdit",
            {"textDocument": {"uri": area, "version": version}, "position": {"line": 0, "character": 14}},
        )
        sent["next_edit"] += 1
        assert answer.edits if hasattr(answer, "edits") else answer["edits"], answer
        # An edit over a range.
        invoice = editor.open("invoice.py", INVOICE)
        done = await execute(session, {"uri": invoice, "range": whole(INVOICE), "instruction": "add type hints"})
        sent["edit"] += 1
        assert done["applied"] is True, done
        # Closing the documents settles every suggestion's fate (next edits are written then).
        for closed in (uri, area, invoice):
            session.client.text_document_did_close(
                types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=closed))
            )
        # Streams end in the background: wait until every model request the simulator saw has its record.
        await _until(lambda: sum(_asked_a_model(r) for r in session.records()) >= _model_requests(sim), attempts=1000)
        await _until(lambda: Counter(r["kind"] for r in session.records())["next_edit"] >= sent["next_edit"])
        records = session.records()
    kinds = Counter(r["kind"] for r in records)
    prefetches = kinds.pop("prefetch")
    assert prefetches >= 1
    assert kinds == sent, (kinds, sent)
    assert len({r["id"] for r in records}) == len(records), "a request was recorded twice"
    # Ids are handed out as records are made: each one made was written, none was left unwritten.
    assert sorted(int(r["id"][1:]) for r in records) == list(range(1, len(records) + 1))
    assert sum(_asked_a_model(r) for r in records) == _model_requests(sim)
    assert {r["schema"] for r in records} == {1}
