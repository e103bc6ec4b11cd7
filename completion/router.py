"""The router: fast or accurate, decided from what can be seen before generating, with its reasons.

Inputs (`RouteFeatures`, built by `route_features`):

- the expected size of the change: completion mode (inline / block / edit), the instruction's scope
  ("rename everywhere", "refactor", "all callers" ... or "fix typo"), and the selected lines it is
  expected to change: all of them for an instruction that rewrites the selection, a share otherwise;
- its cross-file span: which other workspace files use the names the selection defines, define or use
  the names (and files) the instruction mentions, or define what the selection uses, counting only names
  specific enough to point somewhere (a `SymbolLookup` answers; `SymbolIndex` is a simple in-memory one
  built from (path, text) pairs);
- the user's change in progress: lines and files of the working diff.

`route` adds one "pressure" term per feature, each scaled by its threshold so that a term of 1.0 alone
is enough for the accurate model; the decision is accurate when the terms add up to 1.0 or more, and
`score` maps that sum onto 0..1 (0.5 at the boundary). Inline completions always stay fast.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from tandem.completion.edits.rebase import user_changes

Tier = Literal["fast", "accurate"]
Mode = Literal["inline", "block", "edit"]

# Phrases that say the change reaches beyond the selection, by how far.
BROAD_SCOPE = (
    "everywhere", "all callers", "all call sites", "all usages", "all uses", "all references", "across",
    "throughout", "codebase", "code base", "project-wide", "repo-wide", "every file", "all files",
    "migrate", "migration", "whole project", "entire project",
)  # fmt: skip
WIDE_SCOPE = (
    "refactor", "rename", "restructure", "reorganize", "reorganise", "split", "extract", "move", "replace",
    "signature", "interface", "api", "every", "all", "implement", "support", "redesign", "rewrite",
    "overhaul", "introduce", "wire", "integrate", "convert", "port",
)  # fmt: skip
# Verbs that transform every selected line, whatever the selection's size.
WHOLE_SELECTION = (
    "type hints", "type annotations", "annotate", "document", "translate", "reformat", "modernize",
    "modernise", "rewrite", "convert", "simplify", "clean up",
)  # fmt: skip
SMALL_SCOPE = (
    "typo", "comment", "comments", "docstring", "spelling", "whitespace", "format", "formatting", "lint",
    "wording", "rephrase", "minor", "tweak", "nit", "log message", "indentation",
)  # fmt: skip
_KEYWORDS = frozenset(
    "and as assert async await break case catch class const continue def default del elif else enum "
    "except export extends false final finally fn for from func function if impl import in interface "
    "is lambda let match mod module new nil none not null or package pass private protected pub public "
    "raise return self static struct super switch this throw true try type typeof use var void while "
    "with yield int str bool float dict list set tuple len print range string object".split()
)
# File stems too generic to mean "that file" when an instruction says them.
_GENERIC_STEMS = frozenset("test tests main init __init__ index setup utils util common base core types "
                           "readme mod lib app conftest".split())  # fmt: skip
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEFINITION = re.compile(
    r"\b(?:def|class|function|func|fn|struct|enum|trait|interface|type|typedef|macro|defun|defmacro|"
    r"procedure|sub)\s+(?:\([^)]*\)\s*)?\*?([A-Za-z_]\w*)"
    r"|^(?:export\s+)?(?:(?:const|let|var)\s+)?([A-Za-z_]\w*)\s*(?::[^=\n]+)?=(?!=)",
    re.MULTILINE,
)
_CLAUSES = re.compile(r",|;|\band\b|\s\+\s|&")


class SymbolLookup(Protocol):
    """The workspace symbol index, as far as the router needs it. Paths are workspace-relative."""

    def files_defining(self, name: str) -> set[str]: ...

    def files_using(self, name: str) -> set[str]: ...

    def files_named(self, stem: str) -> set[str]:
        """Files whose name without extension is `stem` ("views" -> {"app/views.py"})."""
        ...

    def file_count(self) -> int: ...


@dataclass(frozen=True)
class FileSymbols:
    """The names one file defines and the identifiers it mentions."""

    defines: frozenset[str]
    uses: frozenset[str]


def file_symbols(text: str) -> FileSymbols:
    """Definitions (by a language-agnostic pattern) and identifiers of `text`."""
    defines = {a or b for a, b in _DEFINITION.findall(text)} - _KEYWORDS
    uses = {word for word in _IDENT.findall(text) if len(word) >= 3} - _KEYWORDS
    return FileSymbols(frozenset(defines), frozenset(uses))


class SymbolIndex:
    """An in-memory `SymbolLookup` over a fixed set of files; lookups scan the files (cached per name)."""

    def __init__(self, files: Mapping[str, FileSymbols]) -> None:
        self._files = dict(files)
        self._stems: dict[str, set[str]] = {}
        for path in self._files:
            self._stems.setdefault(_stem(path), set()).add(path)
        self._defining: dict[str, set[str]] = {}
        self._using: dict[str, set[str]] = {}

    @classmethod
    def from_texts(cls, files: Iterable[tuple[str, str]], *, max_file_chars: int = 200_000) -> SymbolIndex:
        """Index (path, text) pairs; each text is cut at `max_file_chars` to bound the cost."""
        return cls({path: file_symbols(text[:max_file_chars]) for path, text in files})

    def files_defining(self, name: str) -> set[str]:
        if name not in self._defining:
            self._defining[name] = {p for p, s in self._files.items() if name in s.defines}
        return self._defining[name]

    def files_using(self, name: str) -> set[str]:
        if name not in self._using:
            self._using[name] = {p for p, s in self._files.items() if name in s.uses}
        return self._using[name]

    def files_named(self, stem: str) -> set[str]:
        return self._stems.get(stem, set())

    def file_count(self) -> int:
        return len(self._files)


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].split(".", 1)[0].lower()


@dataclass(frozen=True, kw_only=True)
class RouterThresholds:
    """Where each feature alone is enough for the accurate model, and where the decision falls."""

    # Lines the edit is expected to change that alone send it to the accurate model. An instruction that
    # rewrites its whole selection ("refactor", "add type hints") is expected to change every selected line;
    # a targeted one ("fix the off-by-one") `targeted_share` of them.
    large_selection_lines: int = 30
    # On this repository's history a targeted instruction changed on average 14% of the selected lines
    # (median 7%): reading a long selection is not what makes an edit hard, changing much of it is.
    targeted_share: float = 0.15
    # Other files in the edit's reach that alone send it to the accurate model.
    span_files: float = 2.0
    # Working diff (the user's change in progress) that alone sends it there: files, or lines.
    working_diff_files: int = 3
    working_diff_lines: int = 150
    # A name used by more files than this says nothing about one edit's reach; 0 means the square root of
    # the workspace's file count (at least 3): a name in 14 of 200 files still points somewhere.
    specific_name_files: int = 0
    # Decision boundary on `RouteDecision.score` (0.5 = the terms add up to one threshold).
    accurate_score: float = 0.5


@dataclass(frozen=True, kw_only=True)
class WorkingDiff:
    """The user's change in progress: changed lines, and the files they are in."""

    lines: int = 0
    files: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class RouteFeatures:
    """Everything the router looked at, as plain values (they go into traces)."""

    mode: Mode
    path: str = ""
    selection_lines: int = 0
    selection_chars: int = 0
    # The file is empty: the edit writes it from nothing.
    new_file: bool = False
    instruction: str = ""
    broad_words: tuple[str, ...] = ()
    wide_words: tuple[str, ...] = ()
    small_words: tuple[str, ...] = ()
    # The instruction rewrites the whole selection (wide or broad scope, or a whole-selection verb).
    whole_selection: bool = False
    instruction_items: int = 0
    # Other files: named by the instruction or holding the names it mentions ...
    mentioned_files: tuple[str, ...] = ()
    # ... using what the selection defines (its callers) ...
    caller_files: tuple[str, ...] = ()
    # ... defining what the selection uses.
    dependency_files: tuple[str, ...] = ()
    working_diff: WorkingDiff = field(default_factory=WorkingDiff)

    def expected_lines(self) -> int:
        """Changed lines (removed plus added) if the edit rewrites its whole selection: the upper bound
        the validator's "far larger than predicted" check is relative to."""
        return 2 * self.selection_lines

    def expected_change(self, thresholds: RouterThresholds) -> float:
        """Selected lines the edit is expected to change: all of them when the instruction rewrites the
        selection, `targeted_share` of them otherwise."""
        share = 1.0 if self.whole_selection else thresholds.targeted_share
        return self.selection_lines * share


