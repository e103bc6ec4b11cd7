"""Next edits from a model on the user's machine (`local = true`): one rewrite at a time.

A local server (llama.cpp's `llama-server -np 1`, here the simulator's `llama-0.5b` profile: one slot, the
prompt read at ~120 tokens/s) reads one prompt at a time. A cloud model's next edit asks again beside a
rewrite that is still a model's time behind the user's newest key (whichever has a hunk first answers); to
a local server that second request only queues behind the first, and the next key cancels it unread (a
real 0.5B on black's history: 578 of 584 requests so, none answered). So a local tier never asks beside
one under way: a new key waits for the rewrite under way to agree or not, and a replaced rewrite still
being read stops at its first token rather than being dropped mid-prompt.

The same typing against the same simulator with `local = false` does ask beside (the scenario does make
the race), so the check below can fail."""

from __future__ import annotations

import asyncio
import pathlib
from typing import Any

import pytest
from e2e_support import Session, fast_model, serve
from lsprotocol import types
from test_e2e_server import _until

from tandem.sim.runner import SimHandle

pytestmark = pytest.mark.e2e

BEFORE = "def area(w, h):\n    scale = 1\n    return w * h * scale\n\n\nprint(area(2, 3))\n"
TRUTH = "def area(width, h):\n    scale = 1\n    return width * h * scale\n\n\nprint(area(2, 3))\n"


async def _type_and_ask(session: Session) -> list[dict[str, Any]]:
    """Type "idth" after the parameter's "w", asking for the next edit after each key without waiting for
    the answer (as VS Code does), then wait for the last ask: the trace's next-edit records."""
    uri = session.open("sample.py", BEFORE)
    asks = []
    for i, ch in enumerate("idth"):
        session.insert(uri, types.Position(line=0, character=10 + i), ch)
        asks.append(
            asyncio.ensure_future(
                session.client.protocol.send_request_async(
                "textDocument/copilotInlineEdit",
                    {"textDocument": {"uri": uri, "version": 2 + i}, "position": {"line": 0, "character": 11 + i}},
                )
            )
        )
        # sleep-ok: the user pauses past the debounce between keys (the pause is what is typed); the first
        # prompt takes the simulated server seconds to read.
        await asyncio.sleep(0.8)  # sleep-ok: a typist's pause
    await asyncio.gather(*asks)
    # An answered ask's record is written once its fate is known: closing the file settles it.
    session.client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await _until(lambda: len([r for r in session.records() if r.get("kind") == "next_edit"]) >= 4)
    return [r for r in session.records() if r.get("kind") == "next_edit"]


@pytest.mark.parametrize("local", [True, False], ids=["local", "cloud"])
async def test_a_local_model_gets_one_next_edit_request_at_a_time(
    tmp_path: pathlib.Path, sim_factory: Any, local: bool
) -> None:
    sim: SimHandle = sim_factory(profile="llama-0.5b", ttft_ms=5.0, tokens_per_s=2000.0)
    sim.set_next_edit_truth({"sample.py": TRUTH})
    options = fast_model(sim.base_url, model="sim-llama-0.5b", local=local)
    async with serve(tmp_path, "vscode", options=options) as session:
        records = await _type_and_ask(session)
    hedged = [r for r in records if r["next_edit"].get("hedged")]
    if local:
        assert hedged == [], [r["outcome"] for r in hedged]
        # The keys after the first were answered from (or waited on) the rewrite under way.
        assert any(r["next_edit"].get("rebased_from") for r in records), records
    else:
        assert hedged, "the cloud tier did not ask beside a rewrite behind the user: the scenario made no race"
