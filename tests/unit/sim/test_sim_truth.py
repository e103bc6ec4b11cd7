"""Truth mode: the simulator answers with the text that really follows the prompt's prefix."""

from __future__ import annotations

import pathlib

import httpx
import pytest
from fixtures_sim import SimFactory

from tandem.completion.inline.prompts import chat_messages
from tandem.completion.providers.backends.fim_templates import TEMPLATES, render
from tandem.sim.error_model import Attempt, apply_error_model
from tandem.sim.runner import SimHandle
from tandem.sim.settings import SimConfigError
from tandem.sim.truth import TruthIndex

GEOMETRY = '''"""Shapes."""

import math


def area(width, height):
    return width * height


def circle_area(radius):
    return math.pi * radius ** 2


def perimeter(width, height):
    return 2 * (width + height)
'''
# The same opening in another file, continued differently.
COPY = '''"""Shapes."""

import math


def area(width, height):
    result = width * height
    return result
'''


def split_at(text: str, start_marker: str, end_marker: str) -> tuple[str, str, str]:
    """(prefix, middle, suffix) of `text`, the middle running from the end of `start_marker` to the
    start of `end_marker`."""
    start = text.index(start_marker) + len(start_marker)
    end = text.index(end_marker, start)
    return text[:start], text[start:end], text[end:]


@pytest.fixture
def truth_dir(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "truth"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "geometry.py").write_text(GEOMETRY)
    (root / "other.txt").write_text("unrelated notes\n")
    (root / "blob.bin").write_bytes(b"\x00\x01binary")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(COPY)  # hidden directories are not truth
    return root


@pytest.fixture
def truth_sim(sim_factory: SimFactory, truth_dir: pathlib.Path) -> SimHandle:
    return sim_factory(truth=(str(truth_dir),), ttft_ms=1.0, tokens_per_s=50_000.0)


def test_index_finds_the_middle_and_stops_where_the_suffix_resumes(truth_dir: pathlib.Path) -> None:
    index = TruthIndex.load([str(truth_dir)])
    assert index.file_count == 2  # the binary file and .git are skipped
    prefix, middle, suffix = split_at(GEOMETRY, "def circle_area(radius):\n    return ", "\n\n\ndef perimeter")
    match = index.lookup(prefix, suffix, max_chars=1000)
    assert match is not None
    assert match.text == middle == "math.pi * radius ** 2"
    assert match.complete and match.path.endswith("geometry.py")
    assert match.offset == len(prefix)


def test_without_a_suffix_the_answer_runs_to_the_end_of_the_file_or_max_chars(truth_dir: pathlib.Path) -> None:
    index = TruthIndex.load([str(truth_dir)])
    prefix = GEOMETRY[: GEOMETRY.index("def perimeter")]
    match = index.lookup(prefix, "", max_chars=10_000)
    assert match is not None and match.complete
    assert match.text == GEOMETRY[len(prefix) :]
    cut = index.lookup(prefix, "", max_chars=10)
    assert cut is not None and cut.text == "def perime" and not cut.complete


def test_a_short_suffix_counts_only_at_the_end_of_the_file(truth_dir: pathlib.Path) -> None:
    index = TruthIndex.load([str(truth_dir)])
    prefix = GEOMETRY[: GEOMETRY.index("2 * (width")]
    at_end = index.lookup(prefix, ")\n", max_chars=1000)
    assert at_end is not None and at_end.text == "2 * (width + height"
    # ")\n" occurs earlier too (after "area(width, height"), but only the file's end is where it resumes.
    elsewhere = index.lookup(prefix, "+ height)\n\nmore", max_chars=1000)
    assert elsewhere is not None and elsewhere.text == GEOMETRY[len(prefix) :]


