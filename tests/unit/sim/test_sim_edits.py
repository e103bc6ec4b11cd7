"""The simulator answering edit prompts, and its error model (all of it simulated).

Unit tests of `tandem.sim.error_model` (monotone in difficulty, the fast tier always worse, the
published figures reproduced, deterministic draws), of `tandem.sim.edits` (answers that
`completion.edits.parse_answer` reads and that apply to exactly the truth when no mistake is drawn,
mistakes that are plausible and of the kind asked for), and the control API over loopback HTTP."""

from __future__ import annotations

import json
import pathlib
import random
import textwrap
from typing import Any

import httpx
import pytest
from fixtures_sim import SimFactory, sse_data

from tandem.completion.edit.file_edits import AnswerParseError, apply_all
from tandem.completion.edit.parse import EditTarget, parse_answer
from tandem.completion.edit.prompt import EditPrompt, edit_messages
from tandem.completion.edit.validate import validate_edits
from tandem.sim import error_model as em
from tandem.sim.edit_reading import read_edit_task
from tandem.sim.edits import NO_CHANGE_ANSWER, EditTruth, answer_edit, render_answer
from tandem.sim.runner import SimHandle

# Real code nobody here wrote: a module of the standard library on this machine.
STDLIB = pathlib.Path(textwrap.__file__).read_text(encoding="utf-8")


def grid() -> list[em.EditDifficulty]:
    return [
        em.EditDifficulty(changed_lines=lines, files=files, hunks=hunks)
        for lines in (1, 5, 10, 30, 100, 300)
        for files in (1, 2, 4, 8)
        for hunks in (1, 4, 6, 8, 12, 20)
    ]


# -- the error model --------------------------------------------------------------------------------


@pytest.mark.parametrize("tier", ["fast", "accurate"])
def test_success_falls_as_the_edit_grows_in_lines_files_and_hunks(tier: em.Tier) -> None:
    ok = em.edit_success_probability
    for d in grid():
        bigger = [
            em.EditDifficulty(changed_lines=d.changed_lines * 2, files=d.files, hunks=d.hunks),
            em.EditDifficulty(changed_lines=d.changed_lines, files=d.files * 2, hunks=d.hunks),
            em.EditDifficulty(changed_lines=d.changed_lines, files=d.files, hunks=d.hunks + 3),
        ]
        for harder in bigger:
            assert ok(harder, tier) <= ok(d, tier)
        assert ok(bigger[0], tier) < ok(d, tier) or ok(d, tier) == 0.005
        assert ok(bigger[1], tier) < ok(d, tier) or ok(d, tier) == 0.005


def test_the_fast_tier_errs_more_everywhere_and_only_it_degrades_with_steps() -> None:
    for d in grid():
        assert em.edit_success_probability(d, "fast") < em.edit_success_probability(d, "accurate")
    few = em.EditDifficulty(changed_lines=40, files=1, hunks=6)
    many = em.EditDifficulty(changed_lines=40, files=1, hunks=10)
    assert em.edit_success_probability(many, "fast") < em.edit_success_probability(few, "fast") - 0.2
    assert em.edit_success_probability(many, "accurate") == em.edit_success_probability(few, "accurate")


def test_the_model_reproduces_its_calibration_figures() -> None:
    ok = em.edit_success_probability
    assert ok(em.REFERENCE, "fast") == pytest.approx(0.584, abs=0.001)
    assert ok(em.REFERENCE, "accurate") == pytest.approx(0.773, abs=0.001)
    rows = {row.figure.split(",")[0]: row for row in em.calibration_rows()}
    assert (
        "-2.3"
        in rows["SWE-Bench Pro vs Verified in log-odds (107.4 lines / 4.1 files vs 11.6 lines / 1.2 files)"].model
    )
    multi = rows["SWE-bench Verified multi-file tasks"].model
    assert [float(x.strip().rstrip("%")) for x in multi.split("..")][1] <= 25.0
    text = em.describe_edit_model()
    assert text.startswith("simulated edit error model") and "Terminal-Bench 2.0" in text


