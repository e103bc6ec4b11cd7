"""Next edits on input that does not fit: long lines and answers cut short, end to end (`tandem serve` over
stdio, the simulator over loopback HTTP).

A minified line of 700 KB must never be sent in a region (its rewrite could not fit an answer, and the
prompt would be hundreds of thousands of tokens); a cursor on such a line asks nothing and says why. An
answer the provider cut at `max_tokens` ends mid-region: read as the whole rewrite, its missing tail is a
suggestion to delete the rest of the region."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from e2e_support import Session, fast_model, serve
from fixtures_sim import SimFactory
from lsprotocol import types
from test_e2e_next_edit import TRUTH, _apply, _as_dict, _type_rename
from test_e2e_server import _until

from tandem.sim.runner import SimHandle

pytestmark = pytest.mark.e2e

# A bundle's one long line between two short ones.
LONG = "var a = [" + ",".join(str(i) for i in range(120_000)) + "];"
BUNDLE = f"x = 1\n{LONG}\ny = 2\n"
# Room for the prompt whatever its size: only the next edit's own limits stand in the way.
UNLIMITED = {"prefetch": {"tokens_per_minute": 100_000_000}}


@pytest.fixture
def sim(sim_factory: SimFactory) -> SimHandle:
    handle = sim_factory(profile="spark", ttft_ms=20, error_rate=0.0)
    handle.set_next_edit_truth({"sample.py": TRUTH, "bundle.js": BUNDLE.replace("x = 1", "x = 10")})
    return handle


async def _ask(session: Session, uri: str, version: int, line: int, character: int) -> list[dict[str, Any]]:
    result = await session.client.protocol.send_request_async(
        "textDocument/copilotInlineEdit",
        {"textDocument": {"uri": uri, "version": version}, "position": {"line": line, "character": character}},
    )
    edits: list[dict[str, Any]] = _as_dict(result)["edits"]
    return edits


def _next_edit_records(session: Session) -> list[dict[str, Any]]:
    return [r for r in session.records() if r.get("kind") == "next_edit"]


async def test_a_long_line_is_never_sent_in_a_region(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    async with serve(tmp_path, "vscode", options={**fast_model(sim.base_url), **UNLIMITED}) as session:
        uri = session.open("bundle.js", BUNDLE, language="javascript")
        session.insert(uri, types.Position(line=0, character=5), "0")  # x = 1 -> x = 10
        # The cursor next to the long line: the region leaves it out, and the prompt stays in its budget.
        suggested = await _ask(session, uri, 2, 0, 6)
        asked = sim.stats()["last_request"]
        assert asked is not None and asked["prompt_tokens"] < 2048, asked
        assert all(edit["range"]["end"]["line"] < 1 or edit["range"]["start"]["line"] > 1 for edit in suggested)
        # The cursor on the long line: nothing is asked, and the trace says why.
        before = sim.stats()["requests_total"]
        session.insert(uri, types.Position(line=1, character=8), " ")
        assert await _ask(session, uri, 3, 1, 9) == []
        too_long = "longer than a next edit can rewrite"
        await _until(lambda: any(too_long in r["error"] for r in _next_edit_records(session)))
        [skipped] = [r for r in _next_edit_records(session) if too_long in r["error"]]
        assert skipped["outcome"] == "skipped" and skipped["source"] == "none"
        assert sim.stats()["requests_total"] == before
        # The server goes on serving: another document's next edit is answered as ever.
        other, text, _ = await _type_rename(session)
        [edit] = await _ask(session, other, session._next_version, 0, 14)  # one version count for all documents
        assert _apply(text, edit).split("\n")[1] == TRUTH.split("\n")[1]


# Nothing follows the user's change (the truth is what the user has): a whole rewrite is the region as it
# is, and one cut short is its first lines only.
COUNTS = "".join(f"{name} = {n}\n" for n, name in enumerate("abcdefgh", start=1))
COUNTED = COUNTS.replace("a = 1", "a = 10")


@pytest.mark.parametrize("max_tokens", [24, 32])
async def test_an_answer_cut_at_max_tokens_never_deletes_the_rest_of_the_region(
    tmp_path: pathlib.Path, sim: SimHandle, max_tokens: int
) -> None:
    sim.set_next_edit_truth({"counts.py": COUNTED})
    options = {**fast_model(sim.base_url), "next_edit": {"max_tokens": max_tokens, "split": False}}
    async with serve(tmp_path, "vscode", options=options) as session:
        uri = session.open("counts.py", COUNTS)
        session.insert(uri, types.Position(line=0, character=5), "0")
        suggested = await _ask(session, uri, 2, 0, 6)
        # The simulator's rewrite of the region was cut at `max_tokens` ...
        stats = sim.stats()
        assert stats["completion_tokens_sent"] == max_tokens and stats["last_request"]["truth_matched"], stats
        # ... and what the model did not get to is no suggestion to delete it.
        assert suggested == [], [_apply(COUNTED, edit) for edit in suggested]