@dataclass(frozen=True, kw_only=True)
class RouteDecision:
    """The route, with the score, the features and the reasons, in words, most important first."""

    tier: Tier
    score: float
    features: RouteFeatures
    reasons: tuple[str, ...]
    overridden: bool = False

    def summary(self) -> str:
        """One line for a log or a trace: "accurate: reaches 3 other files (...); ... (score 0.97)"."""
        because = "; ".join(self.reasons[:3]) if self.reasons else "no signal"
        return f"{self.tier}: {because} (score {self.score:.2f})"

    def message(self) -> str:
        """The route in one line for the user: "accurate: reaches 3 other files (models.py, views.py, urls.py)"."""
        return f"{self.tier}: " + ("; ".join(self.reasons[:2]) or "no signal")

    def trace_features(self) -> dict[str, Any]:
        """The features as plain counts and words for a trace record (never text of the user's files)."""
        f = self.features
        return {
            "selection_lines": f.selection_lines,
            "selection_chars": f.selection_chars,
            "new_file": f.new_file,
            "broad_words": list(f.broad_words),
            "wide_words": list(f.wide_words),
            "small_words": list(f.small_words),
            "whole_selection": f.whole_selection,
            "instruction_items": f.instruction_items,
            "mentioned_files": len(f.mentioned_files),
            "caller_files": len(f.caller_files),
            "dependency_files": len(f.dependency_files),
            "working_diff_lines": f.working_diff.lines,
            "working_diff_files": len(f.working_diff.files),
            "overridden": self.overridden,
        }


