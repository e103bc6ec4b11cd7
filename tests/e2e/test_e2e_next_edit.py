"""Next edits end to end: `tandem serve` over stdio, the simulator answering from the real next change.

The user renames a parameter on the `def` line; the truth renames its other uses too. The suggestion comes
back in Copilot's `textDocument/copilotInlineEdit` shape, stamped with the version it is for; accepting it
starts the next one at once; an answer for a version the user has moved past is never returned. Helix gets
the same suggestion as an "Apply next edit" code action carrying a versioned workspace edit."""

from __future__ import annotations

import asyncio
import pathlib
from typing import Any, Union

import pytest
from e2e_support import Session, fast_model, serve
from fixtures_sim import SimFactory
from lsprotocol import types
from test_e2e_server import _until

from tandem.sim.runner import SimHandle

pytestmark = pytest.mark.e2e

BEFORE = (
    'def area(w, h):\n    """Area of a w by h rectangle."""\n    scale = 1\n    return w * h * scale\n\n\n'
    "print(area(2, 3))\n"
)
TRUTH = (
    'def area(width, h):\n    """Area of a width by h rectangle."""\n    scale = 1\n    return width * h * scale\n\n\n'
    "print(area(2, 3))\n"
)
# The user's own change: "w" -> "width" on the def line, typed after the "w".
TYPED = "idth"


@pytest.fixture
def sim(sim_factory: SimFactory) -> SimHandle:
    handle = sim_factory(profile="spark", ttft_ms=20, error_rate=0.0)
    handle.set_next_edit_truth({"sample.py": TRUTH})
    return handle


def _apply(text: str, edit: dict[str, Any]) -> str:
    """An edit applied as an editor does (ASCII text: columns are the same in every encoding)."""
    lines = text.split("\n")
    start, end = edit["range"]["start"], edit["range"]["end"]
    offset = sum(len(line) + 1 for line in lines[: start["line"]]) + start["character"]
    stop = sum(len(line) + 1 for line in lines[: end["line"]]) + end["character"]
    return text[:offset] + edit["text"] + text[stop:]


def _change(session: Session, uri: str, version: int, edit: dict[str, Any]) -> None:
    session.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(
                        start=types.Position(**edit["range"]["start"]), end=types.Position(**edit["range"]["end"])
                    ),
                    text=edit["text"],
                )
            ],
        )
    )


async def _type_rename(session: Session) -> tuple[str, str, int]:
    uri = session.open("sample.py", BEFORE)
    for i, ch in enumerate(TYPED):
        session.insert(uri, types.Position(line=0, character=10 + i), ch)
    text = BEFORE.replace("def area(w,", "def area(width,")
    return uri, text, 1 + len(TYPED)


async def _ask(session: Session, uri: str, version: int, line: int, character: int) -> list[dict[str, Any]]:
    result = await session.client.protocol.send_request_async(
        "textDocument/copilotInlineEdit",
        {"textDocument": {"uri": uri, "version": version}, "position": {"line": line, "character": character}},
    )
    edits = result.edits if hasattr(result, "edits") else result["edits"]
    return [_as_dict(e) for e in edits]


def _as_dict(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {k: _as_dict(v) for k, v in value._asdict().items()}
    if isinstance(value, list):
        return [_as_dict(v) for v in value]
    return value


async def test_rename_chain_is_suggested_accepted_and_prefetched(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url)) as session:
        uri, text, version = await _type_rename(session)
        [first] = await _ask(session, uri, version, 0, 14)
        assert first["textDocument"] == {"uri": uri, "version": version}
        text = _apply(text, first)
        assert text.split("\n")[1] == '    """Area of a width by h rectangle."""'
        assert first["command"]["command"] == "tandem.nextEditAccepted"
        session.client.protocol.notify("textDocument/didShowInlineEdit", {"item": first})
        version += 1
        _change(session, uri, version, first)
        await session.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=first["command"]["command"], arguments=first["command"]["arguments"])
        )
        # Accepting started the next suggestion: asked at the new version, it is the return line's rename.
        [second] = await _ask(session, uri, version, 1, 30)
        assert second["textDocument"]["version"] == version
        assert _apply(text, second) == TRUTH
        await _until(lambda: any(r.get("next_edit", {}).get("fate") == "accepted" for r in session.records()))
        [accepted] = [r for r in session.records() if r.get("next_edit", {}).get("fate") == "accepted"]
        assert accepted["kind"] == "next_edit" and accepted["next_edit"]["shown"] is True
        assert accepted["next_edit"]["region_lines"] == 8 and accepted["tokens"]["out"] > 0


