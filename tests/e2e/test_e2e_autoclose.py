"""Issue 28 item 1 over stdio: after `def increment(` the editor has auto-inserted `)` (VS Code and Helix
do by default, Neovim's and Emacs's autopair plugins too). The model's suggestion holds that `)`; its item
range covers the editor's `)`, so accepting it leaves no stray bracket. Text the user wrote after the
cursor is never covered."""

from __future__ import annotations

import pathlib

import pytest
from e2e_support import Session, fast_model, serve
from fixtures_sim import SimFactory
from lsprotocol import types
from test_e2e_helix import _apply
from test_e2e_server import TRUTH

from tandem.sim.runner import SimHandle

pytestmark = pytest.mark.e2e

# The truth's line is `    def increment(self, step=1):`; the user has typed up to the bracket.
OPEN = "    def increment("


@pytest.fixture
def sim(tmp_path: pathlib.Path, sim_factory: SimFactory) -> SimHandle:
    truth = tmp_path / "truth" / "sample.py"
    truth.parent.mkdir()
    truth.write_text(TRUTH)
    handle = sim_factory(profile="spark", ttft_ms=5, truth=(str(truth),))
    return handle


def _document(after_cursor: str) -> tuple[str, str]:
    """The truth up to `def increment(`, then what the editor put after the cursor; and the text before it."""
    before = TRUTH[: TRUTH.index(OPEN) + len(OPEN)]
    return before + after_cursor + "\n", before


def _true_line() -> str:
    start = TRUTH.index(OPEN)
    return TRUTH[start : TRUTH.index("\n", start)]


async def _inline_item(session: Session, uri: str, cursor: types.Position) -> types.InlineCompletionItem:
    result = await session.client.text_document_inline_completion_async(session.inline_params(uri, cursor))
    assert isinstance(result, types.InlineCompletionList)
    [item] = result.items
    return item


@pytest.mark.parametrize("client", ["vscode", "neovim"])
async def test_an_inline_suggestion_replaces_the_auto_closed_bracket(
    tmp_path: pathlib.Path, sim: SimHandle, client: str
) -> None:
    text, before = _document(")")
    async with serve(tmp_path, client, options=fast_model(sim.base_url, max_tokens=12)) as session:
        uri = session.open("sample.py", text)
        cursor = session.position_at_end(before)
        item = await _inline_item(session, uri, cursor)
    assert isinstance(item.insert_text, str) and item.range is not None
    assert item.insert_text.split("\n")[0] == "self, step=1):"
    assert item.range.start == cursor
    assert item.range.end == types.Position(line=cursor.line, character=cursor.character + 1)
    accepted = _apply(text, types.TextEdit(range=item.range, new_text=item.insert_text), session.encoding)
    assert accepted.split("\n")[cursor.line] == _true_line()


async def test_a_helix_menu_item_replaces_the_auto_pair(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    """Helix closes `(` by default; its menu item's edit covers the `)` it inserted (columns in UTF-8)."""
    text, before = _document(")")
    async with serve(tmp_path, "helix", options=fast_model(sim.base_url, max_tokens=12)) as session:
        uri = session.open("sample.py", text)
        cursor = session.position_at_end(before)
        result = await session.client.text_document_completion_async(
            types.CompletionParams(text_document=types.TextDocumentIdentifier(uri=uri), position=cursor)
        )
    assert isinstance(result, types.CompletionList)
    [item] = result.items
    assert isinstance(item.text_edit, types.TextEdit)
    assert item.text_edit.range.end == types.Position(line=cursor.line, character=cursor.character + 1)
    assert _apply(text, item.text_edit, "utf-8").split("\n")[cursor.line] == _true_line()


async def test_text_the_user_wrote_after_the_cursor_is_not_covered(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    """`) -> int` after the cursor is the user's own text, not an auto-pair: the item is inserted."""
    text, before = _document(") -> int")
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url, max_tokens=12)) as session:
        uri = session.open("sample.py", text)
        cursor = session.position_at_end(before)
        item = await _inline_item(session, uri, cursor)
    assert item.range is not None and item.range.end == cursor