def test_mistake_probability_scales_and_is_zero_without_a_change() -> None:
    d = em.EditDifficulty(changed_lines=30, files=2, hunks=3)
    p = em.edit_mistake_probability(d, "fast")
    assert 0 < p < 1
    assert em.edit_mistake_probability(d, "fast", scale=2.0) == pytest.approx(min(1.0, 2 * p))
    assert em.edit_mistake_probability(d, "fast", scale=0.0) == 0.0
    assert em.edit_mistake_probability(d, "fast", scale=100.0) == 1.0
    assert em.edit_mistake_probability(em.EditDifficulty(changed_lines=0, files=0, hunks=0), "fast") == 0.0


def test_completion_errors_scale_with_length_and_tier_only_when_asked() -> None:
    assert em.completion_mistake_probability(0.1, answer_lines=1, tier="accurate") == pytest.approx(0.1)
    one = em.completion_mistake_probability(0.1, answer_lines=1, tier="fast")
    ten = em.completion_mistake_probability(0.1, answer_lines=10, tier="fast")
    assert 0.1 < one < ten < 1
    flat = em.Attempt(prefix="", suffix="", answer="a\nb\nc\n" * 10, profile="spark", base_rate=0.1, seed=0)
    assert em.mistake_probability(flat) == 0.1
    scaled = em.Attempt(
        prefix="", suffix="", answer="a\nb\nc\n" * 10, profile="spark", base_rate=0.1, seed=0, difficulty_scaled=True
    )
    assert em.mistake_probability(scaled) > one


# -- answers ------------------------------------------------------------------------------------------


def random_edit(text: str, rng: random.Random) -> str:
    """`text` changed in a few random places the way code changes: lines rewritten, added (some of them
    copies of lines found elsewhere, so quotes get ambiguous), removed."""
    lines = text.splitlines(keepends=True)
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(lines) + 1)
        kind = rng.choice(["rewrite", "insert", "copy", "delete"])
        if kind == "rewrite" and at < len(lines):
            lines[at] = lines[at].rstrip("\r\n") + "  # changed\n"
        elif kind == "insert":
            lines.insert(at, "    value = compute(value)\n")
        elif kind == "copy":
            lines.insert(at, rng.choice(lines))
        elif lines and at < len(lines):
            del lines[at : at + rng.randint(1, 3)]
    return "".join(lines)


def round_trip(old: str, new: str, *, small: bool = False) -> str:
    answer, reached = render_answer("mod.py", {"mod.py": old}, {"mod.py": new})
    applied = apply_all({"mod.py": old}, parse_answer(answer, EditTarget(originals={"mod.py": old}, primary="mod.py")))
    assert applied == reached
    if small:
        # Blocks around the changes, not the whole file again.
        assert len(answer) < len(old) // 2
    return applied["mod.py"]


@pytest.mark.parametrize("seed", range(40))
def test_answers_apply_to_exactly_the_truth_on_real_code(seed: int) -> None:
    rng = random.Random(seed)
    old = STDLIB
    if seed % 5 == 1:
        old = old.rstrip("\n")  # no newline at the end
    if seed % 5 == 2:
        old = old.replace("\n", "\r\n")
    new = random_edit(old, rng)
    if not old.endswith("\n"):
        new = new.rstrip("\n")  # a change of the final newline alone is not expressible (tested below)
    if new == old:
        return
    if seed % 5 == 2:
        new = new.replace("\r\n", "\n").replace("\n", "\r\n")
    assert round_trip(old, new, small=True) == new


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("", "print('new file')\n"),
        ("x = 1\n", "import os\nx = 1\n"),  # insert at the very start
        ("x = 1\n", "x = 1\ny = 2\n"),  # insert at the very end
        ("a = 1\na = 1\na = 1\n", "a = 1\na = 2\na = 1\n"),  # only repeated lines around the change
        ("\n\n\nx = 1\n\n\n", "\n\n\nx = 1\n\n\ny = 2\n"),  # blank lines are no anchor
        ("def f():\n    pass\n", "def f():\n    return 1\n"),
    ],
)
def test_answers_apply_to_exactly_the_truth_at_the_edges(old: str, new: str) -> None:
    assert round_trip(old, new) == new


