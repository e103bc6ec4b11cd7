"""The line a user reads when an edit ends (lsp/edit_report.py)."""

from __future__ import annotations

from tandem.completion.edit.file_edits import FileEdit
from tandem.lsp.edit_report import applied_message, changes

OLD = "def f(x):\n    return x\n"


def test_one_file_names_the_model_the_file_and_the_lines() -> None:
    edit = FileEdit(path="a.py", start=0, end=len(OLD), new_text="def f(x: int) -> int:\n    return x\n")
    files = changes([edit], {"a.py": OLD}, {"a.py"})
    assert applied_message("fast", "m", files) == "tandem: fast model (m) edited a.py (+1 -1 lines)"


def test_a_file_that_is_not_open_is_named_so() -> None:
    """An edit that changes only a file the user does not have open must not pass unseen."""
    edit = FileEdit(path="lib/b.py", start=len(OLD), end=len(OLD), new_text="\n\ndef g():\n    pass\n")
    files = changes([edit], {"lib/b.py": OLD}, {"a.py"})
    message = applied_message("accurate", "", files, rebased=True)
    assert message == (
        "tandem: accurate model edited lib/b.py (+4 -0 lines, not open); moved around what you typed meanwhile"
    )


def test_several_files_sum_the_change_and_list_each() -> None:
    edits = [
        FileEdit(path="b.py", start=0, end=3, new_text="fun"),
        FileEdit(path="a.py", start=0, end=0, new_text="x = 1\n", creates=True),
    ]
    files = changes(edits, {"b.py": OLD, "a.py": ""}, {"b.py"})
    assert applied_message("fast", "m", files) == (
        "tandem: fast model (m) edited 2 files (+2 -1 lines): a.py (+1 -0, new file), b.py (+1 -1)"
    )
