"""`tandem/warm`: the editor says where the cursor rests before the user types, and a model on this machine
reads the prompt there meanwhile, so the file's first key is answered from what was read, without a model
wait. A cloud model is not asked (it would be paid for a guess): the same notification to a cloud tier
starts nothing, and the first key waits for a model as before."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from e2e_support import fast_model, serve
from lsprotocol import types
from test_e2e_server import _until

pytestmark = pytest.mark.e2e

TRUTH = "def add(a, b):\n    return a + b\n"
DOCUMENT = "def add(a, b):\n    return \n"
WARM_REASON = "prefetch: the prompt where the cursor rests"


@pytest.mark.parametrize("local", [True, False], ids=["local", "cloud"])
async def test_a_resting_cursor_has_a_model_on_this_machine_read_its_prompt(
    tmp_path: pathlib.Path, sim_factory: Any, local: bool
) -> None:
    (tmp_path / "truth").mkdir()
    (tmp_path / "truth" / "calc.py").write_text(TRUTH)
    sim = sim_factory(
        profile="llama-0.5b", ttft_ms=5.0, tokens_per_s=2000.0, error_rate=0.0, truth=(str(tmp_path / "truth"),)
    )
    options = fast_model(sim.base_url, model="sim-llama-0.5b", local=local)
    async with serve(tmp_path, "vscode", options=options) as session:
        uri = session.open("calc.py", DOCUMENT)
        cursor = types.Position(line=1, character=11)
        session.client.protocol.notify(
            "tandem/warm", {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 11}}
        )
        if local:
            # The read-ahead ends (its record is written when its stream ends) before the user types.
            await _until(lambda: any(WARM_REASON in r.get("route_reasons", []) for r in session.records()))
        assert await session.inline(uri, cursor) == "a + b"
        await _until(lambda: any(r.get("kind") == "inline" for r in session.records()))
        records = session.records()
    [first_key] = [r for r in records if r.get("kind") == "inline"]
    warmed = [r for r in records if WARM_REASON in r.get("route_reasons", [])]
    if local:
        assert len(warmed) == 1 and warmed[0]["kind"] == "prefetch", warmed
        assert (first_key["source"], first_key["prefetched"], first_key["waited_for_model"]) == ("stream", True, False)
    else:
        assert warmed == []
        assert (first_key["source"], first_key["waited_for_model"]) == ("model", True)
