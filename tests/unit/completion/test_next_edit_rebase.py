"""Carrying a rewrite over the user's newer keys (`completion.next_edit.rebase`): when the region still
lines up, and when the rewrite agrees with what the user typed since it was asked for."""

from __future__ import annotations

from tandem.cache.edit_region import Region
from tandem.cache.lines import LineBuffer
from tandem.completion.inline.streams import Stream
from tandem.completion.next_edit.prompt import REGION_END, REGION_START
from tandem.completion.next_edit.rebase import agreement, behind, carried, snapshot

BASE = ["import math", "", "def area(w, h):", "    scale = 1", "    return w * h * scale", "", "", "print(area(2, 3))"]


def _rewrite(*lines: str, done: bool = True) -> str:
    body = "".join(f"{line}\n" for line in lines)
    return f"{REGION_START}\n{body}{REGION_END}" if done else f"{REGION_START}\n{body}"


def test_a_region_is_carried_while_every_change_lies_inside_it() -> None:
    base = tuple(BASE)
    region = Region(2, base[2:5])
    inside = LineBuffer("\n".join([*BASE[:2], "def area(wi, h):", "    scale = 1", "", *BASE[4:]]))
    now = carried(base, region, inside)
    # A line added inside the region moves its end, not its start.
    assert now == Region(2, ("def area(wi, h):", "    scale = 1", "", "    return w * h * scale"))
    above = LineBuffer("\n".join(["import maths", *BASE[1:]]))
    below = LineBuffer("\n".join([*BASE[:7], "print(area(2, 4))"]))
    assert carried(base, region, above) is None and carried(base, region, below) is None
    assert carried(base, region, LineBuffer("\n".join(BASE))) == region


def test_a_rewrite_agrees_when_it_has_what_the_user_typed_or_that_with_more_at_the_cursor() -> None:
    base = Region(2, ("def area(w, h):", "    scale = 1", "    return w * h * scale"))
    model = _rewrite("def area(width, h):", "    scale = 1", "    return width * h * scale")
    typing = Region(2, ("def area(wid, h):", *base.lines[1:]))
    assert agreement(base, typing, model, done=True) is True
    finished = Region(2, ("def area(width, h):", *base.lines[1:]))
    assert agreement(base, finished, model, done=True) is True
    # Typed otherwise than the rewrite has it: it would change what the user just typed.
    assert agreement(base, Region(2, ("def area(wx, h):", *base.lines[1:])), model, done=True) is False
    # The rest of the word, and a change on the next line in the same hunk, agree.
    two = _rewrite("def area(width, h):", "    scale = 2", "    return width * h * scale")
    assert agreement(base, typing, two, done=True) is True
    # Text put inside what the user typed does not.
    assert agreement(base, typing, _rewrite("def area(wXid, h):", *base.lines[1:]), done=True) is False
    # The rewrite leaves the line as it was: the user's change is not in it.
    unchanged = _rewrite(*base.lines)
    assert agreement(base, typing, unchanged, done=True) is False
    # No change since the rewrite was asked for: it agrees, whatever it has.
    assert agreement(base, base, unchanged, done=True) is True


def test_agreement_waits_until_the_rewrite_has_settled_past_the_users_change() -> None:
    base = Region(2, ("def area(w, h):", "    scale = 1", "    return w * h * scale", "", ""))
    typing = Region(2, ("def area(wid, h):", *base.lines[1:]))
    assert agreement(base, typing, f"{REGION_START}\n", done=False) is None
    assert agreement(base, typing, _rewrite("def area(width, h):", done=False), done=False) is None
    # One line in step with the region after the change is not enough (it may be a new line that looks
    # like one); two are.
    one = _rewrite("def area(width, h):", "    scale = 1", done=False)
    assert agreement(base, typing, one, done=False) is None
    settled = _rewrite("def area(width, h):", "    scale = 1", "    return w * h * scale", done=False)
    assert agreement(base, typing, settled, done=False) is True
    wrong = _rewrite("def area(x, h):", "    scale = 1", "    return w * h * scale", done=False)
    assert agreement(base, typing, wrong, done=False) is False


def test_a_rewrite_that_puts_back_lines_the_user_removed_disagrees() -> None:
    base = Region(0, ("a = 1", "b = 2", "c = 3", "d = 4"))
    removed = Region(0, ("a = 1", "c = 3", "d = 4"))
    assert agreement(base, removed, _rewrite(*base.lines), done=True) is False
    # A rewrite that removes it too, and changes another line, agrees.
    assert agreement(base, removed, _rewrite("a = 1", "c = 3", "d = 5"), done=True) is True


def _stream(text: str, *, done: bool = False) -> Stream:
    stream = Stream(uri="u", line=0, character=0, before="", after="", model="m")
    stream.append(text)
    if done:
        stream.finish()
    return stream


def test_a_rewrite_is_behind_until_it_has_streamed_as_far_as_the_users_change() -> None:
    base = Region(2, ("import os", "", "def area(w, h):", "    scale = 1", "    return w * h * scale", "", ""))
    typing = Region(2, (*base.lines[:2], "def area(wid, h):", *base.lines[3:]))
    lines = ("import os", "", "def area(width, h):", "    scale = 1", "    return width * h * scale", "", "")

    def behind_at(text: str, *, done: bool = False) -> bool:
        return behind([(base, typing, _stream(text, done=done))])

    # Waiting for the first token, or copying the two lines above the user's change: a model's time away.
    assert behind_at("") and behind_at(f"{REGION_START}\n") and behind_at(_rewrite(*lines[:1], done=False))
    # At the user's line, not yet settled past it: a line or two away, so not behind.
    assert not behind_at(_rewrite(*lines[:2], done=False))
    assert not behind_at(_rewrite(*lines[:3], done=False))
    # Known either way, or done: not behind.
    assert not behind_at(_rewrite(*lines)) and not behind_at(_rewrite(*base.lines), done=True)
    # A part that agrees answers; one behind beside one that disagrees is still worth a request beside it.
    agreeing = (base, typing, _stream(_rewrite(*lines), done=True))
    disagreeing = (base, typing, _stream(_rewrite(*base.lines), done=True))
    waiting = (base, typing, _stream(""))
    assert not behind([agreeing, waiting]) and behind([disagreeing, waiting])


def test_snapshot_is_the_whole_document() -> None:
    assert snapshot(LineBuffer("a\nb\n")) == ("a", "b", "")