def working_diff_of(files: Mapping[str, tuple[str, str]]) -> WorkingDiff:
    """The user's change in progress from {path: (reference text, current text)}; the reference is the
    text when opened or last saved, or git's HEAD. Lines counted as removed plus added."""
    lines = 0
    changed: list[str] = []
    for path, (reference, current) in files.items():
        shift = 0
        count = 0
        for start, end, delta in user_changes(reference, current):
            removed = reference[start:end]
            added = current[start + shift : end + shift + delta]
            count += removed.count("\n") + added.count("\n") or 1
            shift += delta
        if count:
            lines += count
            changed.append(path)
    return WorkingDiff(lines=lines, files=tuple(sorted(changed)))


def _phrases(text: str, phrases: Iterable[str]) -> tuple[str, ...]:
    return tuple(p for p in phrases if re.search(rf"\b{re.escape(p)}\b", text))


def route_features(
    *,
    mode: Mode,
    path: str = "",
    selection: str = "",
    instruction: str = "",
    new_file: bool = False,
    symbols: SymbolLookup | None = None,
    working_diff: WorkingDiff | None = None,
    thresholds: RouterThresholds | None = None,
) -> RouteFeatures:
    """The features of one request. `selection` is the selected text (block completions: the code
    around the cursor); `path` is the file it is in, which is left out of the cross-file sets."""
    thresholds = thresholds or RouterThresholds()
    lowered = instruction.lower()
    broad = _phrases(lowered, BROAD_SCOPE)
    wide = tuple(w for w in _phrases(lowered, WIDE_SCOPE) if not any(w in b for b in broad))
    small = _phrases(lowered, SMALL_SCOPE)
    items = sum(1 for clause in _CLAUSES.split(instruction) if clause.strip()) if instruction.strip() else 0
    mentioned: set[str] = set()
    callers: set[str] = set()
    dependencies: set[str] = set()
    if symbols is not None and mode != "inline":
        common = thresholds.specific_name_files or max(3.0, math.sqrt(symbols.file_count()))

        def specific(files: set[str]) -> set[str]:
            return files - {path} if len(files) <= common else set()

        own_stem = _stem(path) if path else ""
        for word in set(_IDENT.findall(instruction)):
            stem = word.lower()
            if len(stem) >= 4 and stem not in _GENERIC_STEMS and stem != own_stem:
                # A word naming many files (a package, an area tag) says nothing about this edit's reach.
                mentioned |= specific(symbols.files_named(stem))
            if len(word) >= 3 and word.lower() not in _KEYWORDS and _looks_like_code(word, symbols):
                mentioned |= specific(symbols.files_defining(word) | symbols.files_using(word))
        selected = file_symbols(selection)
        for name in selected.defines:
            callers |= specific(symbols.files_using(name))
        for name in selected.uses - selected.defines:
            defining = symbols.files_defining(name)
            # A name defined in many places (run, get, name) does not point at one file.
            if 0 < len(defining) <= 2:
                dependencies |= specific(defining)
    return RouteFeatures(
        mode=mode,
        path=path,
        selection_lines=selection.count("\n") + (1 if selection and not selection.endswith("\n") else 0),
        selection_chars=len(selection),
        new_file=new_file,
        instruction=instruction,
        broad_words=broad,
        wide_words=wide,
        small_words=small,
        whole_selection=bool(broad or wide or _phrases(lowered, WHOLE_SELECTION)),
        instruction_items=items,
        mentioned_files=tuple(sorted(mentioned)),
        caller_files=tuple(sorted(callers - mentioned)),
        dependency_files=tuple(sorted(dependencies - mentioned - callers)),
        working_diff=working_diff or WorkingDiff(),
    )


