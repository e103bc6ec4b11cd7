"""The simulator reads what tandem sends with its own reading (`sim.prompt_reading`, `sim.edit_reading`),
so a contract test against it checks tandem against something tandem did not write.

Two halves: the readers agree with tandem's writers today (the contract), and when tandem's format
changes the simulator stops recognising it and a contract test fails (shown by changing tandem's markers
in this process and watching a backend lose the true continuation)."""

from __future__ import annotations

import pathlib

import pytest
from fixtures_sim import SimFactory
from test_backends_contract import MIDDLE, PREFIX, SUFFIX, collect

from tandem.completion.config.tree import ModelConfig
from tandem.completion.edit import prompt as edit_prompt
from tandem.completion.edit.prompt import EditPrompt, edit_messages
from tandem.completion.inline import prompts
from tandem.completion.providers.backends import fim_templates
from tandem.completion.providers.backends.factory import make_backend
from tandem.completion.providers.http import make_client
from tandem.sim.edit_reading import read_edit_task
from tandem.sim.prompt_reading import read_chat, read_fim

pytestmark = pytest.mark.contract

# A prefix and suffix with the awkward parts: blank lines at the edges, non-ASCII, marker-like text.
AWKWARD = ("\n\ndef f(x):  # é 日本 <fim_suffix-ish>\n    return ", "\n\n# end\n")


def test_the_simulator_reads_what_tandem_writes() -> None:
    for before, after in ((PREFIX, SUFFIX), AWKWARD, ("", ""), ("x = ", "")):
        messages = prompts.chat_messages(before, after, path="a.py", language="python", context="# b.py\nB = 1\n")
        assert read_chat(messages) == (before, after)
        for name in fim_templates.TEMPLATES:  # every template tandem can send, the simulator must know
            assert read_fim(fim_templates.render(name, before, after)) == (before, after), name
    text = "def f():\n    return 1\n"
    prompt = EditPrompt(
        path="pkg/a.py",
        text=text,
        first_line=0,
        end_line=2,
        instruction="Rename f to g everywhere.",
        context={"pkg/b.py": "from pkg.a import f\n"},
        language="python",
    )
    task = read_edit_task("\n".join(m["content"] for m in edit_messages(prompt)))
    assert task is not None
    assert (task.path, task.text, dict(task.context), task.instruction) == (
        "pkg/a.py",
        text,
        {"pkg/b.py": "from pkg.a import f\n"},
        "Rename f to g everywhere.",
    )


def test_the_simulator_reads_a_file_shown_in_part_and_answers_for_those_lines() -> None:
    from tandem.sim.edits import EditTruth, truth_of_part

    text = "".join(f"line_{n} = {n}\n" for n in range(10))
    prompt = EditPrompt(path="a.py", text=text, first_line=4, end_line=5, instruction="double it", shown=(3, 7))
    task = read_edit_task("\n".join(m["content"] for m in edit_messages(prompt)))
    assert task is not None and task.path == "a.py"
    assert (task.text, task.shown_lines) == ("line_3 = 3\nline_4 = 4\nline_5 = 5\nline_6 = 6\n", (4, 7, 10))
    after = text.replace("line_4 = 4\n", "line_4 = 8\n# doubled\n")
    part = truth_of_part(task, EditTruth(files={"a.py": after}))
    assert part.files["a.py"] == "line_3 = 3\nline_4 = 8\n# doubled\nline_5 = 5\nline_6 = 6\n"


@pytest.mark.parametrize("what", ["chat hole marker", "fim template tokens", "edit section marker"])
async def test_a_changed_prompt_format_is_noticed(
    what: str, sim_factory: SimFactory, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if what == "edit section marker":
        prompt = EditPrompt(path="a.py", text="x = 1\n", first_line=0, end_line=1, instruction="Fix.")
        assert read_edit_task("\n".join(m["content"] for m in edit_messages(prompt))) is not None
        monkeypatch.setattr(edit_prompt, "_FILE", "<|tandem:document|>")
        assert read_edit_task("\n".join(m["content"] for m in edit_messages(prompt))) is None
        return
    truth = tmp_path / "greet.py"
    truth.write_text(PREFIX + MIDDLE + SUFFIX)
    sim = sim_factory(profile="instant", truth=(str(truth),))
    if what == "chat hole marker":
        config = ModelConfig(provider="openai-chat", base_url=sim.base_url, model="sim")
    else:
        config = ModelConfig(provider="fim", base_url=sim.base_url, model="sim", fim_template="qwen2.5-coder")
    async with make_client() as client:
        text, _, error = await collect(make_backend(config, client, env={}))
        assert (text, error) == (MIDDLE, None)  # the format as it is: the true continuation
        if what == "chat hole marker":
            monkeypatch.setattr(prompts, "HOLE", "<|tandem:gap|>")
        else:
            changed = fim_templates.FimTemplate("qwen2.5-coder", "<|fim_begin|>", "<|fim_hole|>", "<|fim_end|>")
            monkeypatch.setitem(fim_templates.TEMPLATES, "qwen2.5-coder", changed)
        text, _, error = await collect(make_backend(config, client, env={}))
    assert error is None and text != MIDDLE
    assert sim.stats()["last_request"]["truth_matched"] is False
