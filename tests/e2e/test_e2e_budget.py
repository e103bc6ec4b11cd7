"""The daily spend limit end to end: `tandem serve` over stdio against the simulator on loopback.

`[budget] fast_tokens_per_day` is set so low that the first completion's tokens pass it. Then: completions
stop with one message the user reads, next edits and speculation stop, an edit the user asks for still runs,
and after a restart with the same state directory the limit still holds (the day's spend was kept). The
simulator's own log of what it was sent is the judge of what went out.
"""

from __future__ import annotations

import asyncio
import pathlib
import sqlite3

import pytest
from e2e_support import Session, fast_model, serve
from fixtures_sim import SimFactory
from lsprotocol import types

from tandem.sim.runner import SimHandle

pytestmark = pytest.mark.e2e

TEXT = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n"
LIMIT = "[budget] limit"


@pytest.fixture
def sim(sim_factory: SimFactory) -> SimHandle:
    handle = sim_factory(profile="spark", ttft_ms=1.0, tokens_per_s=100_000.0)
    return handle


def _options(sim: SimHandle) -> dict[str, object]:
    options = fast_model(sim.base_url)
    options["budget"] = {"fast_tokens_per_day": 10}
    options["prefetch"] = {"enabled": True}
    return options


async def _limit_message(session: Session) -> str:
    while not any(LIMIT in m.message for m in session.client.messages):
        await session.client.wait_for_notification(types.WINDOW_SHOW_MESSAGE)
    return next(m.message for m in session.client.messages if LIMIT in m.message)


async def _next_edit(session: Session, uri: str, version: int, at: types.Position) -> None:
    await session.client.protocol.send_request_async(
        "textDocument/copilotInlineEdit",
        {"textDocument": {"uri": uri, "version": version}, "position": {"line": at.line, "character": at.character}},
    )


async def test_past_the_daily_limit_only_asked_edits_run_and_a_restart_keeps_the_limit(
    tmp_path: pathlib.Path, sim: SimHandle
) -> None:
    async with serve(tmp_path, options=_options(sim)) as session:
        uri = session.open("calc.py", TEXT)
        end = session.position_at_end(TEXT)
        first = await session.inline(uri, end)
        assert first  # under the limit: the model answers
        spent = len(sim.requests.all())
        # The first answer's tokens passed the limit: the next completion is not asked, and says why.
        session.insert(uri, end, "    ")
        moved = types.Position(line=end.line, character=end.character + 4)
        assert await session.inline(uri, moved) == ""
        message = await _limit_message(session)
        assert "completions, next edits and speculation are paused" in message and "edits you ask for" in message
        await _next_edit(session, uri, 2, moved)
        assert await session.inline(uri, moved) == ""
        assert len(sim.requests.all()) == spent  # no completion, next edit or prefetch went out
        shown = [m.message for m in session.client.messages if LIMIT in m.message]
        assert len(shown) == 1  # said once
        # An edit the user asks for still runs.
        whole = {"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 0}}
        await session.client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="tandem.edit", arguments=[{"uri": uri, "range": whole, "instruction": "Add a docstring."}]
            )
        )
        assert len(sim.requests.all()) > spent
        records = session.records()
    skipped = [r for r in records if r["outcome"] == "skipped" and "[budget]" in (r.get("error") or "")]
    assert skipped  # the trace says why nothing was asked
    store = sqlite3.connect(tmp_path / "home" / "state" / "tandem" / "spend.sqlite3")
    ((kept,),) = store.execute("SELECT tokens FROM spend WHERE tier = 'fast'").fetchall()
    store.close()
    assert kept > 10

    # A restart with the same state directory: the day's spend is still there.
    sim.requests.clear()
    async with serve(tmp_path, options=_options(sim)) as session:
        uri = session.open("calc.py", TEXT)
        assert await session.inline(uri, session.position_at_end(TEXT)) == ""
        assert "paused" in await _limit_message(session)
        assert sim.requests.all() == []


async def _type_and_complete(session: Session, name: str, keys: int) -> None:
    uri = session.open(name, TEXT)
    end = session.position_at_end(TEXT)
    for n in range(keys):
        at = types.Position(line=end.line, character=end.character + n)
        await session.inline(uri, at)
        session.insert(uri, at, "x")  # a character the model did not offer: the next request is a miss


async def test_two_servers_writing_the_same_day_count_both_spends(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    # Two editor windows: two `tandem serve` processes with one state directory, asking at the same time.
    first, second = tmp_path / "one", tmp_path / "two"
    (first / "home" / "state").mkdir(parents=True)
    (second / "home").mkdir(parents=True)
    (second / "home" / "state").symlink_to(first / "home" / "state")
    options = fast_model(sim.base_url, price_input_per_mtok=1.0, price_output_per_mtok=4.0)
    async with serve(first, options=options) as one, serve(second, options=options) as two:
        await asyncio.gather(_type_and_complete(one, "a.py", 6), _type_and_complete(two, "b.py", 6))
        sessions = (one, two)
    records = [r for session in sessions for r in session.records()]
    each = [sum(r["tokens"]["in"] + r["tokens"]["out"] for r in s.records()) for s in sessions]
    assert all(tokens > 0 for tokens in each)  # both spent
    store = sqlite3.connect(first / "home" / "state" / "tandem" / "spend.sqlite3")
    ((tokens, usd),) = store.execute("SELECT SUM(tokens), SUM(usd) FROM spend").fetchall()
    store.close()
    assert tokens == sum(each)
    assert usd == pytest.approx(sum(r["cost_usd"] for r in records), rel=1e-6)
