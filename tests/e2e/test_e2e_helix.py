"""Helix end to end: completions arrive as menu items (Helix has no ghost text), columns are UTF-8 bytes,
and `isIncomplete` tells Helix to ask again while the model is still streaming."""

from __future__ import annotations

import pathlib
import tomllib

import hostile_repo
import pytest
from e2e_support import fast_model, serve
from fixtures_sim import SimFactory
from lsprotocol import types
from test_e2e_server import TRUTH, _until

from tandem.sim.runner import SimHandle

pytestmark = pytest.mark.e2e

LANGUAGES_TOML = pathlib.Path(__file__).resolve().parents[2] / "editors" / "helix" / "languages.toml"


def helix_launch() -> list[str]:
    """The server command of editors/helix/languages.toml, with its program resolved as Helix would."""
    server = tomllib.loads(LANGUAGES_TOML.read_text())["language-server"]["tandem"]
    assert server["command"] == "tandem", server
    return [hostile_repo.console_script(), *server["args"]]


@pytest.fixture
def truth_file(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "truth" / "sample.py"
    path.parent.mkdir()
    path.write_text(TRUTH)
    return path


@pytest.fixture
def slow_sim(truth_file: pathlib.Path, sim_factory: SimFactory) -> SimHandle:
    # The accurate model's pace: the stream is still running when the first answer goes out.
    handle = sim_factory(profile="codex", ttft_ms=50, truth=(str(truth_file),))
    return handle


def _apply(text: str, edit: types.TextEdit, encoding: str) -> str:
    """Apply a single-line-range TextEdit the way an editor does, counting columns in `encoding`."""
    lines = text.split("\n")
    line = lines[edit.range.start.line]
    raw = line.encode("utf-8" if encoding == "utf-8" else "utf-16-le")
    width = 1 if encoding == "utf-8" else 2
    start = len(raw[: edit.range.start.character * width].decode("utf-8" if width == 1 else "utf-16-le"))
    end = len(raw[: edit.range.end.character * width].decode("utf-8" if width == 1 else "utf-16-le"))
    lines[edit.range.start.line] = line[:start] + edit.new_text + line[end:]
    return "\n".join(lines)


async def test_multi_line_menu_item_inserts_the_block(tmp_path: pathlib.Path, slow_sim: SimHandle) -> None:
    marker = "def greet(name):\n    "
    end = TRUTH.index(marker) + len(marker)
    before = TRUTH[:end]
    async with serve(tmp_path, "helix", options=fast_model(slow_sim.base_url, max_tokens=80)) as session:
        assert session.encoding == "utf-8"
        uri = session.open("sample.py", before)
        cursor = session.position_at_end(before)
        params = types.CompletionParams(text_document=types.TextDocumentIdentifier(uri=uri), position=cursor)
        first = await session.client.text_document_completion_async(params)
        assert isinstance(first, types.CompletionList)
        [item] = first.items
        assert isinstance(item.text_edit, types.TextEdit)
        inserted = _apply(before, item.text_edit, session.encoding)
        assert TRUTH.startswith(inserted)
        assert inserted.endswith('banner = "héllo — 日本 🎉"; label = name.title() + banner\n    return label')
        # The model was still streaming: Helix must ask again, and it gets the same suggestion, now final.
        assert first.is_incomplete is True
        await _until(lambda: any("done" in r["ms"] for r in session.records()))
        again = await session.client.text_document_completion_async(params)
        assert isinstance(again, types.CompletionList)
        assert again.is_incomplete is False
        assert [i.text_edit for i in again.items] == [item.text_edit]


async def test_menu_item_after_multibyte_text_replaces_the_typed_word(
    tmp_path: pathlib.Path, slow_sim: SimHandle
) -> None:
    """Also: launched as languages.toml says, in a repository with its own `cache.py`, `lsp/`,
    `completion.py` and `tandem/`, none of which runs."""
    before = TRUTH[: TRUTH.index("label = name.ti") + len("label = name.ti")]
    hostile_repo.plant(tmp_path / "workspace")
    options = fast_model(slow_sim.base_url, max_tokens=24)
    async with serve(tmp_path, "helix", options=options, launch=helix_launch()) as session:
        uri = session.open("sample.py", before)
        result = await session.client.text_document_completion_async(
            types.CompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=session.position_at_end(before)
            )
        )
    assert isinstance(result, types.CompletionList)
    [item] = result.items
    assert isinstance(item.text_edit, types.TextEdit)
    # Helix filters the menu by the word before the cursor, so the item's filter text starts with it.
    assert item.filter_text is not None and item.filter_text.startswith("ti")
    assert _apply(before, item.text_edit, "utf-8").endswith('"; label = name.title() + banner')
    assert hostile_repo.imported(tmp_path / "workspace") == []
