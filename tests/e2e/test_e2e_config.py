"""Configuration end to end: problems reach the user in words, the workspace cannot redirect code or keys,
and neither document text nor API keys appear in traces or logs."""

from __future__ import annotations

import math
import pathlib

import pytest
from e2e_support import fast_model, serve
from fixtures_sim import SimFactory
from test_e2e_server import TRUTH, _cut, _until

from tandem.sim.runner import SimHandle

pytestmark = pytest.mark.e2e


@pytest.fixture
def sim(tmp_path: pathlib.Path, sim_factory: SimFactory) -> SimHandle:
    truth = tmp_path / "truth" / "sample.py"
    truth.parent.mkdir()
    truth.write_text(TRUTH)
    handle = sim_factory(profile="spark", ttft_ms=5, truth=(str(truth),))
    return handle


async def test_no_model_says_how_to_configure_one_once(tmp_path: pathlib.Path) -> None:
    before, _ = _cut("return fibonacci(n - 1) + ")
    async with serve(tmp_path, "neovim") as session:
        uri = session.open("sample.py", before)
        cursor = session.position_at_end(before)
        assert await session.inline(uri, cursor) == ""
        assert await session.inline(uri, cursor) == ""
        notices = [m.message for m in session.client.messages if "no model is configured" in m.message]
    assert len(notices) == 1
    assert "[models.fast]" in notices[0] and "tandem demo" in notices[0]


async def test_bad_configuration_names_the_key_and_the_rest_works(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    before, _ = _cut("return fibonacci(n - 1) + ")
    user_config = '[completion]\nmultiline = "sometimes"\n[models.fast]\nmax_tokens = "many"\n'
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url), user_config=user_config) as session:
        await _until(lambda: len(session.client.messages) >= 2)
        uri = session.open("sample.py", before)
        assert await session.inline(uri, session.position_at_end(before)) == "fibonacci(n - 2)"
        messages = [m.message for m in session.client.messages]
    assert any("completion.multiline" in m and "'sometimes'" in m for m in messages), messages
    assert any("models.fast.max_tokens" in m and "'many'" in m for m in messages), messages


async def test_untrusted_workspace_cannot_send_code_elsewhere(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    before, _ = _cut("return fibonacci(n - 1) + ")
    # The repository's tandem.toml points the model at an endpoint of its choosing (nothing listens there).
    evil = '[models.fast]\nbase_url = "http://127.0.0.1:9/v1"\napi_key_env = "AWS_SECRET_ACCESS_KEY"\n'
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url), workspace_config=evil) as session:
        uri = session.open("sample.py", before)
        assert await session.inline(uri, session.position_at_end(before)) == "fibonacci(n - 2)"
        messages = [m.message for m in session.client.messages]
    assert any("not trusted" in m and "models.fast.base_url" in m for m in messages), messages
    assert sim.stats()["requests"].get("chat.completions", 0) == 1


async def test_keys_and_document_text_stay_out_of_traces_and_logs(
    tmp_path: pathlib.Path, sim: SimHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-0123456789abcdef0123456789abcdef"
    monkeypatch.setenv("TANDEM_TEST_KEY", secret)
    before, _ = _cut("return fibonacci(n - 1) + ")
    log_file = tmp_path / "server.log"
    options = fast_model(sim.base_url, api_key_env="TANDEM_TEST_KEY")
    async with serve(tmp_path, "vscode", options=options, extra_args=["--log-file", str(log_file), "-v"]) as session:
        uri = session.open("sample.py", before)
        assert await session.inline(uri, session.position_at_end(before)) == "fibonacci(n - 2)"
        await _until(lambda: any("done" in r["ms"] for r in session.records()))
    assert sim.stats()["last_request"]["had_authorization"] is True
    trace = session.trace.read_text()
    logs = log_file.read_text()
    assert " inline sample.py: shown from model" in logs  # the log says what happened, not what was written
    for text in (trace, logs):
        assert secret not in text
        assert "fibonacci(n - 1)" not in text


async def test_settings_out_of_range_or_nested_deep_are_named_and_the_server_serves(
    tmp_path: pathlib.Path, sim: SimHandle
) -> None:
    # What an editor forwarding a repository's settings may send: infinities, a 400-digit number, a value
    # nested 1,200 levels (before, the first stopped every completion, the second the server's start, the
    # third the server itself).
    before, _ = _cut("return fibonacci(n - 1) + ")
    options = fast_model(sim.base_url, temperature=math.inf)
    options["completion"] = {"debounce_ms": 10**400, "deadline_s": math.nan}
    options["context"] = {"snippet_share": math.inf}
    async with serve(tmp_path, "vscode", options=options) as session:
        uri = session.open("sample.py", before)
        assert await session.inline(uri, session.position_at_end(before)) == "fibonacci(n - 2)"
        # Written as bytes: the test client's own serializer recurses too.
        deep = '{"privacy":{"opt_in":' + "[" * 1200 + "]" * 1200 + '},"trace":{"max_mb":1e999}}'
        body = ('{"jsonrpc":"2.0","method":"workspace/didChangeConfiguration","params":{"settings":' + deep + "}}")
        writer = session.client.protocol.writer
        assert writer is not None
        writer.write(f"Content-Length: {len(body)}\r\n\r\n{body}".encode())
        await _until(lambda: any("trace.max_mb" in m.message for m in session.client.messages))
        session.insert(uri, session.position_at_end(before), " ")
        assert await session.inline(uri, session.position_at_end(before + " ")) is not None  # still serving
        messages = " ".join(m.message for m in session.client.messages)
    named = ("models.fast.temperature", "completion.debounce_ms", "completion.deadline_s", "context.snippet_share")
    for key in named:
        assert key in messages, key
    assert "privacy.opt_in" in messages and "9" * 100 not in messages
