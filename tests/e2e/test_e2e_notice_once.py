"""Issue 28 item 8 (VS Code's Output): with `--log-to-client` (the VS Code extension's launch) the server's
log already reaches the editor as window/logMessage, so an outage notice is not sent a second time, and
the streams that fail in a row are one warning there, not one each."""

from __future__ import annotations

import pathlib

import pytest
from e2e_support import fast_model, serve
from fixtures_sim import SimFactory
from lsprotocol import types
from test_e2e_breaker import Typist

pytestmark = pytest.mark.e2e


async def test_an_outage_is_told_once_in_the_output_when_logs_go_to_the_client(
    tmp_path: pathlib.Path, sim_factory: SimFactory
) -> None:
    sim = sim_factory(profile="instant")
    sim.arm_fault("500", 1000)
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url), extra_args=["--log-to-client"]) as session:
        typist = Typist(session, session.open("a.py", ""))
        down = "cannot be reached"
        while not any(down in m.message for m in session.client.messages):
            await typist.type("x")
        await typist.type("y" * 5)
        shown = [m.message for m in session.client.messages]
        logged = [m.message for m in session.client.log_messages]
    assert sum(down in m for m in shown) == 1, shown
    assert sum(down in m for m in logged) == 1, logged


async def test_an_outage_leaves_one_warning_of_failed_streams_in_the_output(
    tmp_path: pathlib.Path, sim_factory: SimFactory
) -> None:
    """The streams that fail in a row before and after the outage is told are one warning, not one each."""
    sim = sim_factory(profile="instant")
    sim.arm_fault("500", 1000)
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url), extra_args=["--log-to-client"]) as session:
        typist = Typist(session, session.open("a.py", ""))
        down = "cannot be reached"
        while not any(down in m.message for m in session.client.messages):
            await typist.type("x")
        await typist.type("y" * 5)
        logged = [m for m in session.client.log_messages if " ended: " in m.message]
    assert len([m for m in logged if m.type == types.MessageType.Warning]) == 1, [m.message for m in logged]