VIEWS = STDLIB
URLS = "from textwrap import dedent, indent\n\n\ndef show(text):\n    return indent(dedent(text), '  ')\n"


def test_a_final_newline_change_is_as_near_as_blocks_get_and_not_exact() -> None:
    truth = EditTruth(files={"m.py": "x = 1\ny = 2\n"}, errors="off")
    edit = EditPrompt(path="m.py", text="x = 1\ny = 1", first_line=0, end_line=2, instruction="y is 2")
    text, draw = answer_edit(edit, truth, profile="codex", attempt=0, seed=0, prompt_text="p")
    target = EditTarget(originals={"m.py": "x = 1\ny = 1"}, primary="m.py")
    assert apply_all(target.originals, parse_answer(text, target)) == {"m.py": "x = 1\ny = 2"}
    assert draw.mistake is None and not draw.exact


def prompt(**context: str) -> EditPrompt:
    return EditPrompt(path="textwrap.py", text=VIEWS, first_line=10, end_line=20, instruction="rename", context=context)


def renamed(text: str) -> str:
    return text.replace("dedent", "remove_indent")


def test_a_multi_file_answer_reaches_every_file_shown_and_leaves_out_the_unseen_one() -> None:
    truth = EditTruth(
        files={"textwrap.py": renamed(VIEWS), "show.py": renamed(URLS), "docs.txt": "remove_indent\n"}, errors="off"
    )
    text, draw = answer_edit(prompt(**{"show.py": URLS}), truth, profile="codex", attempt=0, seed=0, prompt_text="p")
    edits = parse_answer(text, EditTarget(originals={"textwrap.py": VIEWS, "show.py": URLS}, primary="textwrap.py"))
    assert apply_all({"textwrap.py": VIEWS, "show.py": URLS}, edits) == {
        "textwrap.py": renamed(VIEWS),
        "show.py": renamed(URLS),
    }
    assert draw.unseen_files == ("docs.txt",) and draw.files == 3 and not draw.exact
    assert draw.mistake is None and draw.simulated


def test_nothing_to_change_is_said_in_words_that_parse_to_no_edit() -> None:
    text, draw = answer_edit(
        prompt(), EditTruth(files={"textwrap.py": VIEWS}), profile="spark", attempt=0, seed=0, prompt_text="p"
    )
    assert text == NO_CHANGE_ANSWER and draw.mistake_probability == 0.0
    with pytest.raises(AnswerParseError):
        parse_answer(text, EditTarget(originals={"textwrap.py": VIEWS}, primary="textwrap.py"))


def wrong(kind: str, **context: str) -> tuple[dict[str, str], Any]:
    files = {"textwrap.py": renamed(VIEWS), **{p: renamed(t) for p, t in context.items()}}
    text, draw = answer_edit(
        prompt(**context), EditTruth(files=files, errors=kind), profile="spark", attempt=0, seed=3, prompt_text="p"
    )
    originals = {"textwrap.py": VIEWS, **context}
    # A wrong answer is still a well-formed one: it parses.
    return apply_all(originals, parse_answer(text, EditTarget(originals=originals, primary="textwrap.py"))), draw


def test_a_syntax_mistake_is_one_validation_catches() -> None:
    applied, draw = wrong("syntax")
    assert draw.mistake == "syntax" and draw.breaks_syntax
    originals = {"textwrap.py": VIEWS}
    edits = parse_answer(
        render_answer("textwrap.py", originals, applied)[0], EditTarget(originals=originals, primary="textwrap.py")
    )
    assert not validate_edits(originals, edits).ok


