"""The workspace index: what the scan may read, what may be sent, and token-budgeted windows."""

from __future__ import annotations

import asyncio
import os
import pathlib

import pytest

from tandem.cache.lines import LineBuffer
from tandem.completion.config.tree import ContextConfig, PrivacyConfig
from tandem.completion.workspace import WorkspaceIndex

AWS_KEY = "AKIA" + "ABCDEFGHIJKLMNOP"


def _workspace(root: pathlib.Path) -> None:
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "models.py").write_text("class Invoice:\n    def total(self):\n        return 42\n")
    (root / "main.py").write_text("from pkg.models import Invoice\n\nprint(Invoice().total())\n")
    (root / ".env").write_text("TOKEN=abc\n")
    (root / "settings.py").write_text(f"KEY = '{AWS_KEY}'\n")
    (root / ".gitignore").write_text("generated/\n")
    (root / "generated").mkdir()
    (root / "generated" / "big.py").write_text("def generated():\n    pass\n")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "dep.js").write_text("function dep() {}\n")


async def test_scan_indexes_code_and_refuses_secrets_and_ignored_files(tmp_path: pathlib.Path) -> None:
    _workspace(tmp_path)
    index = WorkspaceIndex(root=tmp_path, context=ContextConfig(), privacy=PrivacyConfig())
    assert await index.start() == []
    assert index.scan is not None
    indexed = set(index.symbols.paths())
    assert {"pkg/models.py", "main.py", "pkg/__init__.py"} <= indexed
    assert "settings.py" not in indexed  # a credential in its content
    assert "generated/big.py" not in indexed  # .gitignore
    assert "node_modules/dep.js" not in indexed
    assert any("contains" in reason for reason in index.scan.refused), index.scan.refused
    assert not index.may_send(".env")
    assert not index.may_send("generated/big.py")
    assert index.may_send("main.py")


async def test_open_secret_document_is_never_sent(tmp_path: pathlib.Path) -> None:
    _workspace(tmp_path)
    index = WorkspaceIndex(root=tmp_path, context=ContextConfig(scan_workspace=False), privacy=PrivacyConfig())
    await index.start()
    assert not index.open((tmp_path / ".env").as_uri(), LineBuffer("TOKEN=abc\n"))
    assert not index.open((tmp_path / "notes.py").as_uri(), LineBuffer(f"x = '{AWS_KEY}'\n"))
    assert index.open((tmp_path / "main.py").as_uri(), LineBuffer("print(1)\n"))
    opted = WorkspaceIndex(
        root=tmp_path, context=ContextConfig(scan_workspace=False), privacy=PrivacyConfig(opt_in=(".env",))
    )
    await opted.start()
    assert opted.open((tmp_path / ".env").as_uri(), LineBuffer("TOKEN=abc\n"))


async def test_window_includes_the_imported_definition_and_follows_edits(tmp_path: pathlib.Path) -> None:
    _workspace(tmp_path)
    index = WorkspaceIndex(root=tmp_path, context=ContextConfig(budget_tokens=1024), privacy=PrivacyConfig())
    await index.start()
    uri = (tmp_path / "main.py").as_uri()
    buffer = LineBuffer("from pkg.models import Invoice\n\nprint(Invoice().)\n")
    index.open(uri, buffer)
    for _ in range(200):  # the token index is built in a worker thread
        window = index.window(uri, 2, 16)
        if window is not None:
            break
        await asyncio.sleep(0.01)  # sleep-ok: waiting for a worker thread, bounded
    assert window is not None
    assert window.prefix.endswith("print(Invoice().")
    assert "class Invoice" in window.snippet_text
    edit = buffer.replace((2, 16), (2, 16), "tot")
    index.change(uri, edit)
    after = index.window(uri, 2, 19)
    assert after is not None and after.prefix.endswith("print(Invoice().tot")
    assert after.total_tokens <= 1024


