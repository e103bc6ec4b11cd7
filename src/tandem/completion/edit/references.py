"""Does an edit leave other files pointing at names it removed? A check for the fast model's answers.

A multi-file change (a rename, a moved function, a new signature) that the fast model makes in one file
and forgets in another parses, balances and passes the name check of every file it edited: the file it
left out still says `from models import compute_total`, and fails only when run. So, for Python:

1. `removed_names`: the module-level names (functions, classes, assignments) each edited file defined
   before the edit and no longer defines after it (`ast`, in a worker thread: it parses whole files).
2. `dangling_references`: the other files that still import one of them from that module, or use it as
   `module.name`. The candidates come from the workspace symbol index (files that mention the name);
   their text is searched with two patterns, not parsed, so the check stays cheap.

A name that many files mention (more than `max_files` candidates in all) is checked in the first
`max_files` of them only.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Callable, Iterable, Mapping

__all__ = ["dangling_references", "module_of", "removed_names", "still_refers"]


def _module_names(text: str) -> frozenset[str] | None:
    """Names bound at module level by def, class or assignment; None if `text` does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return frozenset(names)


def removed_names(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, frozenset[str]]:
    """{path: module-level names it defined before and not after}, for the Python files of `after`
    that parse both before and after (a file that does not parse is the validator's business)."""
    removed: dict[str, frozenset[str]] = {}
    for path, new in after.items():
        if not path.endswith(".py") or path not in before:
            continue
        old_names, new_names = _module_names(before[path]), _module_names(new)
        if old_names is None or new_names is None:
            continue
        gone = old_names - new_names
        if gone:
            removed[path] = gone
    return removed


def module_of(path: str) -> str:
    """The name other files import `path` by: its stem, or its package's name for `__init__.py`."""
    parts = path.split("/")
    stem = parts[-1].rsplit(".", 1)[0]
    return parts[-2] if stem == "__init__" and len(parts) > 1 else stem


def still_refers(text: str, module: str, name: str) -> bool:
    """Does `text` import `name` from `module` (`from pkg.module import a, name`, also parenthesised and
    relative) or use it as `module.name`?"""
    m, n = re.escape(module), re.escape(name)
    for found in re.finditer(rf"^\s*from\s+(?:[\w.]*\.)?{m}\s+import\s+(\([^)]*\)|[^\n]*)", text, re.MULTILINE):
        imported = found.group(1).strip("() \n").replace("\n", " ")
        if any(part.split(" as ")[0].strip() == name for part in imported.split(",")):
            return True
    return re.search(rf"\b{m}\.{n}\b", text) is not None


def dangling_references(
    removed: Mapping[str, Iterable[str]],
    after: Mapping[str, str],
    *,
    files_using: Callable[[str], set[str]],
    read_text: Callable[[str], str | None],
    max_files: int = 40,
) -> list[str]:
    """One problem, in words, per (removed name, file that still refers to it). `after` holds the edited
    files as the edit leaves them (a file the edit changed is judged by its new text); other files are
    read with `read_text` (None: unreadable, skipped)."""
    problems: list[str] = []
    looked = 0
    for path, names in sorted(removed.items()):
        module = module_of(path)
        for name in sorted(names):
            for other in sorted(files_using(name) - {path}):
                if looked >= max_files:
                    return problems
                looked += 1
                text = after[other] if other in after else read_text(other)
                if text is not None and still_refers(text, module, name):
                    problems.append(
                        f"it removes {name!r} from {path.rsplit('/', 1)[-1]}, which "
                        f"{other.rsplit('/', 1)[-1]} still uses"
                    )
    return problems
