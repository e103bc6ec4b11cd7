"""What a commit changed in code: the role of each file, and the "hard" label an edit request is judged by.

An editor's edit request is about code. A one-line fix that also adds a changelog line is a one-file
edit, so the label counts only source files, by the roles of `tandem.completion.routing.change_roles` (source,
test, doc, config, generated, other), which the router's history features share.

`code_hard`: the change needs more than one source file, or more than `max_lines` changed lines of them.
Tests do not count when the commit changes source too: the regression test that comes with a fix is
written against the fixed code, not needed to make it, and counting it would make almost every bug fix
"multi-file" again (the old label's flaw). When a commit changes only tests, the tests are the code.
"""

from __future__ import annotations

from collections.abc import Iterable

from tandem.completion.routing.change_roles import SOURCE_SUFFIXES, Changed, Role, code_files, file_role, is_source

__all__ = ["SOURCE_SUFFIXES", "Changed", "Role", "code_files", "code_hard", "file_role", "is_source"]


def code_hard(changes: Iterable[Changed], *, max_lines: int = 20, count_tests: bool = False) -> bool:
    """More than one code file, or more than `max_lines` changed lines in them."""
    code = code_files(changes, count_tests=count_tests)
    return len(code) > 1 or sum(c.added + c.deleted for c in code) > max_lines
