"""Unit tests of edit-answer parsing: SEARCH/REPLACE blocks, unified diffs, fenced ranges, bad answers."""

from __future__ import annotations

import pytest

from tandem.completion.edit.file_edits import AnswerParseError, FileEdit, apply_all
from tandem.completion.edit.parse import EditTarget, parse_answer
from tandem.completion.providers.errors import BadResponse

VIEWS = """\
from models import total


def index(request):
    items = load(request)
    return render(items)


def detail(request, pk):
    item = load_one(pk)
    return render(item)
"""
MODELS = """\
def total(items):
    return sum(i.price for i in items)
"""


def target(**kwargs: object) -> EditTarget:
    originals = {"app/views.py": VIEWS, "app/models.py": MODELS}
    return EditTarget(originals=originals, primary="app/views.py", **kwargs)  # type: ignore[arg-type]


def applied(answer: str, t: EditTarget | None = None) -> dict[str, str]:
    t = t or target()
    return apply_all(t.originals, parse_answer(answer, t))


def test_search_replace_single_block_with_path_and_fence() -> None:
    answer = """Here is the change:

app/views.py
```python
<<<<<<< SEARCH
def index(request):
    items = load(request)
=======
def index(request, page=1):
    items = load(request, page)
>>>>>>> REPLACE
```
"""
    out = applied(answer)
    assert set(out) == {"app/views.py"}
    assert (
        "def index(request, page=1):\n    items = load(request, page)\n    return render(items)\n"
        in out["app/views.py"]
    )


def test_search_replace_several_files_and_blocks() -> None:
    answer = """\
app/models.py
<<<<<<< SEARCH
def total(items):
=======
def total(items, tax=0):
>>>>>>> REPLACE

app/views.py
<<<<<<< SEARCH
from models import total
=======
from models import total as grand_total
>>>>>>> REPLACE
<<<<<<< SEARCH
    return render(item)
=======
    return render(item, grand_total([item]))
>>>>>>> REPLACE
"""
    edits = parse_answer(answer, target())
    assert [e.path for e in edits] == ["app/models.py", "app/views.py", "app/views.py"]
    out = apply_all(target().originals, edits)
    assert out["app/models.py"].startswith("def total(items, tax=0):\n")
    assert out["app/views.py"].startswith("from models import total as grand_total\n")
    assert out["app/views.py"].endswith("    return render(item, grand_total([item]))\n")


def test_block_without_a_path_goes_to_the_primary_file() -> None:
    out = applied("<<<<<<< SEARCH\n    item = load_one(pk)\n=======\n    item = load_one(int(pk))\n>>>>>>> REPLACE\n")
    assert "load_one(int(pk))" in out["app/views.py"]


def test_path_is_resolved_by_suffix_or_basename() -> None:
    answer = "### `views.py`\n<<<<<<< SEARCH\n    item = load_one(pk)\n=======\n    item = None\n>>>>>>> REPLACE\n"
    assert "item = None" in applied(answer)["app/views.py"]


def test_quote_with_lost_indentation_is_reindented() -> None:
    answer = (
        "app/views.py\n<<<<<<< SEARCH\nitems = load(request)\nreturn render(items)\n=======\n"
        "items = load(request)\nif not items:\n    return None\nreturn render(items)\n>>>>>>> REPLACE\n"
    )
    out = applied(answer)["app/views.py"]
    assert "    items = load(request)\n    if not items:\n        return None\n    return render(items)\n" in out


def test_quote_with_trailing_spaces_still_matches() -> None:
    answer = "<<<<<<< SEARCH\n    item = load_one(pk)   \n=======\n    item = 1\n>>>>>>> REPLACE\n"
    assert "    item = 1\n    return render(item)" in applied(answer)["app/views.py"]


