"""`tandem serve --log-to-client` (the VS Code extension's launch), issue 36 item 11: pygls' own warnings
reach the editor as Warning log messages (they went to stderr, which VS Code's Output marks [error] and
stamps beside the record's own time). (That no Output line carries two timestamps is checked in VS Code
itself, by the real-editor test.)"""

from __future__ import annotations

import pathlib

import pytest
from e2e_support import fast_model, serve
from fixtures_sim import SimFactory
from lsprotocol import types
from test_e2e_server import _until

pytestmark = pytest.mark.e2e


async def test_a_pygls_warning_is_a_warning_log_message(tmp_path: pathlib.Path, sim_factory: SimFactory) -> None:
    sim = sim_factory(profile="instant")
    extra = ["--log-to-client"]
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url), extra_args=extra) as session:
        # What VS Code sends while the user types: a cancel for a request the server has already answered.
        session.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="answered-long-ago"))
        await _until(lambda: any("answered-long-ago" in m.message for m in session.client.log_messages))
        [cancel] = [m for m in session.client.log_messages if "answered-long-ago" in m.message]
    assert cancel.type == types.MessageType.Warning, cancel
    assert cancel.message.startswith("pygls.protocol.json_rpc: Cancel notification for unknown message id")