@pytest.mark.parametrize("kind", ["dropped-hunk", "wrong-place", "wrong-value"])
def test_plausible_mistakes_parse_but_are_wrong(kind: str) -> None:
    applied, draw = wrong(kind)
    assert draw.mistake == kind and not draw.exact
    assert applied["textwrap.py"] != renamed(VIEWS)
    assert applied["textwrap.py"] != VIEWS


def test_a_forced_mistake_that_cannot_happen_here_is_another_mistake() -> None:
    one_hunk = {"textwrap.py": VIEWS.replace("        return text\n", "        return text.strip()\n", 1)}
    _, draw = answer_edit(
        prompt(), EditTruth(files=one_hunk, errors="dropped-hunk"), profile="spark", attempt=0, seed=0, prompt_text="p"
    )
    assert draw.mistake not in (None, "dropped-hunk", "missing-file") and not draw.exact


def test_a_javascript_syntax_mistake_unbalances_brackets_for_validation_to_catch() -> None:
    old = "function area(w, h) {\n  return w * h;\n}\n\nconsole.log(area(2, 3));\n"
    new = old.replace("return w * h;", "return Math.abs(w * h);").replace("area(2, 3)", "area(2, -3)")
    edit = EditPrompt(path="area.js", text=old, first_line=0, end_line=3, instruction="abs")
    text, draw = answer_edit(
        edit, EditTruth(files={"area.js": new}, errors="syntax"), profile="spark", attempt=0, seed=0, prompt_text="p"
    )
    assert draw.mistake == "syntax" and draw.breaks_syntax
    edits = parse_answer(text, EditTarget(originals={"area.js": old}, primary="area.js"))
    verdict = validate_edits({"area.js": old}, edits)
    assert not verdict.ok and "unbalanced" in verdict.problems[0]


def test_a_missing_file_mistake_leaves_one_changed_file_out() -> None:
    applied, draw = wrong("missing-file", **{"show.py": URLS})
    assert draw.mistake == "missing-file"
    assert len(applied) == 1


def test_an_oversized_answer_is_far_larger_than_the_edit_and_validation_says_so() -> None:
    applied, draw = wrong("oversized")
    assert draw.mistake == "oversized" and not draw.breaks_syntax
    assert draw.answer_changed_lines > 4 * draw.changed_lines
    originals = {"textwrap.py": VIEWS}
    answer = render_answer("textwrap.py", originals, applied)[0]
    edits = parse_answer(answer, EditTarget(originals=originals, primary="textwrap.py"))
    verdict = validate_edits(originals, edits, predicted_lines=draw.changed_lines)
    assert not verdict.ok and "far more" in verdict.problems[0]


def test_draws_are_deterministic_per_prompt_profile_and_attempt() -> None:
    truth = EditTruth(files={"textwrap.py": renamed(VIEWS)}, error_scale=3.0)
    first = [answer_edit(prompt(), truth, profile="spark", attempt=a, seed=0, prompt_text="p") for a in range(12)]
    again = [answer_edit(prompt(), truth, profile="spark", attempt=a, seed=0, prompt_text="p") for a in range(12)]
    assert first == again
    # Attempts are independent draws: some right, some wrong (the chance is about 0.65 here).
    outcomes = {draw.mistake is None for _, draw in first}
    assert outcomes == {True, False}


