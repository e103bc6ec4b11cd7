"""The one door to a provider (`completion.gate`): what each check refuses, and that the senders use it.

The end-to-end proof, every sending path over stdio against the simulator's request log, is
test_e2e_gate.py; these are the rules and the edges it cannot reach cheaply."""

from __future__ import annotations

import json
import pathlib

import httpx
from test_edit_flow import GOOD, VIEWS, Provider, config, small_request

from tandem.cache.lines import LineBuffer
from tandem.cache.privacy import PrivacyPolicy
from tandem.completion.config.tree import ContextConfig, PrivacyConfig
from tandem.completion.edit.flow import EditFlow, EditInputs
from tandem.completion.gate import MAX_DOCUMENT_CHARS, Gate, Outbound
from tandem.completion.observe.trace import Tracer
from tandem.completion.providers.backends.base import ModelRequest
from tandem.completion.providers.tiers import Tiers
from tandem.completion.workspace import WorkspaceIndex

KEY = "AKIA" + "Q7RZ2V4N8K3M5P1X"  # the shape of an AWS access key id (not a real one)
ROOT = pathlib.Path("/work/space")


def _request(**fields: str) -> ModelRequest:
    # Snippets of other files (`context`) go out in the prompt, ahead of the code around the cursor.
    return ModelRequest(prefix=fields.get("context", "") + fields.get("prefix", "x = "), suffix="")


def test_an_open_document_is_judged_once_by_path_skip_reasons_and_content() -> None:
    gate = Gate(root=ROOT)
    verdicts = {
        "main.py": gate.open((ROOT / "main.py").as_uri(), "print(1)\n"),
        ".env": gate.open((ROOT / ".env").as_uri(), "A=1\n"),
        "keys.py": gate.open((ROOT / "keys.py").as_uri(), "# line 1\n" + f"KEY = '{KEY}'\n"),
        "blob.py": gate.open((ROOT / "blob.py").as_uri(), "\x00\x01"),
        "huge.py": gate.open((ROOT / "huge.py").as_uri(), "x" * (MAX_DOCUMENT_CHARS + 1)),
    }
    assert {name for name, verdict in verdicts.items() if verdict} == {"main.py"}
    assert "AWS Access Key, line 2," in verdicts["keys.py"].reason and KEY not in verdicts["keys.py"].reason
    assert verdicts["blob.py"].reason == "binary content" and verdicts["huge.py"].reason.startswith("too large")
    # Later questions get the verdict made at open; a document never opened gets the path rules.
    assert not gate.document((ROOT / "keys.py").as_uri())
    assert gate.document((ROOT / "other.py").as_uri()) and not gate.document((ROOT / "id_rsa").as_uri())


def test_admit_checks_every_source_then_the_text_as_sent() -> None:
    gate = Gate(root=ROOT)
    gate.privacy.set_ignore_file(".gitignore", "vendor/\n")
    main, secret = (ROOT / "main.py").as_uri(), (ROOT / "conf.py").as_uri()
    gate.open(main, "x = 1\n")
    gate.open(secret, f"K = '{KEY}'\n")
    assert gate.admit(Outbound(request=_request(), document=main))
    assert not gate.admit(Outbound(request=_request(), document=secret))
    # A snippet from an ignored file, or from an open document that was refused, is refused by its path.
    assert "vendor/lib.py" in gate.admit(Outbound(request=_request(), snippet_paths=("vendor/lib.py",))).reason
    assert not gate.admit(Outbound(request=_request(), snippet_paths=("conf.py",)))
    # Files shown whole are checked on the text that goes out.
    assert not gate.admit(Outbound(request=_request(), files={"a.py": f"K = '{KEY}'"}))
    # Whatever the labels say, a credential in the prompt itself never leaves (here: in the snippets).
    refused = gate.admit(Outbound(request=_request(context=f"# b.py\nK = '{KEY}'\n"), document=main))
    assert not refused and "AWS Access Key" in refused.reason and KEY not in refused.reason
    # And a prompt far past any legitimate size is a bug, not something to send.
    small = Gate(policy=PrivacyPolicy(max_file_bytes=1000))
    assert "too large" in small.admit(Outbound(request=_request(prefix="y" * 4001))).reason


async def test_a_document_opened_before_the_scan_is_judged_by_the_ignore_files_above_it(
    tmp_path: pathlib.Path,
) -> None:
    (tmp_path / "pkg" / "deeper").mkdir(parents=True)
    (tmp_path / "pkg" / ".gitignore").write_text("private_*.py\n")
    (tmp_path / "pkg" / "deeper" / ".tandemignore").write_text("notes.py\n")
    index = WorkspaceIndex(root=tmp_path, context=ContextConfig(), privacy=PrivacyConfig())
    uri = (tmp_path / "pkg" / "private_notes.py").as_uri()
    deeper = (tmp_path / "pkg" / "deeper" / "notes.py").as_uri()
    # Opened before the scan: the nested ignore files above each document are read at its open ...
    assert not index.open(uri, LineBuffer("notes = 1\n"))
    assert not index.open(deeper, LineBuffer("notes = 1\n"))
    await index.start()
    # ... and once the scan has read every ignore file, it stays refused, and nothing of it is windowed.
    assert not index.verdict(uri) and index.window(uri, 0, 0) is None
    assert not index.verdict(deeper)


async def test_an_edit_of_a_secret_file_sends_nothing_and_a_secret_context_file_is_left_out(
    tmp_path: pathlib.Path,
) -> None:
    provider = Provider({"fast.test": [GOOD]})
    texts = {"views.py": VIEWS, "settings.py": f"KEY = '{KEY}'\n", "helpers.py": "def helper():\n    return 2\n"}
    inputs = EditInputs(
        current_texts=lambda paths: {p: texts[p] for p in paths if p in texts},
        read_text=texts.get,
        extra_context=("settings.py", "helpers.py"),
    )
    async with httpx.AsyncClient(transport=httpx.MockTransport(provider)) as client:
        models = Tiers(client, {})
        models.configure(config(accurate=False).models)
        flow = EditFlow(models=models, tracer=Tracer(None), config=config(accurate=False), gate=Gate())
        outcome = await flow.run(small_request(), inputs)
        assert outcome.ok
        [body] = provider.bodies
        sent = json.dumps(body)
        assert "def helper" in sent and KEY not in sent and "settings.py" not in sent
        refused = await flow.run(small_request(path="settings.py", text=texts["settings.py"], start=0, end=5), inputs)
    assert not refused.ok and refused.message.startswith("not sent to a model: settings.py")
    assert len(provider.bodies) == 1  # the refused edit asked no model


def test_a_file_read_for_an_edit_before_the_scan_is_judged_by_the_ignore_files_above_it(
    tmp_path: pathlib.Path,
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / ".gitignore").write_text("secret.py\n")
    index = WorkspaceIndex(root=tmp_path, context=ContextConfig(), privacy=PrivacyConfig())
    # Known before any scan: git reads the nested ignore file itself, and so does tandem before judging.
    verdict = index.gate.file("pkg/secret.py", "x = 1\n")
    assert not verdict and "pkg/.gitignore" in verdict.reason
    index.ensure_rules_for("pkg/secret.py")
    assert not index.gate.file("pkg/secret.py", "x = 1\n")