def test_ambiguous_quote_is_an_error_unless_the_selection_decides() -> None:
    answer = "<<<<<<< SEARCH\n    return render(item\n=======\n    return draw(item\n>>>>>>> REPLACE\n"
    # "    return render(item" is a prefix of two lines: the match must be on whole lines, so none fits exactly.
    with pytest.raises(AnswerParseError, match="not found"):
        parse_answer(answer, target())
    twice = "<<<<<<< SEARCH\n    return render(items)\n=======\nX\n>>>>>>> REPLACE\n"
    doubled = VIEWS + "\n\ndef again(request):\n    return render(items)\n"
    t = EditTarget(originals={"app/views.py": doubled}, primary="app/views.py")
    with pytest.raises(AnswerParseError, match="occurs 2 times"):
        parse_answer(twice, t)
    second = doubled.rindex("    return render(items)")
    t_sel = EditTarget(
        originals={"app/views.py": doubled}, primary="app/views.py", selection=(second - 5, len(doubled))
    )
    (edit,) = parse_answer(twice, t_sel)
    assert edit.start == second


def test_quote_not_found_names_the_block_and_the_text() -> None:
    answer = "app/views.py\n<<<<<<< SEARCH\ndef nowhere():\n=======\npass\n>>>>>>> REPLACE\n"
    with pytest.raises(AnswerParseError, match=r"block 1 for app/views.py: SEARCH text not found: 'def nowhere\(\):'"):
        parse_answer(answer, target())


def test_truncated_block_is_an_error() -> None:
    answer = "app/views.py\n<<<<<<< SEARCH\ndef index(request):\n=======\ndef index(request, pa"
    with pytest.raises(AnswerParseError, match=r"cut off: no >>>>>>> REPLACE"):
        parse_answer(answer, target())
    with pytest.raises(AnswerParseError, match="cut off: no ======="):
        parse_answer("<<<<<<< SEARCH\ndef index(request):\n", target())


def test_malformed_blocks_are_errors() -> None:
    with pytest.raises(AnswerParseError, match="without a ======= divider"):
        parse_answer("<<<<<<< SEARCH\ndef index(request):\n>>>>>>> REPLACE\n", target())
    with pytest.raises(AnswerParseError, match="new SEARCH starts"):
        parse_answer("<<<<<<< SEARCH\na\n<<<<<<< SEARCH\nb\n=======\nc\n>>>>>>> REPLACE\n", target())
    with pytest.raises(AnswerParseError, match="malformed edit marker"):
        parse_answer("<<<<<<< SEARCH\n    item = load_one(pk)\n=======\nx\n>>>>>>> REPLACE\n>>>>>> REPL\n", target())


def test_unknown_file_is_an_error_but_an_empty_search_creates_it() -> None:
    with pytest.raises(AnswerParseError, match="a file the model was not shown"):
        parse_answer("lib/other.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n", target())
    (edit,) = parse_answer("lib/new_mod.py\n<<<<<<< SEARCH\n=======\nVALUE = 1\n>>>>>>> REPLACE\n", target())
    assert edit.creates and edit.path == "lib/new_mod.py" and edit.new_text == "VALUE = 1\n"


def test_overlapping_blocks_are_an_error() -> None:
    answer = (
        "<<<<<<< SEARCH\ndef index(request):\n    items = load(request)\n=======\nA\n>>>>>>> REPLACE\n"
        "<<<<<<< SEARCH\n    items = load(request)\n    return render(items)\n=======\nB\n>>>>>>> REPLACE\n"
    )
    with pytest.raises(AnswerParseError, match="overlap"):
        parse_answer(answer, target())


def test_parse_errors_are_bad_responses() -> None:
    with pytest.raises(BadResponse, match="empty"):
        parse_answer("   \n", target())


UDIFF = """\
--- a/app/views.py
+++ b/app/views.py
@@ -4,3 +4,4 @@
 def index(request):
     items = load(request)
+    items = [i for i in items if i.visible]
     return render(items)
--- a/app/models.py
+++ b/app/models.py
@@ -1,2 +1,2 @@
 def total(items):
-    return sum(i.price for i in items)
+    return sum(i.price * i.quantity for i in items)
"""


