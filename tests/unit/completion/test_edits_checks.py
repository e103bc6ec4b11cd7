"""Unit tests of edit validation, rebase over the user's typing, and the edit prompt round trip."""

from __future__ import annotations

import random

import pytest

from tandem.completion.edit.answer import checked_edits
from tandem.completion.edit.file_edits import AnswerParseError, EditConflict, EditInvalid, FileEdit, apply_edits
from tandem.completion.edit.parse import EditTarget
from tandem.completion.edit.prompt import EditPrompt, edit_messages, read_edit_prompt, selection_lines
from tandem.completion.edit.rebase import rebase_edits
from tandem.completion.edit.validate import ValidationLimits, balance_issues, require_valid, validate_edits
from tandem.completion.routing.change_in_progress import user_changes


def edit_of(text: str, old: str, new: str, path: str = "f.py") -> FileEdit:
    start = text.index(old)
    return FileEdit(path=path, start=start, end=start + len(old), new_text=new)


# --- validation


def test_python_edit_that_breaks_parsing_is_rejected() -> None:
    text = "def f(x):\n    return x\n"
    verdict = validate_edits({"f.py": text}, [edit_of(text, "return x", "return (x")])
    assert not verdict.ok
    assert "f.py would no longer parse" in verdict.problems[0]
    assert validate_edits({"f.py": text}, [edit_of(text, "return x", "return x + 1")]).ok


def test_python_file_broken_before_is_not_blamed_on_the_edit() -> None:
    text = "def f(x:\n    return x\n"
    assert validate_edits({"f.py": text}, [edit_of(text, "return x", "return (x")]).ok


def test_balance_check_for_other_languages() -> None:
    js = "function f(a) {\n  return [a, '}'];  // ) stray in comment\n}\n"
    assert balance_issues(js, "f.js") == 0
    broken = edit_of(js, "return [a, '}'];", "return [a, '}';", path="f.js")
    verdict = validate_edits({"f.js": js}, [broken])
    assert not verdict.ok and "1 more unbalanced" in verdict.problems[0]
    unterminated = edit_of(js, "'}'", "'}", path="f.js")
    assert not validate_edits({"f.js": js}, [unterminated]).ok
    fine = edit_of(js, "return [a, '}'];", "return { a: [a] };", path="f.js")
    assert validate_edits({"f.js": js}, [fine]).ok


def test_balance_only_judges_what_the_edit_made_worse() -> None:
    go = "func f() {\n\tif x {\n"  # already two unclosed braces
    assert balance_issues(go, "f.go") == 2
    assert validate_edits({"f.go": go}, [edit_of(go, "if x {\n", "if y {\n}\n", path="f.go")]).ok
    assert not validate_edits({"f.go": go}, [edit_of(go, "if x {\n", "if y {{\n", path="f.go")]).ok


def test_language_specific_lexing() -> None:
    assert balance_issues("fn f<'a>(x: &'a str) {}\n", "f.rs") == 0  # lifetimes are not quotes
    assert balance_issues("# a ( comment\nx = '('\n", "f.sh") == 0
    assert balance_issues("const s = `multi\n(line`;\n", "f.ts") == 0
    assert balance_issues("s = '''\n(\n'''\n", "f.py") == 0
    assert balance_issues("(defun f () ;; ) comment\n  'x)\n", "f.el") == 0


def test_far_larger_than_predicted_is_rejected() -> None:
    text = "x = 1\n"
    big = FileEdit(path="f.py", start=0, end=len(text), new_text="".join(f"x{i} = {i}\n" for i in range(100)))
    verdict = validate_edits({"f.py": text}, [big], predicted_lines=5)
    assert not verdict.ok
    assert verdict.changed_lines == 101
    assert "far more than the ~5 expected" in verdict.problems[0]
    assert validate_edits({"f.py": text}, [big], predicted_lines=30).ok
    assert validate_edits({"f.py": text}, [big]).ok  # no prediction, no size check
    with pytest.raises(EditInvalid, match="far more"):
        require_valid({"f.py": text}, [big], predicted_lines=5)


def test_nothing_selected_predicts_no_size() -> None:
    # An insertion point (or a new file): a long correct answer is not "far larger" than nothing.
    text = "import os\n"
    added = FileEdit(path="f.py", start=len(text), end=len(text), new_text="".join(f"y{i} = {i}\n" for i in range(90)))
    assert validate_edits({"f.py": text}, [added], predicted_lines=0, primary="f.py").ok


def test_the_prediction_is_about_the_primary_file() -> None:
    # A 5-line selection in views.py; the edit also adds 100 lines of tests: only views.py is held to it.
    views = "".join(f"v{i} = {i}\n" for i in range(30))
    tests = "import views\n"
    small = FileEdit(path="views.py", start=0, end=len("v0 = 0\n"), new_text="v0 = 100\n")
    new_tests = FileEdit(
        path="test_views.py", start=len(tests), end=len(tests), new_text="".join(f"t{i} = 1\n" for i in range(100))
    )
    originals = {"views.py": views, "test_views.py": tests}
    assert validate_edits(originals, [small, new_tests], predicted_lines=10, primary="views.py").ok
    assert not validate_edits(originals, [small, new_tests], predicted_lines=10).ok  # the total, without primary


