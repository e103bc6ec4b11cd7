"""Issue 16, item 4: an edit that changes only a file the editor does not have open still ends with its
message, naming that file as not open (it had been invisible: the file changed on disk, nothing said)."""

from __future__ import annotations

import pathlib

import pytest
from e2e_support import Session, serve
from fixtures_sim import SimFactory
from lsprotocol import types
from test_e2e_edits import MODELS, VIEWS, Editor, _sim, execute, set_truth, two_models, whole
from test_e2e_server import _until

from tandem.sim.runner import SimHandle

pytestmark = pytest.mark.e2e

# Files in the start-up test that the scan reads before it reaches views.py.
SCANNED_FIRST = 3000
DOCUMENTED = VIEWS.replace("def show(invoice):\n", 'def show(invoice):\n    """The invoice\'s total, in euros."""\n')


@pytest.fixture
def sims(sim_factory: SimFactory) -> tuple[SimHandle, SimHandle]:
    return sim_factory(_sim("spark")), sim_factory(_sim("codex"))


class DiskEditor(Editor):
    """An editor that, like VS Code, applies a workspace edit to a file it has not open on disk."""

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.unopened: set[str] = set()

    def _apply(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        for change in params.edit.document_changes or []:
            assert isinstance(change, types.TextDocumentEdit), change
            uri = change.text_document.uri
            if uri not in self.texts:
                path = pathlib.Path(uri.removeprefix("file://"))
                # The server stamps a file that is not open with no version (null), as LSP says.
                self.texts[uri], self.versions[uri] = path.read_text(encoding="utf-8"), change.text_document.version
                self.unopened.add(uri)
        result = super()._apply(params)
        for uri in self.unopened:
            pathlib.Path(uri.removeprefix("file://")).write_text(self.texts[uri], encoding="utf-8")
        return result

    def type(self, uri: str, text: str) -> None:
        if uri in self.unopened:  # a file that is not open is changed on disk, not through didChange
            self.texts[uri] = text
            return
        super().type(uri, text)


async def test_an_edit_of_only_an_unopened_file_names_it_not_open(
    tmp_path: pathlib.Path, sims: tuple[SimHandle, SimHandle]
) -> None:
    fast, accurate = sims
    for sim in (fast, accurate):
        set_truth(sim, {"views.py": DOCUMENTED})
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "models.py").write_text(MODELS, encoding="utf-8")
    (workspace / "views.py").write_text(VIEWS, encoding="utf-8")
    async with serve(tmp_path, "vscode", options=two_models(fast, accurate), extra_args=["--log-to-client"]) as session:
        # The workspace is scanned in the background: the edit can see views.py once the scan is in.
        await _until(lambda: any("workspace indexed" in m.message for m in session.client.log_messages))
        editor = DiskEditor(session)
        uri = editor.open("models.py", MODELS)
        result = await execute(
            session, {"uri": uri, "range": whole(MODELS), "instruction": "document where compute_total is shown"}
        )
        shown = [m.message for m in session.client.messages]
    assert result["applied"] is True, result
    assert result["message"].endswith("edited views.py (+1 -0 lines, not open)"), result["message"]
    assert result["message"] in shown
    assert (workspace / "views.py").read_text(encoding="utf-8") == DOCUMENTED
    assert editor.texts[uri] == MODELS


async def test_an_edit_asked_at_start_up_waits_for_the_workspace_scan(
    tmp_path: pathlib.Path, sims: tuple[SimHandle, SimHandle]
) -> None:
    """Asked before the background scan has reached views.py, the edit waits for the scan (its progress says
    so) and then sees the file; it had gone ahead without it and said nothing."""
    fast, accurate = sims
    for sim in (fast, accurate):
        set_truth(sim, {"views.py": DOCUMENTED})
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "models.py").write_text(MODELS, encoding="utf-8")
    (workspace / "views.py").write_text(VIEWS, encoding="utf-8")
    # Enough other files that the scan (after the tokenizer's load) is still running when the edit comes,
    # as in a real project; views.py sorts after them.
    (workspace / "lib").mkdir()
    for i in range(SCANNED_FIRST):
        (workspace / "lib" / f"m{i:04d}.py").write_text(f"def f{i}(x):\n    return x + {i}\n", encoding="utf-8")
    async with serve(tmp_path, "vscode", options=two_models(fast, accurate), extra_args=["--log-to-client"]) as session:
        editor = DiskEditor(session)
        uri = editor.open("models.py", MODELS)
        result = await execute(
            session, {"uri": uri, "range": whole(MODELS), "instruction": "document where compute_total is shown"}
        )
        progress = [getattr(v, "message", "") or "" for r in session.client.progress_reports.values() for v in r]
        logged = [m.message for m in session.client.log_messages]
    waited = [m for m in progress if m.startswith("waiting for the workspace scan")]
    assert waited, (progress, logged, result)
    scanned = next(m for m in logged if "workspace indexed" in m)
    assert f"workspace indexed: {SCANNED_FIRST + 2} files" in scanned, scanned
    assert result["applied"] is True, result
    assert result["message"].endswith("edited views.py (+1 -0 lines, not open)"), result["message"]
    assert result["all_files_indexed"] is True
    assert (workspace / "views.py").read_text(encoding="utf-8") == DOCUMENTED
