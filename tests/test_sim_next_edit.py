"""The simulator's reading of next-edit prompts and its answers from the truth (its own code, no tandem's)."""

from __future__ import annotations

from tandem.completion.next_edit_prompt import NextEditPrompt, chat_messages, raw_prompt, read_rewrite
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
