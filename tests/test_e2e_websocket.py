"""`tandem serve` with its fast model on the Responses API's WebSocket mode (`transport = "websocket"`),
against the simulator over a real loopback socket: completions arrive as over HTTP, the second one in the
document continues from the first, and the trace says so."""

from __future__ import annotations

import pathlib

import pytest
from e2e_support import serve
from tandem.sim.runner import start_in_thread
from tandem.sim.settings import SimSettings
from test_e2e_server import _until

pytestmark = pytest.mark.e2e

# A file long enough that an edit of its prompt is much shorter than the prompt, as real files are.
HELPERS = "".join(f"def helper_{n}(value):\n    return value + {n}\n\n\n" for n in range(40))
BODY = """def summarise(values):
    total = 0
    count = len(values)
    return total, count
"""
TRUTH = HELPERS + BODY


async def test_completions_over_a_websocket_continue_in_one_document(tmp_path: pathlib.Path) -> None:
    truth = tmp_path / "truth" / "summary.py"
    truth.parent.mkdir()
    truth.write_text(TRUTH)
    with start_in_thread(SimSettings(profile="spark", ttft_ms=5, truth=(str(truth),))) as sim:
        fast = {
            "provider": "openai-responses",
            "base_url": sim.base_url,
            "model": "sim-spark",
            "transport": "websocket",
        }
        # Every keystroke asks the model (no cache reuse, no prefetch): two turns in a row in one document.
        options = {"models": {"fast": fast}, "cache": {"reuse": "off"}, "prefetch": {"enabled": False}}
        async with serve(tmp_path, "vscode", options=options) as session:
            before = TRUTH[: TRUTH.index("total = ") + len("total = ")]
            uri = session.open("summary.py", before)
            assert await session.inline(uri, session.position_at_end(before)) == "0"
            # The first turn's record is written when its stream ends, which gives its connection back
            # holding the response: only then may the next turn continue from it (typing on while the
            # first is still streaming supersedes it, and the next goes in full on the pool's other socket).
            await _until(lambda: sum(r["outcome"] == "shown" for r in session.records()) == 1)
            # The user accepts and types on to the next line's "=".
            typed = "0\n    count = "
            session.insert(uri, session.position_at_end(before), typed)
            assert await session.inline(uri, session.position_at_end(before + typed)) == "len(values)"
            await _until(lambda: sum(r["outcome"] == "shown" for r in session.records()) == 2)
        connections = sim.stats()["requests"].get("responses.websocket.connect", 0)
    first, second = [r for r in session.records() if r["outcome"] == "shown"]
    assert first["transport"]["kind"] == second["transport"]["kind"] == "websocket"
    assert first["transport"]["continuation"] == "full"
    assert second["transport"]["continuation"] == "continued" and second["transport"]["reused"] is True
    assert 0 < second["transport"]["bytes_sent"] < first["transport"]["bytes_sent"] / 2
    assert 1 <= connections <= 2  # opened at initialize (and one more only if a request beat the warm-up)
