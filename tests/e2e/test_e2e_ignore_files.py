"""A repository whose ignore files hold lines that are no pattern (a lone `!`, as black's own test data
has) is an attack on the ignore rules: if such a line stopped the file from being read, or stopped the
workspace scan, the files it ignores would be sent. End to end: `tandem serve` over stdio on such a
workspace, completions asked in a file that uses names from an ignored file at the root, one ignored by a
nested ignore file, and one that is not ignored; the model's request log shows what got out."""

from __future__ import annotations

import asyncio
import json
import pathlib
import subprocess
from collections.abc import Iterator

import pytest
from e2e_support import serve
from injected_model import InjectedModel, injected_model
from lsprotocol import types
from test_e2e_server import _until_async

pytestmark = pytest.mark.e2e

HELPER_MARKER = "HELPER_MAY_BE_SENT_8f14e45f"
LOCAL_SECRET = "LOCAL_ONLY_SECRET_c9f0f895"
KEYS_SECRET = "VENDOR_KEYS_SECRET_45c48cce"
APP = (
    "from helper import helper_value\nfrom local_only import local_value\nfrom vendor.keys import signing_key\n\n\n"
    "def run():\n    return helper_value() + local_value() + signing_key() + "
)


@pytest.fixture
def model() -> Iterator[InjectedModel]:
    yield from injected_model()


async def test_an_ignore_file_line_that_is_no_pattern_does_not_switch_the_rules_off(
    tmp_path: pathlib.Path, model: InjectedModel
) -> None:
    root = tmp_path / "workspace"
    (root / "vendor").mkdir(parents=True)
    (root / ".gitignore").write_text("!\nlocal_only.py\n")
    (root / "vendor" / ".gitignore").write_text("!\n\\\nkeys.py\n")
    (root / "vendor" / "__init__.py").write_text("")
    (root / "helper.py").write_text(f"def helper_value():\n    return '{HELPER_MARKER}'\n")
    (root / "local_only.py").write_text(f"def local_value():\n    return '{LOCAL_SECRET}'\n")
    (root / "vendor" / "keys.py").write_text(f"def signing_key():\n    return '{KEYS_SECRET}'\n")
    user = f'[models.fast]\nbase_url = "{model.base_url}"\nmodel = "users-model"\nmax_tokens = 32\n'
    async with serve(tmp_path, "vscode", user_config=user) as session:
        uri = session.open("app.py", APP)
        text = [APP]

        async def helper_sent() -> bool:
            # The scan and the document's index run in the background: ask until the model is shown the
            # definition the workspace may send (so the snippets path is working), then look for the others.
            # A key typed before each ask, so that each is a new prompt, not the last one's cached answer.
            session.insert(uri, session.position_at_end(text[0]), "x")
            text[0] += "x"
            await session.inline(uri, session.position_at_end(text[0]))
            return HELPER_MARKER in model.sent()

        await _until_async(helper_sent)
    sent = model.sent()
    assert LOCAL_SECRET not in sent and KEYS_SECRET not in sent


