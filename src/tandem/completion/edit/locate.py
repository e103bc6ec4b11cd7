"""Finding the text a model quoted (a SEARCH block, a diff hunk's old lines) in the real file.

Models quote imperfectly: trailing spaces dropped, CRLF turned into LF, the whole block indented one
level less, a stray blank line at either end. `locate` tries, in order, an exact match, a match that
ignores trailing whitespace, then one that ignores indentation (and re-indents the replacement to
match). It never guesses between equally good places: an ambiguous quote is an error unless the
caller's hint (the selection, the line the diff claimed) singles one out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tandem.completion.edit.file_edits import AnswerParseError


@dataclass(frozen=True)
class Located:
    """Where a quote was found, and the replacement adjusted to that place."""

    start: int
    end: int
    replace: str
    how: str  # "exact" | "trailing-space" | "indent"


def _lines_with_offsets(text: str) -> list[tuple[int, str]]:
    """(start offset, line without its newline) for each line of `text`."""
    out: list[tuple[int, str]] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        out.append((offset, line.rstrip("\r\n")))
        offset += len(line)
    return out


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _trim_shared_blank_ends(quote: list[str], replace: list[str]) -> tuple[list[str], list[str]]:
    """Drop blank lines that both ends of the quote and of the replacement have: a model's padding.
    A blank line only in the quote may be one the edit removes, so it stays."""
    while len(quote) > 1 and replace and not quote[0].strip() and not replace[0].strip():
        quote, replace = quote[1:], replace[1:]
    while len(quote) > 1 and replace and not quote[-1].strip() and not replace[-1].strip():
        quote, replace = quote[:-1], replace[:-1]
    return quote, replace


def _split_lines(text: str) -> list[str]:
    lines = [line.rstrip("\r") for line in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it is not a blank line of its own
    return lines


def _pick(
    candidates: list[tuple[int, int]], quote: str, within: tuple[int, int] | None, near: int | None
) -> tuple[int, int] | None:
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    if within is not None:
        inside = [c for c in candidates if c[0] < within[1] and c[1] > within[0]] or [
            c for c in candidates if c[0] <= within[1] and c[1] >= within[0]
        ]
        if len(inside) == 1:
            return inside[0]
        if inside:
            candidates = inside
    if near is not None:
        ranked = sorted(candidates, key=lambda c: abs(c[0] - near))
        if abs(ranked[0][0] - near) < abs(ranked[1][0] - near):
            return ranked[0]
    first = quote.strip().splitlines()[0] if quote.strip() else quote
    raise AnswerParseError(f"the quoted text occurs {len(candidates)} times, cannot tell which: {first[:60]!r}")


def _line_matches(text: str, quote_lines: list[str], same: Callable[[str, str], bool]) -> list[tuple[int, int, bool]]:
    """(start offset, end offset, whether the end took a newline) of each run of lines matching
    `quote_lines`."""
    lines = _lines_with_offsets(text)
    n = len(quote_lines)
    found: list[tuple[int, int, bool]] = []
    if n == 0:
        return found
    for i in range(len(lines) - n + 1):
        if all(same(lines[i + k][1], quote_lines[k]) for k in range(n)):
            last_start, last = lines[i + n - 1]
            end = last_start + len(last)
            # Take the newline too, so a replacement of whole lines stays whole lines.
            newline = 2 if text.startswith("\r\n", end) else 1 if text.startswith("\n", end) else 0
            found.append((lines[i][0], end + newline, newline > 0))
    return found


def _whole_lines(lines: list[str], newline: bool, span: str) -> str:
    """`lines` joined with the span's line ending; ending in one when the span did (else it was the
    file's last line)."""
    eol = "\r\n" if "\r\n" in span else "\n"
    text = eol.join(lines)
    return text + eol if lines and newline else text


def locate(
    text: str,
    quote: str,
    replace: str,
    *,
    within: tuple[int, int] | None = None,
    near: int | None = None,
    whole_lines: bool = True,
) -> Located:
    """Find `quote` in `text`; raise `AnswerParseError` if it is absent or ambiguous.

    `within` (offsets, e.g. the selection) and `near` (an offset, e.g. where a diff hunk said it was)
    break ties between several places.
    """
    if not quote.strip():
        raise AnswerParseError("empty SEARCH text for an existing file")
    exact: list[tuple[int, int]] = []
    at = text.find(quote)
    while at >= 0:
        # A quote of whole lines must start at a line start: "x = 1\n" is not inside "max = 1\n".
        if not whole_lines or at == 0 or text[at - 1] == "\n":
            exact.append((at, at + len(quote)))
        at = text.find(quote, at + 1)
    picked = _pick(exact, quote, within, near)
    if picked is not None:
        return Located(picked[0], picked[1], replace, "exact")

    quote_lines, replace_lines = _trim_shared_blank_ends(_split_lines(quote), _split_lines(replace))
    loose = _line_matches(text, quote_lines, lambda a, b: a.rstrip() == b.rstrip())
    picked = _pick([(s, e) for s, e, _ in loose], quote, within, near)
    if picked is not None:
        newline = next(n for s, e, n in loose if (s, e) == picked)
        return Located(
            picked[0],
            picked[1],
            _whole_lines(replace_lines, newline, text[picked[0] : picked[1]]),
            "trailing-space",
        )

    by_indent = _line_matches(text, quote_lines, lambda a, b: a.strip() == b.strip())
    picked = _pick([(s, e) for s, e, _ in by_indent], quote, within, near)
    if picked is None:
        first = next((line for line in quote_lines if line.strip()), "")
        raise AnswerParseError(f"SEARCH text not found: {first.strip()[:60]!r}")
    real_first = text[picked[0] : picked[1]].splitlines()
    quoted_first = next(line for line in quote_lines if line.strip())
    real_line = next(line for line in real_first if line.strip())
    reindented = _reindent(replace_lines, _indent(quoted_first), _indent(real_line))
    newline = next(n for s, e, n in by_indent if (s, e) == picked)
    return Located(picked[0], picked[1], _whole_lines(reindented, newline, text[picked[0] : picked[1]]), "indent")


def resolve_path(name: str, known: Iterable[str]) -> str | None:
    """The path among `known` that a model meant by `name`: exact, then a unique suffix match
    ("src/app/views.py" for "app/views.py"), then a unique base name."""
    name = name.strip().strip("`'\"").removeprefix("./")
    paths = list(known)
    if name in paths:
        return name
    for candidates in (
        [p for p in paths if p.endswith("/" + name) or name.endswith("/" + p)],
        [p for p in paths if p.rsplit("/", 1)[-1] == name.rsplit("/", 1)[-1]],
    ):
        if len(candidates) == 1:
            return candidates[0]
    return None


def _reindent(lines: list[str], quoted: str, real: str) -> list[str]:
    """Shift `lines` from the quote's indentation to the file's, keeping their relative indentation."""
    out: list[str] = []
    for line in lines:
        if not line.strip():
            out.append(line)
        elif real.startswith(quoted):
            out.append(real[len(quoted) :] + line)
        elif quoted.startswith(real) and line.startswith(quoted[len(real) :]):
            out.append(line[len(quoted) - len(real) :])
        else:
            # Tabs against spaces, or a line indented less than the quote: anchor it at the file's indent.
            out.append(real + line.lstrip())
    return out