async def test_an_answer_for_an_older_version_is_never_returned(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    async with serve(tmp_path, "neovim", options=fast_model(sim.base_url)) as session:
        uri, _, version = await _type_rename(session)
        pending = session.client.protocol.send_request_async(
            "textDocument/copilotInlineEdit",
            {"textDocument": {"uri": uri, "version": version}, "position": {"line": 0, "character": 14}},
        )
        # The user types on while the model works.
        session.insert(uri, types.Position(line=5, character=0), "#")
        result = await pending
        assert _as_dict(result)["edits"] == []
        await _until(lambda: any(r.get("outcome") == "stale" for r in session.records()))


def _range_dict(value: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": value.start.line, "character": value.start.character},
        "end": {"line": value.end.line, "character": value.end.character},
    }


def _read_code_actions_as_sent(session: Session) -> None:
    """lsprotocol reads any code action that carries a `command` as a bare Command (its union hook checks
    only for the key), losing the action's edit; real clients read the JSON. Read it as the spec says."""
    converter = session.client.protocol._converter

    def structure(value: Any, _: Any) -> types.Command | types.CodeAction:
        kind = types.Command if isinstance(value.get("command"), str) else types.CodeAction
        return converter.structure(value, kind)  # type: ignore[no-any-return]

    converter.register_structure_hook(Union[types.Command, types.CodeAction], structure)  # noqa: UP007


async def test_helix_gets_a_versioned_apply_next_edit_action(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    async with serve(tmp_path, "helix", options=fast_model(sim.base_url)) as session:
        _read_code_actions_as_sent(session)
        uri, text, version = await _type_rename(session)
        here = types.Position(line=0, character=14)
        actions = await session.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(start=here, end=here),
                context=types.CodeActionContext(diagnostics=[]),
            )
        )
        assert actions is not None
        [action] = [a for a in actions if isinstance(a, types.CodeAction) and a.title == "Apply next edit"]
        assert action.edit is not None and action.edit.document_changes is not None
        [change] = action.edit.document_changes
        assert isinstance(change, types.TextDocumentEdit)
        assert change.text_document.version == version
        [edit] = change.edits
        assert isinstance(edit, types.TextEdit)
        applied = _apply(
            text,
            {
                "range": {
                    "start": {"line": edit.range.start.line, "character": edit.range.start.character},
                    "end": {"line": edit.range.end.line, "character": edit.range.end.character},
                },
                "text": edit.new_text,
            },
        )
        assert applied.split("\n")[1] == '    """Area of a width by h rectangle."""'
        # Helix applies it and runs its command: the next edit is asked for at once, and the completion menu
        # offers it once the cursor is on its line.
        version += 1
        _change(session, uri, version, {"range": _range_dict(edit.range), "text": edit.new_text})
        assert action.command is not None
        await session.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=action.command.command, arguments=action.command.arguments)
        )
        menu = await session.client.text_document_completion_async(
            types.CompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=3, character=12)
            )
        )
        assert isinstance(menu, types.CompletionList)
        [item] = [i for i in menu.items if i.label.startswith("next edit: ")]
        assert item.label == "next edit: return width * h * scale"
        assert isinstance(item.text_edit, types.TextEdit)
        line = applied.split("\n")[3]
        start, end = item.text_edit.range.start.character, item.text_edit.range.end.character
        assert line[:start] + item.text_edit.new_text + line[end:] == "    return width * h * scale"


async def _run_command(session: Session, item: dict[str, Any], command: str = "") -> None:
    await session.client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command=command or item["command"]["command"], arguments=item["command"]["arguments"]
        )
    )