def _looks_like_code(word: str, symbols: SymbolLookup) -> bool:
    """An instruction word that names code: snake_case, camelCase, or a name some file defines."""
    if "_" in word.strip("_") or any(c.isupper() for c in word[1:]):
        return True
    return bool(symbols.files_defining(word))


def _names(paths: Iterable[str], limit: int = 3) -> str:
    """File names for a reason: the base name, with its directory where two base names are the same."""
    listed = list(paths)
    bases = [p.rsplit("/", 1)[-1] for p in listed]
    names = [
        "/".join(p.rsplit("/", 2)[-2:]) if bases.count(base) > 1 else base
        for p, base in zip(listed, bases, strict=True)
    ]
    shown = ", ".join(names[:limit])
    return shown + (f", +{len(names) - limit} more" if len(names) > limit else "")


def _terms(f: RouteFeatures, t: RouterThresholds) -> list[tuple[float, str]]:
    """(pressure, reason) per feature; 1.0 alone reaches the accurate model."""
    terms: list[tuple[float, str]] = []
    if f.selection_lines:
        change = f.expected_change(t)
        about = "" if f.whole_selection else f", about {max(1, round(change))} to change"
        terms.append((min(2.0, change / t.large_selection_lines), f"{f.selection_lines}-line selection{about}"))
    if f.new_file:
        terms.append((0.5, "writes a new file"))
    # Callers need changing only if the interface they call changes: without a word that says so they
    # are capped below one threshold, so a body edit of a popular function is not sent on that alone.
    interface = bool(f.broad_words or f.wide_words)
    callers = len(f.caller_files) / t.span_files
    span = (
        len(f.mentioned_files) / t.span_files
        + (callers if interface else min(0.5, 0.5 * callers))
        + min(0.25, 0.25 * len(f.dependency_files) / t.span_files)
    )
    reach = f.mentioned_files + f.caller_files
    if span:
        n = len(reach) + len(f.dependency_files)
        shown = reach or f.dependency_files
        terms.append((min(2.0, span), f"reaches {n} other file{'s' * (n != 1)} ({_names(shown)})"))
    if f.broad_words:
        terms.append((1.0, f"broad instruction ({', '.join(repr(w) for w in f.broad_words[:2])})"))
    elif f.wide_words:
        terms.append((0.35, f"instruction asks to {', '.join(f.wide_words[:2])}"))
    if f.instruction_items > 1:
        terms.append((min(0.45, 0.15 * (f.instruction_items - 1)), f"instruction lists {f.instruction_items} things"))
    if f.small_words and not f.broad_words:
        terms.append((-0.5, f"small-scope instruction ({', '.join(f.small_words[:2])})"))
    files = len(f.working_diff.files)
    if files > 1 or f.working_diff.lines:
        by_files = (files - 1) / max(1, t.working_diff_files - 1)
        by_lines = f.working_diff.lines / t.working_diff_lines
        terms.append((min(2.0, max(by_files, by_lines)), f"your change in progress spans {files} file(s), "
                      f"{f.working_diff.lines} lines"))  # fmt: skip
    return terms


def score_of_pressure(pressure: float) -> float:
    """The score for a sum of pressure terms: 0.5 at 1.0 (one threshold's worth), towards 1 above."""
    return 1.0 / (1.0 + math.exp(-3.0 * (pressure - 1.0)))


def route(features: RouteFeatures, thresholds: RouterThresholds, *, override: Tier | None = None) -> RouteDecision:
    """Decide the tier for `features`. `override` (the user's, per request or per project) wins, but the
    score and reasons are still computed so the trace shows what the router would have done."""
    if features.mode == "inline":
        tier: Tier = override or "fast"
        why = "requested by the user" if override else "inline completion"
        return RouteDecision(tier=tier, score=0.0, features=features, reasons=(why,), overridden=bool(override))
    terms = _terms(features, thresholds)
    pressure = sum(p for p, _ in terms)
    score = score_of_pressure(pressure)
    decided: Tier = "accurate" if score >= thresholds.accurate_score else "fast"
    ranked = sorted(terms, key=lambda pr: -abs(pr[0]))
    reasons: tuple[str, ...]
    if decided == "accurate":
        reasons = tuple(r for p, r in ranked if p > 0.1)
    else:
        reasons = tuple(r for p, r in ranked if p != 0.0) or ("small local edit, no other files involved",)
        if all(p <= 0.1 for p, _ in terms):
            reasons = ("small local edit, no other files involved", *(r for p, r in ranked if p < 0))
    if override and override != decided:
        reasons = (f"requested by the user (router said {decided})", *reasons)
    return RouteDecision(
        tier=override or decided, score=score, features=features, reasons=reasons, overridden=bool(override)
    )
