"""Next edits carried over the user's newer keys, end to end (`tandem serve` over stdio, the simulator
answering from the real next change): the rewrite asked for at the first key of a change serves every key
after it while it agrees with them, so the change's end finds the next change already streamed; a rewrite
that disagrees with what the user typed is never shown over it, and a new request is made."""

from __future__ import annotations

import asyncio
import pathlib

import pytest
from e2e_support import Session, fast_model, serve
from fixtures_sim import SimFactory
from lsprotocol import types
from test_e2e_next_edit import BEFORE, TRUTH, _apply, _ask, _change
from test_e2e_server import _until

from tandem.sim.runner import SimHandle

pytestmark = pytest.mark.e2e


def _sim(sim_factory: SimFactory, ttft_ms: float) -> SimHandle:
    handle = sim_factory(profile="spark", ttft_ms=ttft_ms, error_rate=0.0)
    handle.set_next_edit_truth({"sample.py": TRUTH})
    return handle


@pytest.fixture
def sim(sim_factory: SimFactory) -> SimHandle:
    return _sim(sim_factory, 20)


def _model_requests(sim: SimHandle) -> int:
    return int(sim.stats()["requests"].get("chat.completions", 0))


async def _type(session: Session, uri: str, text: str, at: tuple[int, int], version: int) -> list[list[dict]]:
    """Type `text` at `at` key by key, asking for the next edit after each key as an editor does; the
    answers, one list of edits per key."""
    answers = []
    for offset, key in enumerate(text):
        session.insert(uri, types.Position(line=at[0], character=at[1] + offset), key)
        version += 1
        answers.append(await _ask(session, uri, version, at[0], at[1] + offset + 1))
    return answers


async def test_one_request_serves_the_keys_of_a_change_and_the_next_change_follows(
    tmp_path: pathlib.Path, sim: SimHandle
) -> None:
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url)) as session:
        uri = session.open("sample.py", BEFORE)
        answers = await _type(session, uri, "idth", (0, 10), version=1)
        text = BEFORE.replace("def area(w,", "def area(width,")
        # Mid-change, the suggestion is the rest of the word (with the docstring's rename on the next
        # line, in the same hunk); at the change's end, the docstring's rename alone.
        [middle] = answers[1]
        assert middle["text"].startswith("th, h):\n")
        assert _apply(BEFORE.replace("(w,", "(wid,"), middle).split("\n")[:2] == TRUTH.split("\n")[:2]
        [last] = answers[-1]
        assert last["textDocument"]["version"] == 5
        assert _apply(text, last).split("\n")[1] == '    """Area of a width by h rectangle."""'
        # The first key's rewrite answered all four keys: one model request.
        assert _model_requests(sim) == 1
        await _until(lambda: sum(r["kind"] == "next_edit" for r in session.records()) >= 3)
        records = [r for r in session.records() if r["kind"] == "next_edit"]
        [asked] = [r for r in records if r["source"] == "model"]
        rebased = [r for r in records if r["source"] == "rebased"]
        assert rebased and all(r["next_edit"]["rebased_from"] == asked["id"] for r in rebased)
        assert all(r["tokens"]["in"] == 0 for r in rebased) and asked["tokens"]["in"] > 0


async def test_accepting_a_chain_of_edits_asks_the_model_once(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url)) as session:
        uri = session.open("sample.py", BEFORE)
        answers = await _type(session, uri, "idth", (0, 10), version=1)
        text, version = BEFORE.replace("def area(w,", "def area(width,"), 5
        [edit] = answers[-1]
        for _ in range(2):
            text = _apply(text, edit)
            version += 1
            _change(session, uri, version, edit)
            # Counted before the accept: accepting the chain's last edit asks for the change after it (a
            # request of its own, which reaches the model when it reaches it).
            asked_before_accept = _model_requests(sim)
            await session.client.workspace_execute_command_async(
                types.ExecuteCommandParams(command=edit["command"]["command"], arguments=edit["command"]["arguments"])
            )
            if text == TRUTH:
                break
            [edit] = await _ask(session, uri, version, 1, 30)
            assert edit["textDocument"]["version"] == version
        assert text == TRUTH
        # Every edit of the chain, accepted one after the other, came from the first key's rewrite.
        assert asked_before_accept == 1


async def test_a_rewrite_the_user_typed_against_is_not_shown_and_a_new_request_is_made(
    tmp_path: pathlib.Path, sim: SimHandle
) -> None:
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url)) as session:
        uri = session.open("sample.py", BEFORE)
        # The first key agrees with the truth ("w" -> "width"); the second does not ("wix").
        answers = await _type(session, uri, "ix", (0, 10), version=1)
        assert _model_requests(sim) == 2
        text = BEFORE.replace("def area(w,", "def area(wix,")
        for edit in answers[-1]:
            # Nothing answered for "wix" comes from the rewrite made for "wi" (its "dth" after "wi" would
            # read "widthx" now).
            assert "widthx" not in _apply(text, edit)
    # The second key's request tried the first's rewrite (rebased_from), found it disagreeing and asked anew.
    records = sorted((r for r in session.records() if r["kind"] == "next_edit"), key=lambda r: int(r["id"][1:]))
    first = records[0]["id"]
    assert [(r["source"], r["next_edit"]["rebased_from"]) for r in records] == [("model", ""), ("model", first)]


@pytest.fixture
def slow_sim(sim_factory: SimFactory) -> SimHandle:
    return _sim(sim_factory, 400)


async def test_a_key_that_comes_while_the_earlier_rewrite_has_shown_nothing_asks_beside_it(
    tmp_path: pathlib.Path, slow_sim: SimHandle
) -> None:
    async with serve(tmp_path, "vscode", options=fast_model(slow_sim.base_url)) as session:
        uri = session.open("sample.py", BEFORE)
        session.insert(uri, types.Position(line=0, character=10), "i")
        first = asyncio.ensure_future(_ask(session, uri, 2, 0, 11))
        await _until(lambda: _model_requests(slow_sim) == 1)
        # The first key's rewrite is still waiting for its first token when the user types against it.
        session.insert(uri, types.Position(line=0, character=11), "x")
        answer = await _ask(session, uri, 3, 0, 12)
        assert await first == []  # overtaken by the second key
        assert _model_requests(slow_sim) == 2
        text = BEFORE.replace("def area(w,", "def area(wix,")
        assert all("widthx" not in _apply(text, edit) for edit in answer)
    # (An answered request's record is written when its fate is known: here, when the session ends.)
    records = sorted((r for r in session.records() if r["kind"] == "next_edit"), key=lambda r: int(r["id"][1:]))
    earlier, second = records[0], records[-1]
    assert (earlier["source"], earlier["next_edit"]["hedged"]) == ("model", False)
    # The second key's request tried the earlier rewrite, found it behind, and asked at once beside it: its
    # request went out before the earlier rewrite's first token came (not after it had disagreed).
    assert second["next_edit"]["hedged"] and second["next_edit"]["rebased_from"] == earlier["id"]
    assert second["source"] == "model"
    sent = second["received_at"] + second["ms"]["request_sent"] / 1000
    assert sent < earlier["received_at"] + earlier["ms"]["first_token"] / 1000


async def test_with_rebase_off_each_key_that_asks_is_its_own_request(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    options = {**fast_model(sim.base_url), "next_edit": {"rebase": False, "pause": "none"}}
    async with serve(tmp_path, "vscode", options=options) as session:
        uri = session.open("sample.py", BEFORE)
        await _type(session, uri, "idth", (0, 10), version=1)
        assert _model_requests(sim) == 4