async def test_an_accept_the_document_no_longer_holds_is_refused(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    """The user rewrote the line the suggestion was for, and then the accept command arrived (a client that
    ran it without applying the edit): the accept is traced as stale and chains no next edit."""
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url)) as session:
        uri, text, version = await _type_rename(session)
        [first] = await _ask(session, uri, version, 0, 14)
        assert first["range"]["start"]["line"] == 1
        version += 1
        docstring = {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": len(text.split("\n")[1])}}
        _change(session, uri, version, {"range": docstring, "text": "    pass"})
        await _run_command(session, first)
        await _until(lambda: any(r.get("next_edit", {}).get("fate") == "stale" for r in session.records()))
        # Asked at the new version, the server asks the model afresh: nothing was started by the accept.
        await _ask(session, uri, version, 1, 8)
        session.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        await _until(lambda: sum(r["kind"] == "next_edit" for r in session.records()) >= 2)
        records = [r for r in session.records() if r["kind"] == "next_edit"]
        assert [r["prefetched"] for r in records] == [False, False]


async def test_an_edit_that_would_break_the_parse_is_not_suggested(
    tmp_path: pathlib.Path, sim_factory: SimFactory
) -> None:
    """The truth's docstring rename leaves the docstring unterminated: that hunk is refused ("parse") and
    the next one, the return line's rename, is the suggestion."""
    broken = TRUTH.replace('rectangle."""', "rectangle.")
    sim = sim_factory(profile="spark", ttft_ms=20, error_rate=0.0)
    sim.set_next_edit_truth({"sample.py": broken})
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url)) as session:
        uri, text, version = await _type_rename(session)
        [first] = await _ask(session, uri, version, 0, 14)
        assert _apply(text, first).split("\n")[1:4] == [
            '    """Area of a w by h rectangle."""',
            "    scale = 1",
            "    return width * h * scale",
        ]
        await _run_command(session, first, "tandem.nextEditDismissed")
        await _until(lambda: any(r.get("next_edit", {}).get("fate") == "dismissed" for r in session.records()))
    [record] = [r for r in session.records() if r["kind"] == "next_edit"]
    assert record["outcome"] == "answered" and record["next_edit"]["refused"] == ["parse"]


def _model_requests(sim: SimHandle) -> int:
    return int(sim.stats()["requests"].get("chat.completions", 0))


async def test_cursor_motion_asks_nothing_and_the_speculation_budget_applies(
    tmp_path: pathlib.Path, sim: SimHandle
) -> None:
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url)) as session:
        uri, _, version = await _type_rename(session)
        [first] = await _ask(session, uri, version, 0, 14)
        asked = _model_requests(sim)
        # The cursor moves; the text does not: the same suggestion, and the model is not asked again.
        assert await _ask(session, uri, version, 3, 5) == [first]
        assert _model_requests(sim) == asked
    # Next edits spend the speculation budget ([prefetch] tokens_per_minute): a spent one asks nothing.
    options = fast_model(sim.base_url) | {"prefetch": {"tokens_per_minute": 100}}
    (tmp_path / "spent").mkdir()
    async with serve(tmp_path / "spent", "vscode", options=options) as session:
        uri, _, version = await _type_rename(session)
        assert await _ask(session, uri, version, 0, 14) == []
        await _until(lambda: any(r["kind"] == "next_edit" for r in session.records()))
        [record] = [r for r in session.records() if r["kind"] == "next_edit"]
        assert record["outcome"] == "skipped" and "budget" in record["error"]
    assert _model_requests(sim) == asked


SPLIT_BEFORE = "".join(f"value_{i} = compute({i})\n" for i in range(12))
# The user's change is on line 5 ("compute" -> "evaluate"); the truth makes it on lines 2 and 9 as well.
SPLIT_TRUTH = "".join(f"value_{i} = {'evaluate' if i in (2, 5, 9) else 'compute'}({i})\n" for i in range(12))