def test_the_fast_profile_errs_more_often_and_more_on_harder_edits() -> None:
    def wrong_share(profile: str, files: dict[str, str]) -> float:
        truth = EditTruth(files=files)
        draws = [
            answer_edit(prompt(), truth, profile=profile, attempt=0, seed=0, prompt_text=f"prompt {n}")[1]
            for n in range(300)
        ]
        return sum(d.mistake is not None for d in draws) / len(draws)

    easy = {"textwrap.py": VIEWS.replace("def dedent(", "def dedent_(", 1)}
    hard = {"textwrap.py": renamed(VIEWS), "a.py": "x\n", "b.py": "y\n", "c.py": "z\n"}
    assert wrong_share("spark", easy) > wrong_share("codex", easy)
    assert wrong_share("spark", hard) > wrong_share("codex", hard)
    assert wrong_share("spark", hard) > wrong_share("spark", easy) + 0.2
    # The drawn share follows the model (300 draws: within 0.1 of the probability).
    d = em.EditDifficulty(changed_lines=2, files=1, hunks=1)
    assert wrong_share("spark", easy) == pytest.approx(em.edit_mistake_probability(d, "fast"), abs=0.1)


# -- over HTTP --------------------------------------------------------------------------------------


@pytest.fixture
def codex_sim(sim_factory: SimFactory) -> SimHandle:
    return sim_factory(profile="codex", ttft_ms=1.0, tokens_per_s=20_000.0)


def chat(sim: SimHandle, messages: list[dict[str, str]], **extra: Any) -> httpx.Response:
    return httpx.post(f"{sim.base_url}/chat/completions", json={"model": "m", "messages": messages, **extra})


def test_the_control_api_sets_the_truth_and_reports_each_draw(codex_sim: SimHandle) -> None:
    control = httpx.Client(base_url=codex_sim.root_url)
    body = {"files": {"show.py": renamed(URLS)}, "errors": "off"}
    answer = control.post("/_sim/edit-truth", json=body)
    assert answer.status_code == 200 and answer.json() == {"files": ["show.py"], "errors": "off", "error_scale": 1.0}
    messages = edit_messages(EditPrompt(path="show.py", text=URLS, first_line=0, end_line=1, instruction="rename"))
    for _ in range(2):
        text = chat(codex_sim, messages).json()["choices"][0]["message"]["content"]
        edits = parse_answer(text, EditTarget(originals={"show.py": URLS}, primary="show.py"))
        assert apply_all({"show.py": URLS}, edits) == {"show.py": renamed(URLS)}
    draws = control.get("/_sim/edits").json()
    assert draws["simulated"] is True
    assert [(d["endpoint"], d["attempt"], d["exact"]) for d in draws["edits"]] == [
        ("chat.completions", 0, True),
        ("chat.completions", 1, True),
    ]
    assert control.get("/_sim/stats").json()["edit_truth"]["files"] == ["show.py"]
    # A new truth counts attempts afresh; a reset forgets the draws.
    control.post("/_sim/edit-truth", json=body)
    chat(codex_sim, messages)
    assert control.get("/_sim/edits").json()["edits"][-1]["attempt"] == 0
    control.post("/_sim/reset")
    assert control.get("/_sim/edits").json()["edits"] == []
    control.close()


@pytest.mark.parametrize(
    "body",
    [{"files": ["a.py"]}, {"files": {}, "errors": "sometimes"}, {"files": {}, "error_scale": -1}, {"files": {"a": 1}}],
)
def test_the_control_api_refuses_a_bad_truth(codex_sim: SimHandle, body: dict[str, Any]) -> None:
    answer = httpx.post(f"{codex_sim.root_url}/_sim/edit-truth", json=body)
    assert answer.status_code == 400 and answer.json()["error"]["message"]


def test_without_an_edit_truth_an_edit_prompt_gets_the_usual_filler(codex_sim: SimHandle) -> None:
    messages = edit_messages(EditPrompt(path="show.py", text=URLS, first_line=0, end_line=1, instruction="x"))
    text = chat(codex_sim, messages, max_tokens=20).json()["choices"][0]["message"]["content"]
    assert "tandem sim" in text and "SEARCH" not in text


