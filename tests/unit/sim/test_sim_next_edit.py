"""The simulator's reading of next-edit prompts and its answers from the truth (its own code, no tandem's)."""

from __future__ import annotations

from tandem.completion.next_edit.prompt import NextEditPrompt, chat_messages, raw_prompt, read_rewrite
from tandem.sim import next_edit as sim

DOC = ["import os", "", "def f(a):", "    x = a", "    return a", "", "y = f(1)", "z = 2"]


def _prompt_text(before: int, end: int, *, raw: bool = False) -> str:
    prompt = NextEditPrompt(
        path="pkg/m.py",
        before="".join(f"{line}\n" for line in DOC[:before]),
        region="\n".join(DOC[before:end]),
        after="\n".join(DOC[end:]),
    )
    return raw_prompt(prompt) if raw else "\n".join(content for _, content in chat_messages(prompt))


def test_the_simulator_reads_both_prompt_forms() -> None:
    for raw in (False, True):
        read = sim.read_prompt(_prompt_text(2, 6, raw=raw))
        assert read is not None
        assert (read.path, read.before, read.region, read.after) == (
            "pkg/m.py",
            tuple(DOC[:2]),
            tuple(DOC[2:6]),
            tuple(DOC[6:]),
        )
    assert sim.read_prompt("def f(): pass") is None


def test_the_region_is_answered_as_the_truth_has_it_and_edges_are_left_alone() -> None:
    truth = "\n".join(["import os", "", "def f(arg):", "    x = arg", "    return arg", "", "y = f(arg=1)", "z = 2"])
    read = sim.read_prompt(_prompt_text(2, 5))
    assert read is not None
    assert sim.rewrite_region(read, truth) == ("def f(arg):", "    x = arg", "    return arg")
    # A change that straddles the region's edge is not the region's to make.
    straddling = sim.rewrite_region(
        sim.read_prompt(_prompt_text(3, 6)) or read, truth.replace("    x = arg\n    return arg", "    pass")
    )
    assert straddling[:2] == ("    x = a", "    return a")
    answer, known, corrupted = sim.answer(
        "p", read, sim.NextEditTruth({"m.py": truth}), profile="spark", error_rate=0.0, seed=0
    )
    assert known and not corrupted
    assert read_rewrite(answer, done=True) == ("def f(arg):\n    x = arg\n    return arg\n", True)


def test_without_a_truth_the_region_comes_back_unchanged() -> None:
    read = sim.read_prompt(_prompt_text(2, 5))
    assert read is not None
    answer, known, _ = sim.answer("p", read, sim.NextEditTruth(), profile="spark", error_rate=1.0, seed=0)
    assert not known and read_rewrite(answer, done=True)[0] == "\n".join(DOC[2:5]) + "\n"


def test_a_word_still_being_typed_is_finished_right_in_proportion_to_how_much_of_it_is_typed() -> None:
    """The cursor inside "ar" of the truth's "argument": the rest is guessed right with the error model's
    chance times 2/8; a miss ends the word as another name of the excerpt that starts so (here "area")
    and leaves the other changes out. An error rate of 0 is an oracle."""
    doc = ["area = 1", "", "def f(ar):", "    x = a", "    return a"]
    truth = "\n".join(["area = 1", "", "def f(argument):", "    x = argument", "    return argument"])
    prompt = NextEditPrompt(
        path="m.py",
        before="".join(f"{line}\n" for line in doc[:2]),
        region="\n".join([doc[2].replace("(ar", "(ar<|user_cursor_is_here|>"), *doc[3:]]),
    )
    read = sim.read_prompt("\n".join(content for _, content in chat_messages(prompt)))
    assert read is not None and read.cursor == (0, 8)
    known = sim.NextEditTruth({"m.py": truth})
    right = set(truth.split("\n")[2:])
    missed: list[str] = []
    for seed in range(400):
        answer, _, corrupted = sim.answer("p", read, known, profile="spark", error_rate=0.1, seed=seed)
        lines = read_rewrite(answer, done=True)[0].rstrip("\n").split("\n")
        if lines[0] != "def f(argument):" and lines[1:] == doc[3:]:
            assert corrupted
            missed.append(lines[0])
        # (otherwise the word was finished; the error model may still get the answer wrong, as any)
    # 1 - completion_mistake_probability(0.1, one line, fast) is 0.788: 0.788 x 2/8 = 0.197 of 400 = 79.
    assert 55 <= 400 - len(missed) <= 105
    assert set(missed) == {"def f(area):"}
    answer, _, corrupted = sim.answer("p", read, known, profile="spark", error_rate=0.0, seed=0)
    assert not corrupted and set(read_rewrite(answer, done=True)[0].rstrip("\n").split("\n")) == right


def test_the_rest_of_a_change_begun_after_a_bracket_is_never_guessed() -> None:
    """Nothing of the word typed yet (the cursor right after "("): the share typed is 0, so the simulator
    never finishes the change, and answers the region as the user has it."""
    doc = ["def f(", "    pass"]
    truth = "\n".join(["def f(a, b):", "    return a + b"])
    prompt = NextEditPrompt(path="m.py", region="\n".join(["def f(<|user_cursor_is_here|>", "    pass"]))
    read = sim.read_prompt("\n".join(content for _, content in chat_messages(prompt)))
    assert read is not None
    for seed in range(50):
        answer, _, corrupted = sim.answer(
            "p", read, sim.NextEditTruth({"m.py": truth}), profile="spark", error_rate=0.1, seed=seed
        )
        assert corrupted and read_rewrite(answer, done=True)[0] == "\n".join(doc) + "\n"
