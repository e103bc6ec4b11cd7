"""A model on the user's machine: the anchored prompt, the slot queue, patient streams, a repeated suffix."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from tandem.cache.lines import LineBuffer
from tandem.completion.inline.local_prompt import ANCHOR_LINES, PREFIX_STEP, local_window
from tandem.completion.inline.postprocess import Surroundings, clean, cut_repeated_suffix
from tandem.completion.inline.streams import Stream
from tandem.completion.providers.backends.fim_templates import render
from tandem.completion.providers.slots import SPECULATIVE, USER, Slots

TEXT = "".join(f"line {i}\n" for i in range(300))


def _window(line: int, character: int, text: str = TEXT) -> tuple[str, str, str]:
    w = local_window(LineBuffer(text), line, character, max_prefix_chars=6000, max_suffix_chars=2000)
    return w.prefix, w.middle, w.suffix


def test_the_window_splits_the_text_before_the_cursor_at_an_anchor_line() -> None:
    doc = LineBuffer(TEXT)
    for line, character in [(0, 0), (3, 2), (8, 0), (45, 4), (299, 3)]:
        prefix, middle, suffix = _window(line, character)
        before = doc.text_before(line, character, 10**6)
        assert before.endswith(prefix + middle)
        assert middle == before[len(before) - len(middle) :]
        anchor = line - line % ANCHOR_LINES
        assert middle.count("\n") == line - anchor
        assert suffix == doc.text_after(line, character, 2000)[: len(suffix)]


def test_typing_on_leaves_the_prompt_before_the_middle_unchanged() -> None:
    # Typing inserts at the cursor: each key's prompt extends the last one until the anchor moves.
    typed = "value = compute(a, b)\nreturn value\n"
    prompts = []
    for count in range(len(typed) + 1):
        text = TEXT[: TEXT.index("line 41\n")] + typed[:count] + TEXT[TEXT.index("line 41\n") :]
        lines = (text[: text.index("line 41\n")]).split("\n")
        line, character = len(lines) - 1, len(lines[-1])
        prefix, middle, suffix = _window(line, character, text)
        prompts.append(render("qwen2.5-coder", prefix, suffix, middle))
    for earlier, later in itertools.pairwise(prompts):
        assert later.startswith(earlier)


def test_the_prefix_starts_on_a_step_line_so_that_it_moves_rarely() -> None:
    starts = set()
    for line in range(200, 232):
        prefix, _, _ = _window(line, 0)
        first = int(prefix.split("\n", 1)[0].split()[1])
        assert first % PREFIX_STEP == 0
        starts.add(first)
    assert len(starts) <= 2


def test_the_window_is_small_enough_for_a_first_answer_in_a_few_seconds() -> None:
    # A server on one shared core reads ~120 prompt tokens/s and a replayed span is typed in ~10 s: a
    # file's first request must be a few hundred tokens (~16-32 lines before the anchor, 8 after the cursor).
    for line in range(40, 290):
        prefix, _, suffix = _window(line, 3)
        assert 16 <= prefix.count("\n") <= 32
        assert suffix.count("\n") == 8
    prefix, middle, suffix = _window(5, 3)  # near the top: the whole file above the cursor
    assert prefix == "" and middle == TEXT[: TEXT.index("line 5\n") + len("lin")]


def test_a_repeated_suffix_is_cut_from_the_suggestion() -> None:
    around = Surroundings(line_before="total = ", line_after="(values)", previous_line="", following=("print(total)",))
    assert cut_repeated_suffix("sum(values)\nprint(total)\n", around) == "sum"
    assert cut_repeated_suffix("sum(values", around) == "sum"  # cut off inside the repeat
    assert clean("sum(values)\nprint(total)\n", around) == "sum"
    # Text that only shares short pieces with the suffix stays.
    assert cut_repeated_suffix("len", around) == "len"
    blank = Surroundings(line_before="", line_after="", previous_line="def f():", following=("", "def g():"))
    assert cut_repeated_suffix("    return 1\n\ndef g():\n    pass\n", blank) == "    return 1"


async def test_slots_serve_the_user_before_speculation_and_drop_a_cancelled_waiter() -> None:
    slots = Slots(1)
    order: list[str] = []
    release = asyncio.Event()

    async def hold(name: str, priority: int, *, wait: bool = False) -> None:
        async with slots.hold(priority):
            order.append(name)
            if wait:
                await release.wait()

    first = asyncio.create_task(hold("first", USER, wait=True))
    await asyncio.sleep(0)  # sleep-ok: one turn of the loop, so the tasks made above take their first step
    speculative = asyncio.create_task(hold("speculative", SPECULATIVE))
    dropped = asyncio.create_task(hold("dropped", USER))
    user = asyncio.create_task(hold("user", USER))
    await asyncio.sleep(0)  # sleep-ok: one turn of the loop, so the tasks made above take their first step
    assert slots.busy and slots.waiting == 3
    dropped.cancel()
    release.set()
    await asyncio.gather(first, speculative, user, return_exceptions=True)
    assert order == ["first", "user", "speculative"]
    assert not slots.busy and slots.waiting == 0


async def test_a_patient_stream_reading_its_prompt_stops_at_its_first_token() -> None:
    started = asyncio.Event()

    async def producer(stream: Stream) -> None:
        stream.stats.request_sent_ns = 1
        started.set()
        await asyncio.Event().wait()  # a server still reading the prompt

    patient = Stream(uri="u", line=0, character=0, before="", after="", model="m", patient=True)
    patient.run(producer(patient))
    await started.wait()
    patient.supersede()
    await asyncio.sleep(0)  # sleep-ok: one turn of the loop, so the tasks made above take their first step
    assert not patient.done, "a request still being read must be let finish reading"
    patient.append("x")
    with pytest.raises(asyncio.CancelledError):
        await patient.task  # type: ignore[misc]
    assert patient.cancelled and patient.text == ""

    eager = Stream(uri="u", line=0, character=0, before="", after="", model="m")
    started.clear()
    eager.run(producer(eager))
    await started.wait()
    eager.supersede()
    with pytest.raises(asyncio.CancelledError):
        await eager.task  # type: ignore[misc]
    assert eager.cancelled


def test_a_slow_models_line_is_shown_word_by_word_when_early_units_are_on() -> None:
    from tandem.completion.inline.units import UnitContext, useful_unit

    early = UnitContext(line_before="    return ", line_after="", multiline=False, early=True)
    late = UnitContext(line_before="    return ", line_after="", multiline=False)
    assert useful_unit("self._compu", False, early) == "self."
    assert useful_unit("self._compute(a, b", False, early) == "self._compute(a,"
    assert useful_unit("ab", False, early) is None  # too little to be worth a ghost
    assert useful_unit("self._compute(a, b", False, late) is None
    # A complete line is the unit either way.
    assert useful_unit("x + 1\n    y", False, early) == useful_unit("x + 1\n    y", False, late) == "x + 1"


def test_a_request_the_provider_refuses_alone_does_not_open_the_breaker() -> None:
    from tandem.completion.providers.breaker import Breaker, kind_of
    from tandem.completion.providers.errors import BadResponse, RequestRefused

    too_long = RequestRefused("127.0.0.1 answered 400 Bad Request: request (17433 tokens) exceeds the context")
    assert kind_of(too_long) is None
    breaker = Breaker("local")
    for _ in range(5):
        assert breaker.failure(too_long, 0.0) is None
    assert breaker.allows(0.0)
    assert kind_of(BadResponse("stream truncated")) == "transient"


async def test_an_edit_prompt_is_cut_to_the_smallest_model_window() -> None:
    from tandem.completion.edit.prompt import EditPrompt
    from tandem.completion.edit.window import fit_window

    text = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(2000))

    async def count(messages: tuple[tuple[str, str], ...]) -> int:
        return sum(len(content) for _, content in messages) // 3

    prompt = EditPrompt(path="a.py", text=text, first_line=3000, end_line=3003, instruction="add one", context={})
    fitted, messages, over = await fit_window(prompt, answer_tokens=16384, count=count, window_tokens=8192)
    assert not over and fitted.shown is not None
    assert await count(messages) <= 8192 - 2048
    whole, _, _ = await fit_window(prompt, answer_tokens=16384, count=count)
    assert whole.shown is None  # the 128K window takes the whole file


def test_a_block_that_copies_the_prompts_numbered_view_is_read_as_code() -> None:
    from tandem.completion.edit.parse import EditTarget, parse_answer

    text = "def add(a, b):\n    return a + b\n\n\nprint(add(2, 3))\n"
    # Qwen2.5-Coder 1.5B's answer in llama.cpp to "Rename the function add to plus.", as it came.
    answer = (
        "<<<<<<< SEARCH\ncalc.py lines 1-5\n    1| def add(a, b):\n    2|     return a + b\n    3| \n    4| \n"
        "    5| print(add(2, 3))\n=======\ncalc.py lines 1-5\n    1| def plus(a, b):\n    2|     return a + b\n"
        "    3| \n    4| \n    5| print(plus(2, 3))\n>>>>>>> REPLACE"
    )
    [edit] = parse_answer(answer, EditTarget(originals={"calc.py": text}, primary="calc.py"))
    assert text[: edit.start] + edit.new_text + text[edit.end :] == text.replace("add", "plus")
    # Code that merely looks numbered in part is left as it is.
    plain = "<<<<<<< SEARCH\n    return a + b\n=======\n    return a + b  # 1| sum\n>>>>>>> REPLACE"
    [kept] = parse_answer(plain, EditTarget(originals={"calc.py": text}, primary="calc.py"))
    assert kept.new_text.endswith("# 1| sum\n")


def test_a_local_models_read_timeout_covers_reading_its_window() -> None:
    """A local server sends nothing while it reads a prompt (2,800 tokens at ~120 tokens/s: 23 s), so a
    10 s read timeout failed every next-edit prompt of a real 0.5B and opened the breaker."""
    from tandem.completion.config.tree import ModelConfig
    from tandem.completion.providers.http import request_timeout

    cloud = ModelConfig(timeout_s=10.0)
    assert cloud.read_timeout_s == 10.0 and request_timeout(cloud).read == 10.0
    local = ModelConfig(timeout_s=10.0, local=True, context_tokens=8192)
    assert local.read_timeout_s >= 8192 / 60 and request_timeout(local).read == local.read_timeout_s
    assert ModelConfig(timeout_s=300.0, local=True).read_timeout_s == 300.0  # a longer one set is kept