def test_rewriting_most_of_an_existing_file_is_far_larger_than_asked() -> None:
    other = "".join(f"def f{i}():\n    return {i}\n" for i in range(20))
    reindented = other.replace("\n    return", "\n  return")
    rewrite = FileEdit(path="other.py", start=0, end=len(other), new_text=reindented)
    verdict = validate_edits({"other.py": other, "f.py": ""}, [rewrite], predicted_lines=0, primary="f.py")
    assert not verdict.ok
    assert verdict.problems == ("the change rewrites 20 of the 40 lines of other.py, far more than expected",)
    # A selection covering the whole file predicts its rewrite.
    assert validate_edits({"other.py": other}, [rewrite], predicted_lines=80, primary="other.py").ok
    # No prediction at all (the accurate model): no size checks.
    assert validate_edits({"other.py": other}, [rewrite], primary="other.py").ok


def test_a_new_undefined_name_is_caught_when_names_are_checked() -> None:
    text = "import os\n\n\ndef home(user):\n    base = os.path.expanduser('~')\n    return os.path.join(base, user)\n"
    swapped = text.replace("os.path.join(base, user)", "os.path.join(bse, user)")
    edit = FileEdit(path="f.py", start=0, end=len(text), new_text=swapped)
    verdict = validate_edits({"f.py": text}, [edit], check_names=True)
    assert verdict.problems == ("f.py would use undefined name(s) 'bse' (line 6)",)
    assert validate_edits({"f.py": text}, [edit]).ok  # not asked (the accurate model's answers)
    # A name the edit also defines, or a builtin, is fine.
    added = text.replace(
        "    return os.path.join(base, user)", "    bse = base\n    return os.path.join(bse, len(user))"
    )
    assert validate_edits(
        {"f.py": text}, [FileEdit(path="f.py", start=0, end=len(text), new_text=added)], check_names=True
    ).ok


def test_names_are_not_checked_in_files_over_the_limit() -> None:
    text = "x = 1\n" * 10
    edit = FileEdit(path="f.py", start=0, end=0, new_text="y = undefined_thing\n")
    assert not validate_edits({"f.py": text}, [edit], check_names=True).ok
    small_limit = ValidationLimits(names_max_chars=len(text))
    assert validate_edits({"f.py": text}, [edit], check_names=True, limits=small_limit).ok


def test_names_undefined_before_the_edit_do_not_count() -> None:
    text = "def f():\n    return missing_helper()\n"
    edit = FileEdit(path="f.py", start=len(text), end=len(text), new_text="\n\ndef g():\n    return 2\n")
    assert validate_edits({"f.py": text}, [edit], check_names=True).ok
    twice = FileEdit(
        path="f.py", start=len(text), end=len(text), new_text="\n\ndef g():\n    return missing_helper()\n"
    )
    assert validate_edits({"f.py": text}, [twice], check_names=True).ok  # maybe defined where pyflakes cannot see
    star = "from os.path import *\n\nx = join('a', 'b')\n"
    assert validate_edits(
        {"s.py": star}, [FileEdit(path="s.py", start=0, end=0, new_text="y = 1\n")], check_names=True
    ).ok


def test_repeated_unchanged_lines_do_not_count_as_changes() -> None:
    text = "".join(f"line{i}\n" for i in range(50))
    edit = FileEdit(path="f.py", start=0, end=len(text), new_text=text.replace("line7\n", "line7b\n"))
    assert validate_edits({"f.py": text}, [edit], predicted_lines=1).changed_lines == 2


# --- rebase

BASE = "".join(f"line {i}\n" for i in range(10))


def test_user_typing_before_the_edit_shifts_it() -> None:
    edit = edit_of(BASE, "line 5\n", "five\n")
    current = BASE.replace("line 1\n", "line one, longer\n")
    (moved,) = rebase_edits([edit], {"f.py": BASE}, {"f.py": current})
    assert apply_edits(current, [moved]) == current.replace("line 5\n", "five\n")


def test_user_typing_after_the_edit_leaves_it() -> None:
    edit = edit_of(BASE, "line 2\n", "two\n")
    current = BASE + "appended\n"
    (moved,) = rebase_edits([edit], {"f.py": BASE}, {"f.py": current})
    assert moved == edit


def test_user_typing_inside_or_next_to_the_edit_is_refused() -> None:
    edit = edit_of(BASE, "line 5\nline 6\n", "merged\n")
    inside = BASE.replace("line 6", "line six")
    with pytest.raises(EditConflict, match="you changed line 7"):
        rebase_edits([edit], {"f.py": BASE}, {"f.py": inside})
    touching = BASE.replace("line 7\n", "line 7!\n")
    with pytest.raises(EditConflict):
        rebase_edits([edit], {"f.py": BASE}, {"f.py": touching})