def test_an_edit_answer_streams_token_by_token_and_max_tokens_cuts_it(codex_sim: SimHandle) -> None:
    codex_sim.set_edit_truth({"textwrap.py": renamed(VIEWS)}, errors="off")
    messages = edit_messages(prompt())
    body = {"model": "m", "messages": messages, "stream": True, "stream_options": {"include_usage": True}}
    with httpx.stream("POST", f"{codex_sim.base_url}/chat/completions", json=body) as response:
        chunks = [json.loads(d) for d in sse_data(response.iter_lines()) if d != "[DONE]"]
    deltas = [c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"]]
    assert chunks[-1]["usage"]["completion_tokens"] == len([d for d in deltas if d]) > 50
    text = "".join(deltas)
    assert apply_all(
        {"textwrap.py": VIEWS}, parse_answer(text, EditTarget(originals={"textwrap.py": VIEWS}, primary="textwrap.py"))
    )
    short = chat(codex_sim, messages, max_tokens=30).json()["choices"][0]
    assert short["finish_reason"] == "length"
    with pytest.raises(AnswerParseError, match="cut off"):
        parse_answer(short["message"]["content"], EditTarget(originals={"textwrap.py": VIEWS}, primary="textwrap.py"))


def test_a_forced_mistake_reaches_every_api(codex_sim: SimHandle) -> None:
    codex_sim.set_edit_truth({"textwrap.py": renamed(VIEWS)}, errors="syntax")
    messages = edit_messages(prompt())
    chat(codex_sim, messages)
    httpx.post(
        f"{codex_sim.base_url}/messages",
        headers={"anthropic-version": "2023-06-01"},
        json={"model": "m", "max_tokens": 4000, "system": messages[0]["content"], "messages": messages[1:]},
    )
    httpx.post(
        f"{codex_sim.base_url}/responses",
        json={"model": "m", "instructions": messages[0]["content"], "input": messages[1:]},
    )
    draws = codex_sim.edit_draws()
    assert [d["endpoint"] for d in draws] == ["chat.completions", "messages", "responses"]
    assert all(d["mistake"] == "syntax" and d["breaks_syntax"] for d in draws)
    assert codex_sim.stats()["last_request"]["corrupted"] is True


# -- a draft to check ---------------------------------------------------------------------------------------


def check_prompt(draft: str) -> str:
    """An edit prompt as tandem sends it (its own messages), then a message showing `draft` to check."""
    edit = prompt()
    messages = [m["content"] for m in edit_messages(edit)]
    return "\n".join([*messages, f"<|tandem:draft|>\n{draft}\n<|tandem:end|>\nKEEP it or write your own."])


@pytest.mark.parametrize(("draft_right", "errors", "answer"), [
    (True, "calibrated", "keep"),  # a right draft is kept
    (False, "off", "own"),  # a wrong one is replaced by a model that could write the edit ...
    (False, "wrong-value", "keep"),  # ... and kept by one that could not
])  # fmt: skip
def test_a_draft_to_check_is_kept_or_replaced_by_the_right_edit(draft_right: bool, errors: str, answer: str) -> None:
    truth = EditTruth(files={"textwrap.py": renamed(VIEWS)}, errors=errors)
    right, _ = render_answer("textwrap.py", {"textwrap.py": VIEWS}, {"textwrap.py": renamed(VIEWS)})
    half = VIEWS.replace("dedent", "remove_indent", 1)
    wrong_draft, _ = render_answer("textwrap.py", {"textwrap.py": VIEWS}, {"textwrap.py": half})
    text = check_prompt(right if draft_right else wrong_draft)
    task = read_edit_task(text)
    assert task is not None and task.draft is not None and task.path == "textwrap.py"
    reply, draw = answer_edit(task, truth, profile="codex", attempt=0, seed=0, prompt_text=text)
    assert draw.draft_exact is draft_right and draw.kept_draft is (answer == "keep")
    if answer == "keep":
        assert reply == "KEEP"
    else:
        target = EditTarget(originals={"textwrap.py": VIEWS}, primary="textwrap.py")
        assert apply_all(target.originals, parse_answer(reply, target)) == {"textwrap.py": renamed(VIEWS)}