async def _suggest_both(session: Session) -> list[dict[str, Any]]:
    """The user changes line 5 of SPLIT_BEFORE; the two suggested changes are accepted one after the other
    (each asked at line 5, as after the change). Returns the accepted suggestions' records."""
    uri = session.open("split.py", SPLIT_BEFORE)
    session.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(
                        start=types.Position(line=5, character=10), end=types.Position(line=5, character=17)
                    ),
                    text="evaluate",
                )
            ],
        )
    )
    text = SPLIT_BEFORE.replace("value_5 = compute", "value_5 = evaluate")
    version = 2
    for _ in range(2):
        [edit] = await _ask(session, uri, version, 5, 18)
        text = _apply(text, edit)
        version += 1
        _change(session, uri, version, edit)
        await session.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=edit["command"]["command"], arguments=edit["command"]["arguments"])
        )
    assert text == SPLIT_TRUTH
    await _until(lambda: sum(r.get("next_edit", {}).get("fate") == "accepted" for r in session.records()) == 2)
    return [r for r in session.records() if r.get("next_edit", {}).get("fate") == "accepted"]


@pytest.mark.parametrize(("tokens_per_minute", "parts"), [(20_000, 2), (2_500, 1)])
async def test_a_split_region_asks_both_parts_and_suggests_from_either(
    tmp_path: pathlib.Path, tokens_per_minute: int, parts: int, sim_factory: SimFactory
) -> None:
    """With `[next_edit] split`, the region is asked in two parts at once (the cursor's line down, and the
    region's top to it): the change below the cursor and the one above are both suggested, one after the
    other, and each record counts both parts' tokens. Under a budget the two parts would take more than
    half of, the region is asked whole."""
    sim = sim_factory(profile="spark", ttft_ms=20, error_rate=0.0)
    sim.set_next_edit_truth({"split.py": SPLIT_TRUTH})
    options = {
        **fast_model(sim.base_url),
        # Each suggestion from a request of its own (with `rebase`, the second is the first's rewrite).
        "next_edit": {"split": True, "rebase": False},
        "prefetch": {"tokens_per_minute": tokens_per_minute},
    }
    async with serve(tmp_path, "vscode", options=options) as session:
        accepted = await _suggest_both(session)
        assert [r["next_edit"]["parts"] for r in accepted] == [parts, parts]
        # Both parts' prompts are paid for: the provider's usage adds up to the two prompts counted.
        assert all(r["tokens"]["in"] >= 0.9 * r["context_tokens"] > 0 for r in accepted)


async def test_the_budget_counts_what_a_next_edit_spent_not_its_max_tokens(
    tmp_path: pathlib.Path, sim_factory: SimFactory
) -> None:
    """A request is charged its prompt and its whole `max_tokens` before it goes out, and settled to what
    it spent when its stream ends (cut after the first hunk, a few dozen tokens). Here two requests'
    `max_tokens` exceed the minute's budget: the second suggestion comes only because the first was
    settled."""
    sim = sim_factory(profile="spark", ttft_ms=20, error_rate=0.0)
    sim.set_next_edit_truth({"split.py": SPLIT_TRUTH})
    options = {
        **fast_model(sim.base_url),
        "next_edit": {"split": False, "max_tokens": 5_000, "prefetch_on_accept": False, "rebase": False},
        "prefetch": {"tokens_per_minute": 8_000, "on_shown": False},
    }
    async with serve(tmp_path, "vscode", options=options) as session:
        first, second = await _suggest_both(session)
        spent = first["tokens"]["in"] + first["tokens"]["out"]
        assert 0 < spent and spent + second["context_tokens"] + 5_000 <= 8_000 < 2 * 5_000


async def test_a_second_ask_at_the_version_being_asked_gets_that_asks_answer(
    tmp_path: pathlib.Path, sim: SimHandle
) -> None:
    """VS Code asks for code actions (which offer the next edit) and for the inline edit at the same version:
    the second ask joins the first instead of answering "no edit since the last request" (it showed nothing,
    1 of 6 runs of the VS Code chain scenario)."""
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url)) as session:
        uri, _, version = await _type_rename(session)
        params = {"textDocument": {"uri": uri, "version": version}, "position": {"line": 0, "character": 14}}
        first = session.client.protocol.send_request_async("textDocument/copilotInlineEdit", params)
        second = session.client.protocol.send_request_async("textDocument/copilotInlineEdit", params)
        one, two = (_as_dict(result)["edits"] for result in await asyncio.gather(first, second))
        assert one and two == one