def test_unified_diff_over_two_files() -> None:
    out = applied(UDIFF)
    assert "    items = [i for i in items if i.visible]\n    return render(items)\n" in out["app/views.py"]
    assert out["app/models.py"] == "def total(items):\n    return sum(i.price * i.quantity for i in items)\n"


def test_unified_diff_with_wrong_line_numbers_and_no_counts() -> None:
    wrong = UDIFF.replace("@@ -4,3 +4,4 @@", "@@ -40,3 +40,4 @@").replace("@@ -1,2 +1,2 @@", "@@ ... @@")
    assert applied(wrong) == applied(UDIFF)


def test_unified_diff_in_a_fence_without_prefixes_and_with_a_bare_blank_line() -> None:
    answer = (
        "```diff\n--- app/views.py\n+++ app/views.py\n@@ -7,4 +7,4 @@\n\n"
        " def detail(request, pk):\n-    item = load_one(pk)\n+    item = load_one(pk) or abort(404)\n"
        "     return render(item)\n```\nThis makes detail 404.\n"
    )
    out = applied(answer)["app/views.py"]
    assert "\n\ndef detail(request, pk):\n    item = load_one(pk) or abort(404)\n    return render(item)\n" in out


def test_unified_diff_new_file_and_pure_insertion() -> None:
    answer = (
        "--- /dev/null\n+++ b/app/forms.py\n@@ -0,0 +1,2 @@\n+class Form:\n+    pass\n"
        "--- a/app/models.py\n+++ b/app/models.py\n@@ -2,0 +3,2 @@\n+\n+TAX = 0.2\n"
    )
    out = applied(answer)
    assert out["app/forms.py"] == "class Form:\n    pass\n"
    assert out["app/models.py"] == MODELS + "\nTAX = 0.2\n"


def test_unified_diff_deleting_a_file_is_refused() -> None:
    answer = "--- a/app/models.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-def total(items):\n-    return 0\n"
    with pytest.raises(AnswerParseError, match="deleting files is not supported"):
        parse_answer(answer, target())


def test_truncated_diff_is_an_error() -> None:
    cut = "--- a/app/views.py\n+++ b/app/views.py\n@@ -4,3 +4,4 @@\n def index(request):\n     items = load(request)\n"
    with pytest.raises(AnswerParseError, match="cut off inside its last hunk"):
        parse_answer(cut, target())


def test_diff_hunk_that_does_not_match_is_an_error() -> None:
    answer = "--- a/app/views.py\n+++ b/app/views.py\n@@ -1,1 +1,1 @@\n-import nothing\n+import something\n"
    with pytest.raises(AnswerParseError, match=r"hunk 1 for app/views\.py: SEARCH text not found"):
        parse_answer(answer, target())


def test_fenced_block_replaces_the_selection() -> None:
    start = VIEWS.index("def detail")
    t = target(selection=(start, len(VIEWS)))
    out = applied("Sure:\n```python\ndef detail(request, pk):\n    return render(load_one(pk))\n```\n", t)
    assert out["app/views.py"] == VIEWS[:start] + "def detail(request, pk):\n    return render(load_one(pk))\n"


def test_fenced_block_without_selection_replaces_the_file() -> None:
    out = applied("```\nprint('hi')\n```", target())
    assert out["app/views.py"] == "print('hi')\n"


def test_bad_fenced_answers() -> None:
    with pytest.raises(AnswerParseError, match="cut off: no closing fence"):
        parse_answer("```python\ndef detail(request, pk):\n    return", target())
    with pytest.raises(AnswerParseError, match="2 code blocks"):
        parse_answer("```\na\n```\nor\n```\nb\n```\n", target())
    with pytest.raises(AnswerParseError, match="no SEARCH/REPLACE blocks, no diff and no code block"):
        parse_answer("I would rename the function and update the callers.", target())


