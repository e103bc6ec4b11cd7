"""`tandem serve` with its fast model on the Responses API's WebSocket mode (`transport = "websocket"`),
against the simulator over a real loopback socket: completions arrive as over HTTP, the second one in the
document continues from the first, and the trace says so."""

from __future__ import annotations

import pathlib

import pytest
from e2e_support import serve
from fixtures_sim import SimFactory
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


async def test_completions_over_a_websocket_continue_in_one_document(
    tmp_path: pathlib.Path, sim_factory: SimFactory
) -> None:
    truth = tmp_path / "truth" / "summary.py"
    truth.parent.mkdir()
    truth.write_text(TRUTH)
    sim = sim_factory(profile="spark", ttft_ms=5, truth=(str(truth),))
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
    assert connections in (1, 2)  # opened at initialize (and one more only if a request beat the warm-up)


async def test_an_edit_on_the_accurate_model_over_a_websocket(tmp_path: pathlib.Path, sim_factory: SimFactory) -> None:
    """The accurate tier on the WebSocket transport: a multi-file rename goes to it, is answered over the
    socket opened at initialize, and is applied in every file (an edit is a conversation: sent in full)."""
    from test_e2e_edits import MODELS, URLS, VIEWS, Editor, execute, set_truth, whole

    renamed = {
        "models.py": MODELS.replace("compute_total", "invoice_total"),
        "views.py": VIEWS.replace("compute_total", "invoice_total"),
        "urls.py": URLS.replace("compute_total", "invoice_total"),
    }
    fast = sim_factory(profile="spark", ttft_ms=5)
    accurate = sim_factory(profile="codex", ttft_ms=5, tokens_per_s=50_000.0)
    set_truth(accurate, renamed)
    models = {
        "fast": {"provider": "openai-chat", "base_url": fast.base_url, "model": "sim-spark"},
        "accurate": {
            "provider": "openai-responses",
            "base_url": accurate.base_url,
            "model": "sim-codex",
            "transport": "websocket",
        },
    }
    # Every edit hedged (the default before the router's bands), so that both transports are seen.
    hedged = {"strategy": "banded", "hedge_from": 0.0, "accurate_from": 1.01}
    async with serve(tmp_path, "vscode", options={"models": models, "edit": hedged}) as session:
        editor = Editor(session)
        uris = {name: editor.open(name, text) for name, text in (("models.py", MODELS), ("views.py", VIEWS))}
        uris["urls.py"] = editor.open("urls.py", URLS)
        result = await execute(
            session,
            {
                "uri": uris["models.py"],
                "range": whole(MODELS),
                "instruction": "rename compute_total to invoice_total",
            },
        )
        assert result["applied"] is True and result["tier"] == "accurate", result
        for name, uri in uris.items():
            assert editor.texts[uri] == renamed[name], name
        await _until(lambda: any(r["kind"] == "edit" for r in session.records()))
    turns = accurate.stats()["requests"]
    [record] = [r for r in session.records() if r["kind"] == "edit"]
    assert record["transport"]["kind"] == "websocket" and record["transport"]["continuation"] == "full"
    # Both models were asked at once (hedged); the record's transport is the one of the answer used.
    assert {(a["tier"], a["transport"], a["used"]) for a in record["edit"]["attempts"]} == {
        ("fast", "http", False),
        ("accurate", "websocket", True),
    }
    # The socket warmed at initialize (a second only if the edit beat the warm-up turn); nothing over HTTP.
    assert turns.get("responses.websocket.connect", 0) in (1, 2) and "responses" not in turns
    assert turns.get("responses.websocket") == 2  # the generate: false turn and the edit