def test_unknown_current_text_is_refused_and_created_files_must_still_be_new() -> None:
    edit = edit_of(BASE, "line 5\n", "five\n")
    with pytest.raises(EditConflict, match="current text is unknown"):
        rebase_edits([edit], {"f.py": BASE}, {})
    created = FileEdit(path="new.py", start=0, end=0, new_text="x\n", creates=True)
    assert rebase_edits([created], {"new.py": ""}, {}) == [created]
    with pytest.raises(EditConflict, match="created meanwhile"):
        rebase_edits([created], {"new.py": ""}, {"new.py": "mine\n"})


def test_rebase_matches_applying_to_the_new_text_when_apart() -> None:
    rng = random.Random(7)
    for _ in range(300):
        # Distinct lines: with repeated lines a diff cannot tell which copy the user changed, and the
        # rebase (rightly) refuses when the copy it picks is next to the edit.
        lines = [rng.choice(["a", "bb", "x = 1", "", "f()"]) + f"#{i}\n" for i in range(12)]
        base = "".join(lines)
        first = rng.randrange(4, 8)
        start = sum(len(line) for line in lines[:first])
        end = start + len(lines[first])
        edit = FileEdit(path="f.py", start=start, end=end, new_text="EDIT\n")
        # The user changes a line well away from the edit.
        where = rng.choice([rng.randrange(0, first - 1), rng.randrange(first + 2, 12)])
        changed = [*lines[:where], rng.choice(["typed\n", "", "two\nlines\n"]), *lines[where + 1 :]]
        current = "".join(changed)
        (moved,) = rebase_edits([edit], {"f.py": base}, {"f.py": current})
        result = apply_edits(current, [moved])
        assert result.count("EDIT\n") == 1
        # Everything but the edited line is the user's current text.
        assert result.replace("EDIT\n", lines[first], 1) == current


def test_user_changes_are_exact() -> None:
    assert user_changes("a\nb\nc\n", "a\nb\nc\n") == []
    assert user_changes("a\nb\nc\n", "a\nB!\nc\n") == [(2, 4, 1)]
    assert user_changes("a\nb\nc\n", "x\na\nb\nc\n") == [(0, 0, 2)]


# --- prompt


def test_edit_prompt_round_trip() -> None:
    text = "import os\n\ndef f():\n    return 1\n"
    first, end = selection_lines(text, text.index("def f"), len(text))
    assert (first, end) == (2, 4)
    prompt = EditPrompt(
        path="pkg/f.py",
        text=text,
        first_line=first,
        end_line=end,
        instruction="return 2",
        context={"pkg/g.py": "from f import f\n"},
        language="python",
    )
    messages = edit_messages(prompt)
    assert messages[0]["role"] == "system" and "<<<<<<< SEARCH" in messages[0]["content"]
    # Stable first, each part its own message: the context file, then the file; the selection and
    # instruction in the last message.
    assert [m["role"] for m in messages] == ["system", "user", "user", "user"]
    assert "pkg/g.py" in messages[1]["content"] and "pkg/f.py (python)" not in messages[1]["content"]
    assert "pkg/f.py (python)" in messages[2]["content"] and text in messages[2]["content"]
    assert "    3| def f():\n    4|     return 1" in messages[3]["content"] and "return 2" in messages[3]["content"]
    assert read_edit_prompt(messages) == prompt
    assert read_edit_prompt([{"role": "user", "content": "hello"}]) is None


def test_edit_prompt_with_an_empty_selection() -> None:
    prompt = EditPrompt(path="a.py", text="", first_line=0, end_line=0, instruction="write it")
    assert read_edit_prompt(edit_messages(prompt)) == prompt


# --- the whole path: parse, validate, rebase


def test_checked_edits_rebases_over_the_users_typing() -> None:
    original = "import os\n\n\ndef f():\n    return 1\n"
    target = EditTarget(originals={"f.py": original}, primary="f.py")
    answer = "<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n"
    typed = original.replace("import os\n", "import os\nimport sys\n")
    result = checked_edits(answer, target, current={"f.py": typed}, predicted_lines=2)
    assert result.rebased
    assert apply_edits(typed, result.edits) == typed.replace("return 1", "return 2")
    same = checked_edits(answer, target, current={"f.py": original})
    assert not same.rebased and same.validation.changed_lines == 2


def test_checked_edits_raises_the_right_error_for_each_failure() -> None:
    original = "def f():\n    return 1\n"
    target = EditTarget(originals={"f.py": original}, primary="f.py")
    with pytest.raises(AnswerParseError):
        checked_edits("no idea", target, current={"f.py": original})
    broken = "<<<<<<< SEARCH\n    return 1\n=======\n    return (1\n>>>>>>> REPLACE\n"
    with pytest.raises(EditInvalid, match="no longer parse"):
        checked_edits(broken, target, current={"f.py": original})
    good = "<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n"
    with pytest.raises(EditConflict):
        checked_edits(good, target, current={"f.py": original.replace("return 1", "return 10")})