def _git(*args: str, cwd: pathlib.Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _marked(name: str) -> str:
    return f"SECRET_{name.upper().replace('/', '_').replace('.', '_')}_e0c4"


# Each file that git ignores, and where the rule that ignores it lives: the repository's info/exclude, the
# user's global excludes file, the repository's own `core.excludesFile`, ignore files inside directories
# the scan never walks, a nested ignore file that tries to re-include files under a directory that is
# excluded; and the second workspace folder's own `.gitignore` and `.tandemignore`.
GIT_IGNORED = ("by_info_exclude.py", "by_global.py", "by_repo_excludes.py", ".idea/workspace_notes.py",
               "build/generated.py", "private/notes.py")  # fmt: skip


async def test_every_file_git_ignores_stays_on_the_machine(tmp_path: pathlib.Path, model: InjectedModel) -> None:
    """Documents opened in the editor and completed in: none that git ignores may reach the model, wherever
    git's rule for it lives; a plain file beside them does (the path works)."""
    root = tmp_path / "workspace"
    second = tmp_path / "second"
    for folder in (root, second):
        folder.mkdir()
        _git("init", "-q", cwd=folder)
    (root / ".git" / "info" / "exclude").write_text("by_info_exclude.py\n")
    # git honours a repository's own core.excludesFile (in .git/config) before the user's global one.
    (tmp_path / "repo-excludes").write_text("by_repo_excludes.py\n")
    _git("config", "core.excludesFile", str(tmp_path / "repo-excludes"), cwd=root)
    (tmp_path / "home" / ".config" / "git").mkdir(parents=True)
    (tmp_path / "home" / ".config" / "git" / "ignore").write_text("by_global.py\n")
    for directory in (".idea", "build"):
        (root / directory).mkdir()
        (root / directory / ".gitignore").write_text("*\n")
    (root / ".gitignore").write_text("private/\n")
    (root / "private").mkdir()
    (root / "private" / ".gitignore").write_text("!*\n")  # git does not read it: its directory is excluded
    (second / ".gitignore").write_text("hidden.py\n")
    (second / ".tandemignore").write_text("tandem_only.py\n")
    user = f'[models.fast]\nbase_url = "{model.base_url}"\nmodel = "users-model"\nmax_tokens = 32\n'
    async with serve(tmp_path, "vscode", user_config=user, more_folders=[second]) as session:
        probes = {name: session.root / name for name in GIT_IGNORED}
        probes["second/hidden.py"] = second / "hidden.py"
        probes["second/tandem_only.py"] = second / "tandem_only.py"
        for name, file in probes.items():
            text = f"VALUE = '{_marked(name)}'\nx = "
            file.write_text(text)
            uri = file.as_uri()
            session.client.text_document_did_open(
                types.DidOpenTextDocumentParams(
                    text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
                )
            )
            await session.inline(uri, session.position_at_end(text))
        plain = "VALUE = 'PLAIN_MAY_BE_SENT_91ab'\nx = "
        uri = session.open("plain.py", plain)
        assert await session.inline(uri, session.position_at_end(plain)) is not None
    sent = model.sent()
    assert "PLAIN_MAY_BE_SENT_91ab" in sent
    assert [name for name in probes if _marked(name) in sent] == []


async def test_an_ignore_file_saved_after_start_up_applies_at_once(
    tmp_path: pathlib.Path, model: InjectedModel
) -> None:
    """A `.tandemignore` (and a `.gitignore`) written while the server runs: the files they name are sent no
    more, even a document that was open and sent before."""
    root = tmp_path / "workspace"
    root.mkdir()
    user = f'[models.fast]\nbase_url = "{model.base_url}"\nmodel = "users-model"\nmax_tokens = 32\n'
    texts = {name: f"VALUE = '{_marked(name)}'\nx = " for name in ("late.py", "later.py")}
    async with serve(tmp_path, "vscode", user_config=user) as session:
        uris = {name: session.open(name, text) for name, text in texts.items()}
        for name, text in texts.items():
            await session.inline(uris[name], session.position_at_end(text))
        # Each answer ("pass") is taken as accepted and the completion after it asked ahead: those two requests
        # are made before the rules exist, and may reach the model a moment after the answer reaches the editor.
        await asyncio.to_thread(model.wait_for_requests, 2 * len(texts))
        assert all(_marked(name) in model.sent() for name in texts)  # sent before the rules existed
        (root / ".tandemignore").write_text("late.py\n")
        (root / ".gitignore").write_text("later.py\n")
        before = len(model.requests)
        for name, text in texts.items():
            session.insert(uris[name], session.position_at_end(text), "y")
            await session.inline(uris[name], session.position_at_end(text + "y"))
            reopened = session.open(f"sub/{name}", text)
            await session.inline(reopened, session.position_at_end(text))
    after = "\n".join(json.dumps(body) for body in model.requests[before:])
    assert [name for name in texts if _marked(name) in after] == []


async def test_a_pattern_of_many_stars_does_not_hold_the_server(tmp_path: pathlib.Path, model: InjectedModel) -> None:
    """A backtracking matcher takes exponential time on `*a*a*...*b` against a long name of `a`s (the
    server froze); the patterns are matched in linear time, and the server answers."""
    root = tmp_path / "workspace"
    root.mkdir()
    stars = "*a" * 14 + "*b"
    (root / ".gitignore").write_text(stars + "\n")
    (root / ".tandemignore").write_text(stars + "\n")
    user = f'[models.fast]\nbase_url = "{model.base_url}"\nmodel = "users-model"\nmax_tokens = 32\n'
    text = "VALUE = 'MANY_STARS_MAY_BE_SENT_5d1f'\nx = "
    async with serve(tmp_path, "vscode", user_config=user, options={"privacy": {"opt_in": [stars]}}) as session:
        uri = session.open("a" * 40 + ".py", text)
        await session.inline(uri, session.position_at_end(text))
    assert "MANY_STARS_MAY_BE_SENT_5d1f" in model.sent()
