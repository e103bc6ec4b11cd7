"""Unit tests of what the edit path feeds the router: the working diff (git HEAD or the saved text) and
the `SymbolLookup` adapter over the workspace index (`cache.symbols.SymbolIndex`)."""

from __future__ import annotations

import pathlib
import subprocess

from tandem.cache.symbols import SymbolIndex
from tandem.completion.routing.router import RouteInputs, RouterThresholds, route, route_features
from tandem.completion.routing.working_diff import git_toplevel, working_diff
from tandem.completion.routing.workspace_symbols import IndexLookup, candidate_names

MODELS = "def compute_total(invoice):\n    return invoice.total\n"
VIEWS = "from models import compute_total\n\ndef show(i):\n    return compute_total(i)\n"
URLS = "from views import show\nroutes = [show]\n"


def git(root: pathlib.Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(root), *args], check=True, capture_output=True
    )


def test_working_diff_without_git_is_unsaved_changes(tmp_path: pathlib.Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    (tmp_path / "b.py").write_text("z = 3\n")
    assert git_toplevel(tmp_path) is None
    open_docs = {str(tmp_path / "a.py"): "x = 1\ny = 20\nw = 4\n", str(tmp_path / "b.py"): "z = 3\n"}
    diff = working_diff(tmp_path, open_docs)
    assert diff.files == ("a.py",) and diff.lines == 3  # one line changed (2) plus one added (1)


def test_working_diff_counts_saved_and_unsaved_changes_against_head(tmp_path: pathlib.Path) -> None:
    git(tmp_path, "init", "-q")
    for name, text in {"a.py": "x = 1\n", "b.py": "y = 1\n", "c.py": "z = 1\n"}.items():
        (tmp_path / name).write_text(text)
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "start")
    (tmp_path / "b.py").write_text("y = 2\n")  # saved, not committed
    open_docs = {
        str(tmp_path / "a.py"): "x = 1\nx += 1\n",  # unsaved
        str(tmp_path / "c.py"): "z = 1\n",  # open, unchanged
    }
    diff = working_diff(tmp_path, open_docs)
    assert diff.files == ("a.py", "b.py")
    assert diff.lines == 1 + 2
    # Saving the open file does not change the count: HEAD is the reference.
    (tmp_path / "a.py").write_text("x = 1\nx += 1\n")
    assert working_diff(tmp_path, open_docs) == diff


def test_working_diff_with_no_workspace_is_empty() -> None:
    assert working_diff(None, {"/x.py": "a"}).lines == 0


def index_of(files: dict[str, str]) -> SymbolIndex:
    index = SymbolIndex()
    for path, text in files.items():
        index.update(path, text)
    return index


def test_index_lookup_answers_the_router_from_the_workspace_index() -> None:
    lookup = IndexLookup(index_of({"app/models.py": MODELS, "app/views.py": VIEWS, "app/urls.py": URLS}))
    lookup.prepare(candidate_names(MODELS, "rename compute_total"))
    assert lookup.files_defining("compute_total") == {"app/models.py"}
    assert lookup.files_using("compute_total") == {"app/models.py", "app/views.py"}
    assert lookup.files_named("views") == {"app/views.py"}
    assert lookup.file_count() == 3
    # A name nobody prepared for has no known users (prepare is the one pass over the text).
    assert lookup.files_using("show") == set()


def test_users_are_whole_words_whether_an_edit_asks_about_a_few_names_or_thousands() -> None:
    """A whole module selected defines thousands of names; each is a use only where it is a whole word."""
    texts = {"a.py": "value_1 = 1\nvalue_10 = 2\n", "b.py": "print(value_10, xvalue_1, value_1x)\n"}
    defined = [f"value_{n}" for n in range(2_000)]
    for names in (["value_1", "value_10"], defined):
        lookup = IndexLookup(index_of(texts))
        lookup.prepare(names)
        assert lookup.files_using("value_1") == {"a.py"}, len(names)
        assert lookup.files_using("value_10") == {"a.py", "b.py"}, len(names)
        assert lookup.files_using("value_2") == set()


def test_open_documents_overlay_the_index() -> None:
    index = index_of({"app/models.py": MODELS, "app/views.py": "def show(i):\n    return i\n"})
    lookup = IndexLookup(index, overlay={"app/views.py": VIEWS, "app/new.py": "def fresh():\n    pass\n"})
    lookup.prepare(["compute_total", "fresh"])
    assert lookup.files_using("compute_total") == {"app/models.py", "app/views.py"}
    assert lookup.files_defining("fresh") == {"app/new.py"}
    assert lookup.file_count() == 3


def test_the_router_sees_cross_file_reach_through_the_adapter() -> None:
    lookup = IndexLookup(index_of({"app/models.py": MODELS, "app/views.py": VIEWS, "app/urls.py": URLS}))
    instruction = "rename compute_total to invoice_total in all callers"
    lookup.prepare(candidate_names(MODELS, instruction))
    features = route_features(
        RouteInputs(mode="edit", path="app/models.py", selection=MODELS, instruction=instruction, symbols=lookup)
    )
    assert features.mentioned_files == ("app/views.py",)
    assert route(features, RouterThresholds()).tier == "accurate"
