"""A repository whose ignore files hold lines that are no pattern (a lone `!`, as black's own test data
has) is an attack on the ignore rules: if such a line stopped the file from being read, or stopped the
workspace scan, the files it ignores would be sent. End to end: `tandem serve` over stdio on such a
workspace, completions asked in a file that uses names from an ignored file at the root, one ignored by a
nested ignore file, and one that is not ignored; the model's request log shows what got out."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest
from e2e_support import serve
from injected_model import InjectedModel, injected_model
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