async def test_a_window_as_if_a_suggestion_were_accepted_ends_with_it_within_the_budget(
    tmp_path: pathlib.Path,
) -> None:
    """Speculation on a suggestion not yet accepted: the prefix reads as if it were typed, and the window
    stays within the same budget, the oldest lines of the prefix giving way to it."""
    index = WorkspaceIndex(root=tmp_path, context=ContextConfig(budget_tokens=256), privacy=PrivacyConfig())
    await index.start()
    uri = (tmp_path / "long.py").as_uri()
    text = "".join(f"value_{i} = compute({i}, {i * 7})\n" for i in range(400)) + "total = "
    index.open(uri, LineBuffer(text))
    for _ in range(200):  # the token index is built in a worker thread
        plain = index.window(uri, 400, 8)
        if plain is not None:
            break
        await asyncio.sleep(0.01)  # sleep-ok: waiting for a worker thread, bounded
    assert plain is not None and plain.prefix.endswith("total = ")
    suggestion = "sum(\n" + "".join(f"    value_{i},\n" for i in range(30)) + ")\n"  # about 130 tokens
    ahead = index.window(uri, 400, 8, inserted=suggestion)
    assert ahead is not None
    assert ahead.prefix.endswith("total = " + suggestion)
    assert ahead.suffix == plain.suffix
    assert plain.total_tokens <= 256 and ahead.total_tokens <= 256
    assert len(ahead.prefix) - len(suggestion) < len(plain.prefix)  # older lines gave way


async def test_large_open_document_is_allowed_but_still_scanned_for_credentials(tmp_path: pathlib.Path) -> None:
    index = WorkspaceIndex(root=tmp_path, context=ContextConfig(scan_workspace=False), privacy=PrivacyConfig())
    await index.start()
    big = "x = 1  # é\n" * 150_000  # ~1.8 MB, over the 1 MB cap for files read from disk
    assert index.open((tmp_path / "big.py").as_uri(), LineBuffer(big))
    assert not index.open((tmp_path / "big2.py").as_uri(), LineBuffer(big + f"KEY = '{AWS_KEY}'\n"))


async def test_a_credential_brought_in_by_any_incremental_change_refuses_the_document() -> None:
    """Typed a character at a time, assembled by joining two lines, or pasted with a PEM header: each is
    caught by the check of the lines the change touched, and the refusal stays."""
    index = WorkspaceIndex(root=None, context=ContextConfig(scan_workspace=False), privacy=PrivacyConfig())
    half = AWS_KEY[:10]
    cases: dict[str, tuple[str, list[tuple[tuple[int, int], tuple[int, int], str]]]] = {
        "typed": ("import os\nKEY = ''\n", [((1, 7 + i), (1, 7 + i), c) for i, c in enumerate(AWS_KEY)]),
        "joined": (f"import os\nKEY = '{half}\n{AWS_KEY[10:]}'\n", [((1, 7 + len(half)), (2, 0), "")]),
        "pasted": ("import os\n", [((1, 0), (1, 0), "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n")]),
    }
    for name, (text, edits) in cases.items():
        uri = f"file:///w/{name}.py"
        buffer = LineBuffer(text)
        assert index.open(uri, buffer)
        verdicts = [index.change(uri, buffer.replace(start, end, new)) for start, end, new in edits]
        assert not index.verdict(uri), (name, buffer.text())
        # Told once: the change that brought the credential in returns the refusal, none before it.
        assert [bool(v) for v in verdicts] == [True] * (len(edits) - 1) + [False], name
        assert index.change(uri, buffer.replace((0, 0), (0, 0), "# ")), name  # later changes: nothing new
        assert not index.verdict(uri)
    clean = LineBuffer("x = 1\n")
    assert index.open("file:///w/clean.py", clean)
    assert index.change("file:///w/clean.py", clean.replace((0, 5), (0, 5), "2"))
    assert index.verdict("file:///w/clean.py")


