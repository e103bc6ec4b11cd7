"""The edit service's apply loop (`completion.edit.service`), driving a workspace through its one interface
(`service.Workspace`): a refusal the user's typing explains is rebased and sent again, a final one ends it."""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import Collection, Mapping, Sequence

from tandem.cache.symbols import SymbolIndex
from tandem.completion.edit.file_edits import FileEdit
from tandem.completion.edit.service import Applied, Workspace, _apply
from tandem.completion.edit.types import EditOutcome, EditProgress
from tandem.completion.routing.router import RouteDecision, RouteFeatures


class _Workspace:
    """A workspace whose editor answers `answers` in turn, and whose user types `typed` after the first."""

    def __init__(self, answers: list[Applied], texts: dict[str, str], typed: dict[str, str]) -> None:
        self.root: pathlib.Path | None = None
        self.answers = answers
        self.texts = texts
        self.typed = typed
        self.sent: list[tuple[list[FileEdit], dict[str, str]]] = []

    def open_texts(self) -> dict[str, str]:
        return dict(self.texts)

    def symbols(self) -> SymbolIndex | None:
        return None

    def current(self, paths: Collection[str]) -> dict[str, str]:
        return {p: self.texts[p] for p in paths if p in self.texts}

    def read_text(self, path: str) -> str | None:
        return self.texts.get(path)

    async def apply(self, edits: Sequence[FileEdit], current: Mapping[str, str]) -> Applied:
        self.sent.append((list(edits), dict(current)))
        self.texts.update(self.typed)
        return self.answers.pop(0)

    def progress(self, progress: EditProgress) -> None:
        pass

    def notify(self, message: str) -> None:
        pass


def _outcome(edits: tuple[FileEdit, ...], current: dict[str, str]) -> EditOutcome:
    decision = RouteDecision(tier="fast", score=0.1, features=RouteFeatures(mode="edit"), reasons=())
    return EditOutcome(decision=decision, edits=edits, current=current, tier="fast")


def test_a_refusal_the_user_typed_past_is_rebased_and_sent_again() -> None:
    base = "a = 1\nb = 2\n"
    edit = FileEdit(path="x.py", start=6, end=11, new_text="b = 3")
    typed = {"x.py": "# note\na = 1\nb = 2\n"}
    workspace = _Workspace([Applied(applied=False, why="version moved"), Applied(applied=True)], {"x.py": base}, typed)
    seen: Workspace = workspace
    applied, why = asyncio.run(_apply(seen, _outcome((edit,), {"x.py": base})))
    assert (applied, why) == (True, "")
    [(first, _), (second, current)] = workspace.sent
    assert first == [edit]
    assert second == [FileEdit(path="x.py", start=13, end=18, new_text="b = 3")] and current == typed


def test_a_final_refusal_ends_the_edit_without_a_retry() -> None:
    base = "a = 1\n"
    edit = FileEdit(path="x.py", start=0, end=5, new_text="a = 2")
    refused = Applied(applied=False, why="x.py is a new file; this editor cannot ask you", final=True)
    workspace = _Workspace([refused], {"x.py": base}, {})
    applied, why = asyncio.run(_apply(workspace, _outcome((edit,), {"x.py": base})))
    assert (applied, why) == (False, "x.py is a new file; this editor cannot ask you")
    assert len(workspace.sent) == 1