def test_crlf_file_keeps_its_line_endings() -> None:
    crlf = "a = 1\r\nb = 2\r\nc = 3\r\n"
    t = EditTarget(originals={"x.py": crlf}, primary="x.py")
    out = apply_all(t.originals, parse_answer("<<<<<<< SEARCH\nb = 2\n=======\nb = 20\nb2 = 0\n>>>>>>> REPLACE\n", t))
    assert out["x.py"] == "a = 1\r\nb = 20\r\nb2 = 0\r\nc = 3\r\n"


def test_last_line_without_newline() -> None:
    t = EditTarget(originals={"x.py": "a = 1\nb = 2"}, primary="x.py")
    out = apply_all(t.originals, parse_answer("<<<<<<< SEARCH\nb = 2\n=======\nb = 3\n>>>>>>> REPLACE\n", t))
    assert out["x.py"] == "a = 1\nb = 3"


def test_path_in_the_fence_info_string() -> None:
    answer = (
        "```python:app/models.py\n<<<<<<< SEARCH\ndef total(items):\n=======\n"
        "def total(items, tax=0):\n>>>>>>> REPLACE\n```\n"
    )
    (edit,) = parse_answer(answer, target())
    assert edit.path == "app/models.py"


def applied_prefix(edits: list[FileEdit]) -> dict[str, str]:
    return apply_all(target().originals, edits)


@pytest.mark.parametrize("answer", [UDIFF, "app/views.py\n" + UDIFF.replace("--- a/", "--- ")])
def test_every_truncation_of_a_diff_is_an_error_or_a_prefix_of_the_edits(answer: str) -> None:
    full = parse_answer(answer, target())
    for cut in range(len(answer)):
        try:
            edits = parse_answer(answer[:cut], target())
        except AnswerParseError:
            continue
        # What parses does what the first hunks do (a cut inside trailing context loses only context).
        assert applied_prefix(edits) == applied_prefix(full[: len(edits)]), f"cut at {cut}: {answer[:cut]!r}"


def test_every_truncation_of_blocks_is_an_error_or_a_prefix_of_the_edits() -> None:
    answer = (
        "app/models.py\n```python\n<<<<<<< SEARCH\ndef total(items):\n=======\ndef total(items, tax=0):\n"
        ">>>>>>> REPLACE\n```\napp/views.py\n```python\n<<<<<<< SEARCH\n    item = load_one(pk)\n=======\n"
        "    item = load_one(int(pk))\n>>>>>>> REPLACE\n```\n"
    )
    full = parse_answer(answer, target())
    assert len(full) == 2
    for cut in range(len(answer)):
        try:
            edits = parse_answer(answer[:cut], target())
        except AnswerParseError:
            continue
        assert edits == full[: len(edits)], f"cut at {cut}: {answer[:cut]!r}"


def test_an_answer_about_a_part_of_the_file_is_found_in_that_part_only() -> None:
    """A model shown lines 4-6 of a file quotes text that is also elsewhere in it: the part it saw decides."""
    text = "".join(f"x = {n % 3}\n" for n in range(9))  # x = 0, x = 1, x = 2, three times over
    shown = (text.index("x = 0", 1), len(text) - len("x = 0\nx = 1\nx = 2\n"))  # lines 4-6
    answer = "a.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 10\n>>>>>>> REPLACE\n"
    with pytest.raises(AnswerParseError, match="3 times"):
        parse_answer(answer, EditTarget(originals={"a.py": text}, primary="a.py"))
    [edit] = parse_answer(answer, EditTarget(originals={"a.py": text}, primary="a.py", shown=shown))
    assert apply_all({"a.py": text}, [edit])["a.py"].splitlines()[3:6] == ["x = 0", "x = 10", "x = 2"]
    assert apply_all({"a.py": text}, [edit])["a.py"].count("x = 1\n") == 2