def test_the_scan_never_reads_through_a_link_out_or_to_a_secret(tmp_path: pathlib.Path) -> None:
    from tandem.cache.privacy import PrivacyPolicy
    from tandem.completion.workspace import scan_workspace

    home, root = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    root.mkdir()
    (home / "creds.py").write_text("def home_secret():\n    pass\n")
    (home / "lib").mkdir()
    (home / "lib" / "deep.py").write_text("def deep_secret():\n    pass\n")
    (root / ".env").write_text("TOKEN=abc\n")
    (root / "creds.py").symlink_to(home / "creds.py")
    (root / "lib").symlink_to(home / "lib", target_is_directory=True)
    (root / "env.py").symlink_to(root / ".env")
    (root / "own.py").write_text("def own():\n    pass\n")
    (root / "alias.py").symlink_to(root / "own.py")
    scan = scan_workspace(root, policy=PrivacyPolicy(), max_files=100)
    assert sorted(scan.symbols.paths()) == ["alias.py", "own.py"]
    assert scan.refused == {"links outside the workspace": 1, "looks like a secret by its name": 1}
    # The user (never the workspace) may opt a linked path in.
    opted = scan_workspace(root, policy=PrivacyPolicy(opt_in=("creds.py",)), max_files=100)
    assert "creds.py" in set(opted.symbols.paths())


def test_the_scan_skips_a_named_pipe_instead_of_blocking_on_it(tmp_path: pathlib.Path) -> None:
    """A FIFO named like source code (nobody writes to it) would block the scan's read for good, and with
    it every edit waiting for the scan."""
    from tandem.cache.privacy import PrivacyPolicy
    from tandem.completion.workspace import ScanProgress, scan_workspace

    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "real.py").write_text("def real():\n    pass\n")
    progress = ScanProgress()
    scan = scan_workspace(tmp_path, policy=PrivacyPolicy(), max_files=100, progress=progress)
    assert sorted(scan.symbols.paths()) == ["real.py"]
    assert scan.refused == {"not a regular file": 1}
    assert progress.files == scan.files == 1


async def test_the_index_says_while_its_scan_runs_and_waits_for_it_within_a_bound(tmp_path: pathlib.Path) -> None:
    _workspace(tmp_path)
    index = WorkspaceIndex(root=tmp_path, context=ContextConfig(), privacy=PrivacyConfig())
    assert index.scanning  # from the start: an edit asked before `start` runs waits too
    assert await index.wait_for_scan(0.0) is False
    started = asyncio.ensure_future(index.start())
    assert await index.wait_for_scan(60.0) is True
    assert not index.scanning and index.scan is not None and index.scan_progress.files == index.scan.files
    await started
    unscanned = WorkspaceIndex(root=tmp_path, context=ContextConfig(scan_workspace=False), privacy=PrivacyConfig())
    assert not unscanned.scanning and await unscanned.wait_for_scan(0.0) is True


async def test_symbols_are_indexed_again_once_after_the_last_edit_with_one_timer(tmp_path: pathlib.Path) -> None:
    index = WorkspaceIndex(root=tmp_path, context=ContextConfig(scan_workspace=False), privacy=PrivacyConfig())
    await index.start()
    uri = (tmp_path / "typed.py").as_uri()
    buffer = LineBuffer("x = 1\n")
    index.open(uri, buffer)
    timers = []
    for ch in "def later(): pass":
        edit = buffer.replace((1, len(buffer.line_content(1))), (1, len(buffer.line_content(1))), ch)
        index.change(uri, edit)
        timers.append(index._docs[uri].symbols_timer)
    # One timer for the whole burst of keys, not one per key.
    assert timers[0] is not None and all(timer is timers[0] for timer in timers)
    doc = index._docs[uri]
    # The timer going off before the last edit's due time waits on, and indexes nothing yet.
    index._reindex(uri)
    assert "typed.py" not in index.symbols and doc.symbols_timer is not None
    assert doc.symbols_timer is not timers[0]
    doc.symbols_timer.cancel()
    doc.symbols_due = asyncio.get_running_loop().time()  # the last edit is SYMBOLS_AFTER_EDIT_S old
    index._reindex(uri)
    assert doc.symbols_timer is None
    assert index.symbols.definitions("later")