def test_the_longest_agreeing_tail_wins(tmp_path: pathlib.Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\ny = 2\nz = 3\n")
    (tmp_path / "b.py").write_text("x = 9\ny = 2\nz = 4\n")
    index = TruthIndex.load([str(tmp_path)])
    for first, expected in (("x = 1", "3\n"), ("x = 9", "4\n")):
        match = index.lookup(f"{first}\ny = 2\nz = ", "", max_chars=100)
        assert match is not None and match.text == expected


def test_among_equal_tails_the_one_followed_by_the_suffix_wins(tmp_path: pathlib.Path) -> None:
    (tmp_path / "a_geometry.py").write_text(COPY)
    (tmp_path / "b_geometry.py").write_text(GEOMETRY)
    index = TruthIndex.load([str(tmp_path)])
    prefix, middle, suffix = split_at(GEOMETRY, "def area(width, height):\n", "\n\n\ndef circle_area")
    match = index.lookup(prefix, suffix, max_chars=1000)
    assert match is not None and match.text == middle and match.path.endswith("b_geometry.py")
    # Without the suffix to tell them apart, the first file in order answers.
    first = index.lookup(prefix, "", max_chars=1000)
    assert first is not None and first.path.endswith("a_geometry.py")


def test_a_prefix_of_one_partial_line_is_found_too(truth_dir: pathlib.Path) -> None:
    index = TruthIndex.load([str(truth_dir)])
    match = index.lookup("return math.p", "", max_chars=12)
    assert match is not None and match.text == "i * radius *"


def test_no_match_is_none(truth_dir: pathlib.Path) -> None:
    index = TruthIndex.load([str(truth_dir)])
    assert index.lookup("def volume(a, b, c):\n    ", "", max_chars=100) is None
    assert index.lookup("", "", max_chars=100) is None


def test_unreadable_truth_paths_are_refused(tmp_path: pathlib.Path) -> None:
    with pytest.raises(SimConfigError, match="does not exist"):
        TruthIndex.load([str(tmp_path / "missing")])
    (tmp_path / "only.bin").write_bytes(b"\x00\xff")
    with pytest.raises(SimConfigError, match="no readable text files"):
        TruthIndex.load([str(tmp_path)])
    with pytest.raises(SimConfigError, match="not a readable UTF-8 text file"):
        TruthIndex.load([str(tmp_path / "only.bin")])


def test_chat_request_is_answered_with_the_true_middle(truth_sim: SimHandle) -> None:
    prefix, middle, suffix = split_at(GEOMETRY, "def area(width, height):\n", "\n\n\ndef circle_area")
    body = {"messages": chat_messages(prefix, suffix, path="geometry.py"), "max_tokens": 100}
    body = httpx.post(f"{truth_sim.base_url}/chat/completions", json=body).json()
    assert body["choices"][0]["message"]["content"] == middle
    assert body["choices"][0]["finish_reason"] == "stop"
    last = truth_sim.stats()["last_request"]
    assert last["truth_matched"] is True and last["corrupted"] is False


def test_a_chat_in_no_known_shape_continues_its_last_message(truth_sim: SimHandle) -> None:
    messages = [{"role": "user", "content": "Continue this:\nimport math\n\n\ndef area(width, height):\n"}]
    request = {"messages": messages, "max_tokens": 50, "stop": "\n"}
    body = httpx.post(f"{truth_sim.base_url}/chat/completions", json=request).json()
    assert body["choices"][0]["message"]["content"] == "    return width * height"
    assert body["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_raw_fim_prompts_in_every_template_are_understood(truth_sim: SimHandle, template: str) -> None:
    prefix, middle, suffix = split_at(GEOMETRY, "def perimeter(width, height):\n", "\n")
    body = {"prompt": render(template, prefix, suffix), "max_tokens": 50, "stop": list(TEMPLATES[template].stop)}
    choice = httpx.post(f"{truth_sim.base_url}/completions", json=body).json()["choices"][0]
    assert choice["text"] == middle
    assert choice["finish_reason"] == "stop"


def test_stop_strings_cut_the_truth(truth_sim: SimHandle) -> None:
    prefix = GEOMETRY[: GEOMETRY.index("def circle_area")]
    body = {"prompt": prefix, "max_tokens": 100, "stop": ["**", "\n"]}
    choice = httpx.post(f"{truth_sim.base_url}/completions", json=body).json()["choices"][0]
    assert choice["text"] == "def circle_area(radius):"
    assert choice["finish_reason"] == "stop"


def test_max_tokens_bounds_the_truth(truth_sim: SimHandle) -> None:
    prefix = GEOMETRY[: GEOMETRY.index("def circle_area")]
    body = {"prompt": prefix, "max_tokens": 3, "stream": True, "stream_options": {"include_usage": True}}
    with httpx.Client() as client, client.stream("POST", f"{truth_sim.base_url}/completions", json=body) as r:
        lines = [line for line in r.iter_lines() if line.startswith("data: {")]
    assert '"finish_reason":"length"' in lines[-2]
    assert '"completion_tokens":3' in lines[-1]
    text = "".join(line.split('"text":"')[1].split('"')[0] for line in lines[:-2])
    assert text == "def circle_area"


def test_no_match_answers_nothing(truth_sim: SimHandle) -> None:
    body = {"prompt": "class Volume:\n    ", "max_tokens": 30}
    choice = httpx.post(f"{truth_sim.base_url}/completions", json=body).json()["choices"][0]
    assert (choice["text"], choice["finish_reason"]) == ("", "stop")
    assert truth_sim.stats()["last_request"]["truth_matched"] is False


def test_error_rate_one_corrupts_every_answer_the_same_way(sim_factory: SimFactory, truth_dir: pathlib.Path) -> None:
    prefix, middle, suffix = split_at(GEOMETRY, "def circle_area(radius):\n", "\n\n\ndef perimeter")
    answers = []
    for _ in range(2):
        sim = sim_factory(truth=(str(truth_dir),), error_rate=1.0, seed=7, profile="instant")
        for _ in range(2):
            body = {"prompt": prefix, "suffix": suffix, "max_tokens": 100}
            answers.append(httpx.post(f"{sim.base_url}/completions", json=body).json()["choices"][0]["text"])
        assert sim.stats()["last_request"]["corrupted"] is True
    assert len(set(answers)) == 1
    assert answers[0] != middle


def test_error_rate_zero_never_corrupts() -> None:
    attempt = Attempt(prefix="a = 1\n", suffix="", answer="b = a + 1\n", profile="spark", base_rate=0.0, seed=1)
    assert apply_error_model(attempt) == ("b = a + 1\n", False)


def test_a_corrupted_answer_keeps_a_right_start_and_goes_wrong_later() -> None:
    answer = "total = price * quantity + shipping_cost(weight, 12)\n"
    wrong_answers = set()
    for seed in range(30):
        attempt = Attempt(
            prefix="def bill(price, quantity, weight):\n    ",
            suffix="",
            answer=answer,
            profile="spark",
            base_rate=1.0,
            seed=seed,
        )
        given, corrupted = apply_error_model(attempt)
        assert corrupted and given != answer
        # The first point of difference is at a word boundary, as if the model chose a wrong word there.
        at = next(i for i, (a, b) in enumerate(zip(given, answer, strict=False)) if a != b)
        assert at == 0 or not answer[at - 1].isalnum()
        wrong_answers.add(given)
    assert len(wrong_answers) > 10  # the dice depend on the seed


def test_error_rate_between_zero_and_one_corrupts_some(tmp_path: pathlib.Path) -> None:
    corrupted = 0
    for n in range(200):
        attempt = Attempt(prefix=f"x{n} = ", suffix="", answer="value + 1\n", profile="spark", base_rate=0.3, seed=0)
        corrupted += apply_error_model(attempt)[1]
    assert 20 < corrupted < 120
