"""Nothing of a refused document reaches the provider, by any path that sends: `tandem serve` over stdio, the
simulator's own log of the request bodies it received as the judge.

Three refused documents are open at once (a secret-looking name, a file the workspace's .gitignore ignores,
a file holding an AWS access key id) beside an allowed one that uses names they define. Every path that
sends is driven on each refused document, then on the allowed one: the allowed document's request proves
the path sends at all (so the test can fail), and arrives after anything the refused ones would have sent.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from e2e_support import Session, fast_model, read_code_actions_as_editors_do, serve
from fixtures_sim import SimFactory
from injected_model import InjectedModel, injected_model
from lsprotocol import types

from tandem.sim.request_log import LoggedRequest
from tandem.sim.runner import SimHandle

pytestmark = pytest.mark.e2e

# The credential probes the secret-rules benchmark measures (bench/secret_probes.py).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
from secret_probes import FILE_NAMES, TOKENS  # noqa: E402

KEY = "AKIA" + "Q7RZ2V4N8K3M5P1X"  # the shape of an AWS access key id (not a real one)
# name -> text; each line is distinctive, so any of it in a request body is found.
REFUSED = {
    ".env.local": "DATABASE_PASSWORD=hunter2-env-local-only\nSERVICE_TOKEN=env-local-service-token-9f1c\n",
    "generated/ignored_tables.py": (
        "IGNORED_LOOKUP_TABLE = {'ignored_alpha': 1, 'ignored_beta': 2}\n\n"
        "def ignored_table_lookup(name):\n    return IGNORED_LOOKUP_TABLE[name]\n"
    ),
    "settings.py": (
        f'AWS_ACCESS_KEY_ID = "{KEY}"\n\n'
        "def load_cloud_credentials(profile):\n    return {'key': AWS_ACCESS_KEY_ID, 'profile': profile}\n"
    ),
}
ALLOWED = (
    "from settings import load_cloud_credentials\n"
    "from generated.ignored_tables import ignored_table_lookup\n\n\n"
    "def allowed_report_builder(profile):\n"
    "    credentials = load_cloud_credentials(profile)\n"
    "    table = ignored_table_lookup('ignored_alpha')\n"
    "    return credentials, table\n"
)
ALLOWED_MARK = "allowed_report_builder"
PATHS = (
    "inline",
    "menu",
    "accepted",
    "partial accept",
    "new-line prefetch",
    "next edit",
    "code action",
    "edit command",
)


@pytest.fixture
def sim(sim_factory: SimFactory) -> SimHandle:
    handle = sim_factory(profile="spark", ttft_ms=1.0, tokens_per_s=100_000.0)
    return handle


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value (the prompt text, unescaped)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _sent(request: LoggedRequest) -> str:
    return "\n".join(_strings(json.loads(request.body)))


class _Document:
    """An open document as the editor holds it: every path first types something new at its end, so that
    no earlier stream or cached suggestion can answer in its place."""

    def __init__(self, session: Session, name: str, text: str) -> None:
        self.session, self.text, self.version = session, text, 1
        self.uri = session.open(name, text)

    @property
    def end(self) -> types.Position:
        lines = self.text.split("\n")
        return types.Position(line=len(lines) - 1, character=len(lines[-1]))

    def type(self, text: str) -> types.Position:
        """Insert `text` at the end; returns where it went."""
        at = self.end
        self.session.insert(self.uri, at, text)
        self.text += text
        self.version = self.session._next_version
        return at


async def _drive(path: str, doc: _Document) -> None:
    """One sending path, on one document, as an editor would drive it."""
    client = doc.session.client
    document = types.TextDocumentIdentifier(uri=doc.uri)
    tag = f"# {path.replace(' ', '_')}_typed_here"
    if path == "inline":
        doc.type(tag)
        await client.text_document_inline_completion_async(doc.session.inline_params(doc.uri, doc.end))
    elif path == "menu":
        doc.type(tag)
        await client.text_document_completion_async(types.CompletionParams(text_document=document, position=doc.end))
    elif path in ("accepted", "partial accept"):
        # The editor inserted an accepted suggestion at the end of the file, then reports it.
        at = doc.type(tag)
        payload = {"uri": doc.uri, "position": {"line": at.line, "character": at.character}, "text": tag}
        if path == "accepted":
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="tandem.accepted", arguments=[payload])
            )
        else:
            command = {"title": "", "command": "tandem.accepted", "arguments": [payload]}
            client.protocol.notify(
                "textDocument/didPartiallyAcceptCompletion",
                {"item": {"insertText": tag, "command": command}, "acceptedLength": len(tag)},
            )
    elif path == "new-line prefetch":
        doc.type(tag)
        doc.type("\n")
    elif path == "next edit":
        doc.type(tag)
        at = {"line": doc.end.line, "character": doc.end.character}
        await client.protocol.send_request_async(
            "textDocument/copilotInlineEdit", {"textDocument": {"uri": doc.uri, "version": doc.version}, "position": at}
        )
    elif path == "edit command":
        whole = {"start": {"line": 0, "character": 0}, "end": {"line": doc.end.line, "character": 0}}
        argument = {"uri": doc.uri, "range": whole, "instruction": "Add a docstring."}
        result = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="tandem.edit", arguments=[argument])
        )
        assert isinstance(result, dict) and result["applied"] is False  # the simulator answers no edit here
    elif path == "code action":
        actions = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=document,
                range=types.Range(start=types.Position(line=0, character=0), end=doc.end),
                context=types.CodeActionContext(diagnostics=[]),
            )
        )
        edits = [a.command for a in actions or [] if isinstance(a, types.CodeAction) and a.command is not None]
        edits = [c for c in edits if c.command == "tandem.edit"]
        if edits:
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command=edits[0].command, arguments=edits[0].arguments)
            )
    else:
        raise AssertionError(path)


async def test_no_byte_of_a_refused_document_reaches_the_provider(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / ".gitignore").write_text("generated/\n")
    for name, text in REFUSED.items():  # on disk too, where the workspace scan finds them
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "report.py").write_text(ALLOWED)
    # Speculation may run beside the previous path's (still streaming) one, and no budget may stop it.
    prefetch = {"max_concurrent": len(PATHS), "tokens_per_minute": 10_000_000}
    options = {**fast_model(sim.base_url, max_tokens=8), "prefetch": prefetch}
    async with serve(tmp_path, "vscode", options=options) as session:
        read_code_actions_as_editors_do(session.client)
        refused = [_Document(session, name, text) for name, text in REFUSED.items()]
        allowed = _Document(session, "report.py", ALLOWED)
        for path in PATHS:
            for doc in refused:
                await _drive(path, doc)
            before = sum(ALLOWED_MARK in _sent(r) for r in sim.requests.all())
            await _drive(path, allowed)

            def allowed_sent(requests: list[LoggedRequest], before: int = before) -> bool:
                return sum(ALLOWED_MARK in _sent(r) for r in requests) > before

            assert await asyncio.to_thread(sim.requests.wait_for, allowed_sent, 10.0), f"{path}: nothing was sent"
    sent = [_sent(r) for r in sim.requests.all()]
    for name, text in REFUSED.items():
        for line in filter(None, text.splitlines()):
            leaks = [body for body in sent if line in body]
            assert not leaks, f"{name} reached the provider: {line!r}"
    assert not any(KEY in body for body in sent)
    # The server says why, in its trace (a rule, never content).
    records = session.records()
    assert {r["kind"] for r in records if r["outcome"] == "refused"} == {"inline", "completion", "next_edit"}
    edits_refused = [r for r in records if r["kind"] == "edit" and r["error"].startswith("not sent to a model")]
    # Per refused document, the edit command's; no code action is offered on one.
    assert len(edits_refused) == len(REFUSED)


@pytest.fixture
def injected() -> Iterator[InjectedModel]:
    yield from injected_model()


async def test_credentials_by_format_and_by_file_name_stay_on_the_machine(
    tmp_path: pathlib.Path, injected: InjectedModel
) -> None:
    """Each of the issue's token formats in an ordinary file, and each credential file by its name, opened and
    completed in: none reaches the model; an ordinary file opened after them does (the path sends)."""
    user = f'[models.fast]\nbase_url = "{injected.base_url}"\nmodel = "users-model"\nmax_tokens = 32\n'
    marks: dict[str, str] = {}
    async with serve(tmp_path, "vscode", user_config=user) as session:
        probes = {f"config_{n}.py": line for n, line in enumerate(TOKENS.values())}
        probes.update({name: "" for name in FILE_NAMES})
        for n, (name, line) in enumerate(probes.items()):
            marks[name] = f"PROBE_MARK_{n}_7c2e"
            text = f"{line}\nLABEL = '{marks[name]}'\nx = "
            (session.root / name).parent.mkdir(parents=True, exist_ok=True)
            uri = session.open(name, text)
            await session.inline(uri, session.position_at_end(text))
        plain = "LABEL = 'PLAIN_FILE_SENT_4b1a'\nx = "
        uri = session.open("plain.py", plain)
        await session.inline(uri, session.position_at_end(plain))
    sent = injected.sent()
    assert "PLAIN_FILE_SENT_4b1a" in sent
    assert [name for name, mark in marks.items() if mark in sent] == []