async def test_edits_reach_the_token_index_when_it_is_read_as_if_each_had_at_once(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """didChange leaves the token index behind until a window reads it; keys typed on one line meanwhile
    are re-encoded once. The index then holds what applying every edit at once gives (lines, blocks, counts),
    and so does every window."""
    from tandem.cache.token_index import TokenIndex

    workspace = WorkspaceIndex(
        root=tmp_path, context=ContextConfig(budget_tokens=300, scan_workspace=False), privacy=PrivacyConfig()
    )
    await workspace.start()
    uri = (tmp_path / "typed.py").as_uri()
    text = "".join(f"def f{i}(x):\n    return x * {i}\n\n" for i in range(120))
    buffer = LineBuffer(text)
    workspace.open(uri, buffer)
    for _ in range(200):  # the token index is built in a worker thread
        if workspace.window(uri, 0, 0) is not None:
            break
        await asyncio.sleep(0.01)  # sleep-ok: waiting for a worker thread, bounded
    doc = workspace._docs[uri]
    assert doc.index is not None
    assert workspace.counter is not None
    reference = TokenIndex(workspace.counter, LineBuffer(text).lines(0, buffer.line_count))
    encoded: list[int] = []
    patch = TokenIndex.replace_lines
    monkeypatch.setattr(TokenIndex, "replace_lines", lambda self, *a: (encoded.append(1), patch(self, *a))[1])

    def edit(start: tuple[int, int], end: tuple[int, int], new: str) -> None:
        done = buffer.replace(start, end, new)
        workspace.change(uri, done)
        patch(reference, done.start_line, done.start_line + done.old_line_count,
              buffer.lines(done.start_line, done.start_line + done.new_line_count))  # fmt: skip

    windows = 0

    def read(line: int, character: int) -> None:
        nonlocal windows
        window = workspace.window(uri, line, character)
        assert window is not None and workspace._builder is not None
        # The same builder (its recent edits, its options) over the index that took every edit at once.
        fresh = workspace._builder.build(path="typed.py", index=reference, line=line, character=character)
        assert (window.prefix, window.suffix, window.total_tokens) == (fresh.prefix, fresh.suffix, fresh.total_tokens)
        index = doc.index
        assert index is not None
        assert list(index.blocks()) == list(reference.blocks())
        assert list(index.lines) == list(reference.lines)
        windows += 1

    for i, ch in enumerate("    total = f3(4)"):  # a new line's keys, typed between two windows
        if i == 0:
            edit((200, 0), (200, 0), "\n")
        edit((200, i), (200, i), ch)
    before = len(encoded)
    read(200, 17)
    assert len(encoded) - before == 2  # the new line, then the line's keys at once (not one per key)
    edit((5, 0), (7, 0), "")  # two lines out, far above
    edit((30, 4), (30, 10), "yield")
    read(198, 17)
    edit((198, 17), (198, 17), " + f4(5)")
    read(198, 25)
    assert windows == 3


def test_the_scan_keeps_no_text_and_a_file_changed_since_is_not_read_back(tmp_path: pathlib.Path) -> None:
    """The index reads a scanned file again when it needs its lines, through the door, and only while the
    bytes are those the scan read and judged: a secret written into the file since is never sent."""
    from tandem.cache.privacy import PrivacyPolicy
    from tandem.completion.workspace import scan_workspace

    (tmp_path / "models.py").write_text("class Invoice:\n    def total(self):\n        return 42\n")
    scan = scan_workspace(tmp_path, policy=PrivacyPolicy(), max_files=100)
    symbols = scan.symbols.file("models.py")
    assert symbols is not None and symbols.compressed_text is None
    assert scan.symbols.lines("models.py") == ["class Invoice:", "    def total(self):", "        return 42"]
    (tmp_path / "models.py").write_text(f"class Invoice:\n    KEY = '{AWS_KEY}'\n")
    scan.symbols._decompressed.clear()  # what `lines` keeps of the files last asked for
    assert scan.symbols.lines("models.py") is None and scan.symbols.text("models.py") is None
