"""The router: fast or accurate, decided from what can be seen before generating, with its reasons.

Inputs (`RouteFeatures`, built by `route_features` from a request's one `RouteInputs`):

- the expected size of the change: completion mode (inline / block / edit), the instruction's scope
  ("rename everywhere", "refactor", "all callers" ... or "fix typo"; words inside a file path or a dotted
  name do not count), its leading verb's class (adds, fixes, removes, restructures, maintains), and the
  selected lines it is expected to change: all of them for an instruction that rewrites the selection,
  a share otherwise; and the selection's shape (a whole definition, or part of a body or module-level
  code);
- its cross-file span: which other workspace files use the names the selection defines, define or use
  the names (and files) the instruction mentions, or define what the selection uses, counting only names
  specific enough to point somewhere (a `completion.routing.symbol_lookup.SymbolLookup` answers);
- the user's change in progress: lines and files of the working diff;
- the file's own change history (`file_history`, read from the workspace's git before HEAD): the share of
  its last commits that also changed another code file, the share that changed more than 20 lines of
  code, and how many code files changed with it; and the same two shares for the selected lines' own
  last commits;
- the repository's past commits most like the instruction (`completion.routing.similar_commits`): of its last
  commits, the ten whose subject lines read most like the instruction (TF-IDF cosine over their words), and how many
  more of them than of all its commits were hard. The repository's own record of what such a request
  took, where fitted weights can only say what a request like it took in other repositories.

`route` is a logistic model: the log-odds that the edit is hard (it needs more than one source file, or
more than 20 changed lines of source) are a bias plus one weighted term per feature (`feature_values`:
counts on a log scale, sizes relative to their thresholds, the selection's size also by bands). The
weights (`completion.routing.weights`: a set per selection shape) are fitted on real git histories and
judged only on a history left out of the fit (`tandem replay --edits --leave-one-out`); what the
histories cannot teach is set by hand: the working diff (a commit has no change in progress) and a
broad instruction ("everywhere"). `score` is the
model's probability, accurate at `accurate_score` (0.5) or above; as a "pressure" (1 + log-odds / 3)
the boundary is 1.0. Inline completions always stay fast.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from tandem.completion.routing.change_in_progress import WorkingDiff
from tandem.completion.routing.selection_shape import is_partial, is_whole_definition
from tandem.completion.routing.similar_commits import PATH_LIKE, SimilarCommits, similar_commits
from tandem.completion.routing.symbol_lookup import IDENT, KEYWORDS, SymbolLookup, file_stem, file_symbols
from tandem.completion.routing.weights import (
    DEFAULT_MODEL,
    HISTORY_FEATURES,
    LINES_FEATURES,
    RouterModel,
    RouterWeights,
    weights_for,
)

if TYPE_CHECKING:
    from tandem.completion.routing.file_history import FileHistory, PastCommit

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
# File stems too generic to mean "that file" when an instruction says them.
_GENERIC_STEMS = frozenset("test tests main init __init__ index setup utils util common base core types "
                           "readme mod lib app conftest".split())  # fmt: skip
_CLAUSES = re.compile(r",|;|\band\b|\s\+\s|&")
# The instruction's leading verb, by what it asks for: common English commit-message verbs, written down
# from the words' meaning (not read off a history); whether each class says "hard" is fitted.
VERB_CLASSES = {
    "new": "add adds added adding support supports implement introduce allow allows enable create provide "
           "expose new",
    "fix": "fix fixes fixed fixing correct handle prevent avoid resolve repair",
    "remove": "remove removes removed delete drop deprecate",
    "restructure": "refactor rename move split extract replace rewrite simplify convert use switch migrate "
                   "reorganize",
    "maintain": "update bump upgrade pin release prepare",
}  # fmt: skip
_VERB_OF = {word: kind for kind, words in VERB_CLASSES.items() for word in words.split()}
_VERB_SAYS = {
    "new": "adds something new",
    "fix": "fixes something",
    "remove": "removes something",
    "restructure": "restructures code",
    "maintain": "updates or bumps something",
}
# Tags and a short area prefix before the instruction itself ("[docs] add ...", "router: fix ...").
_TAGS = re.compile(r"^\s*(?:\[[^\]]*\]\s*)*")
_AREA = re.compile(r"^[\w./ -]{1,40}:\s+")


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
class RouteFeatures:
    """Everything the router looked at, as plain values (they go into traces)."""

    mode: Mode
    path: str = ""
    selection_lines: int = 0
    selection_chars: int = 0
    # The selection is not a whole definition: its first line (decorators aside) is no def/class/... header
    # (part of a body, or module-level code).
    partial_selection: bool = False
    # The selection is one whole definition, from its header (decorators above it) to the last line of its
    # body (`is_whole_definition`): what a user selects who does not yet know how much will change, so its
    # size says less than a range picked around the lines to change (routed by `RouterModel.definitions`).
    whole_definition: bool = False
    # The file is empty: the edit writes it from nothing.
    new_file: bool = False
    instruction: str = ""
    broad_words: tuple[str, ...] = ()
    wide_words: tuple[str, ...] = ()
    small_words: tuple[str, ...] = ()
    # The instruction rewrites the whole selection (wide or broad scope, or a whole-selection verb).
    whole_selection: bool = False
    instruction_items: int = 0
    # The instruction's leading verb and its class (`VERB_CLASSES`; "" when it is none of them).
    verb: str = ""
    verb_class: str = ""
    # Other files: named by the instruction or holding the names it mentions ...
    mentioned_files: tuple[str, ...] = ()
    # ... using what the selection defines (its callers) ...
    caller_files: tuple[str, ...] = ()
    # ... defining what the selection uses.
    dependency_files: tuple[str, ...] = ()
    working_diff: WorkingDiff = field(default_factory=WorkingDiff)
    # The file's last commits, and the selected lines' (None: no git history to read, or not read).
    history: FileHistory | None = None
    lines_history: FileHistory | None = None
    # The repository's past commits most like the instruction (None: no git history to read).
    similar: SimilarCommits | None = None

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
            "partial_selection": f.partial_selection,
            "whole_definition": f.whole_definition,
            "new_file": f.new_file,
            "broad_words": list(f.broad_words),
            "wide_words": list(f.wide_words),
            "small_words": list(f.small_words),
            "whole_selection": f.whole_selection,
            "instruction_items": f.instruction_items,
            "verb_class": f.verb_class,
            "mentioned_files": len(f.mentioned_files),
            "caller_files": len(f.caller_files),
            "dependency_files": len(f.dependency_files),
            "working_diff_lines": f.working_diff.lines,
            "working_diff_files": len(f.working_diff.files),
            "history_commits": f.history.commits if f.history else None,
            "history_co_changed": f.history.co_changed if f.history else None,
            "history_large": f.history.large if f.history else None,
            "history_co_files": f.history.co_files if f.history else None,
            "lines_history_commits": f.lines_history.commits if f.lines_history else None,
            "lines_history_co_changed": f.lines_history.co_changed if f.lines_history else None,
            "lines_history_large": f.lines_history.large if f.lines_history else None,
            "similar_commits": f.similar.commits if f.similar else None,
            "similar_neighbours": f.similar.neighbours if f.similar else None,
            "similar_neighbours_hard": f.similar.neighbours_hard if f.similar else None,
            "overridden": self.overridden,
        }


def _phrases(text: str, phrases: Iterable[str]) -> tuple[str, ...]:
    return tuple(p for p in phrases if re.search(rf"\b{re.escape(p)}\b", text))


def leading_verb(instruction: str) -> tuple[str, str]:
    """(verb, class) of the instruction's first word after an area prefix, by `VERB_CLASSES`; the class
    is "" for a word of none of them."""
    text = _TAGS.sub("", instruction, count=1).lower()
    words = re.findall(r"[a-z']+", text)
    area = _AREA.match(text)
    if area and (not words or words[0] not in _VERB_OF):  # "fix crash: ..." keeps its verb
        words = re.findall(r"[a-z']+", text[area.end() :])
    verb = words[0] if words else ""
    return verb, _VERB_OF.get(verb, "")


@dataclass(frozen=True, kw_only=True)
class RouteInputs:
    """Everything the router reads of one request, before generating: the one input of `route_features`,
    gathered once per request and passed through as it is. `selection` is the selected text (block
    completions: the code around the cursor); `path` is the file it is in, which is left out of the
    cross-file sets. The git inputs (`working_diff`, `history`, `lines_history`, `past_commits`) are read
    by `routing.inputs` under one deadline; an input not read is None (or empty), as with no git at all,
    and `late` names those not read in time (the trace says the route was decided without them).

    A new input of the router is a field here, read in `routing.inputs` (or by the caller that knows it),
    and used by `route_features`."""

    mode: Mode
    path: str = ""
    selection: str = ""
    instruction: str = ""
    new_file: bool = False
    symbols: SymbolLookup | None = None
    working_diff: WorkingDiff | None = None
    # The edited file's last commits (`file_history.file_history`), and the selected lines'.
    history: FileHistory | None = None
    lines_history: FileHistory | None = None
    # The repository's last commits (`file_history.past_commits`).
    past_commits: Sequence[PastCommit] | None = None
    # How the git inputs were read: those not read in time, those served from the cache, the time waited.
    late: tuple[str, ...] = ()
    cached: tuple[str, ...] = ()
    waited_ms: float = 0.0


def route_features(inputs: RouteInputs, thresholds: RouterThresholds | None = None) -> RouteFeatures:
    """The features of one request, as `thresholds` (the defaults if none) count them."""
    thresholds = thresholds or RouterThresholds()
    mode, path, selection, instruction = inputs.mode, inputs.path, inputs.selection, inputs.instruction
    symbols, past_commits = inputs.symbols, inputs.past_commits
    lowered = PATH_LIKE.sub(" ", instruction).lower()
    verb, verb_class = leading_verb(instruction)
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

        own_stem = file_stem(path) if path else ""
        for word in set(IDENT.findall(instruction)):
            stem = word.lower()
            if len(stem) >= 4 and stem not in _GENERIC_STEMS and stem != own_stem:
                # A word naming many files (a package, an area tag) says nothing about this edit's reach.
                mentioned |= specific(symbols.files_named(stem))
            if len(word) >= 3 and word.lower() not in KEYWORDS and _looks_like_code(word, symbols):
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
        partial_selection=is_partial(selection),
        whole_definition=is_whole_definition(selection),
        new_file=inputs.new_file,
        instruction=instruction,
        broad_words=broad,
        wide_words=wide,
        small_words=small,
        whole_selection=bool(broad or wide or _phrases(lowered, WHOLE_SELECTION)),
        instruction_items=items,
        verb=verb,
        verb_class=verb_class,
        mentioned_files=tuple(sorted(mentioned)),
        caller_files=tuple(sorted(callers - mentioned)),
        dependency_files=tuple(sorted(dependencies - mentioned - callers)),
        working_diff=inputs.working_diff or WorkingDiff(),
        history=inputs.history,
        lines_history=inputs.lines_history,
        similar=similar_commits(instruction, past_commits) if past_commits is not None and mode != "inline" else None,
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


# A history's shares are shrunk towards 1/2 as if it had this many more commits, half of each kind: a file
# with two commits says little.
_HISTORY_PRIOR = 3.0


def history_values(history: FileHistory | None) -> dict[str, float]:
    """The history's inputs (`HISTORY_FEATURES`), each 0 without a history."""
    if history is None:
        return dict.fromkeys(HISTORY_FEATURES, 0.0)
    n = history.commits + _HISTORY_PRIOR

    def shrunk(k: int) -> float:
        return (k + _HISTORY_PRIOR / 2) / n - 0.5

    return {
        "history_co_change": shrunk(history.co_changed),
        "history_large": shrunk(history.large),
        "history_files": math.log1p(history.co_files / 10),
    }


def lines_values(history: FileHistory | None) -> dict[str, float]:
    """The selected lines' history inputs (`LINES_FEATURES`), each 0 without one (or with no commit)."""
    values = history_values(history)
    return {"lines_co_change": values["history_co_change"], "lines_large": values["history_large"]}


def feature_values(f: RouteFeatures, t: RouterThresholds) -> dict[str, float]:
    """The model's inputs, by name (`FEATURES`): counts on a log scale, each size relative to its threshold."""
    lines = f.selection_lines
    reach = len(f.caller_files) + len(f.mentioned_files)
    return {
        "selection": math.log1p(f.expected_change(t) / t.large_selection_lines),
        # A cursor in a file that exists: a new file has nothing to select, and says so by `new_file` alone (a
        # user's selection in a history is empty only in a new file, so the two could not be told apart).
        "selection_none": float(lines == 0 and not f.new_file),
        "selection_small": float(1 <= lines <= 5),
        "selection_medium": float(6 <= lines <= 20),
        "selection_large": float(21 <= lines <= 60),
        "selection_partial": float(f.partial_selection),
        # Not an input of the fit: which of `RouterModel`'s weights score the request.
        "whole_definition": float(f.whole_definition),
        "new_file": float(f.new_file),
        "callers": math.log1p(len(f.caller_files) / t.span_files),
        "mentioned": math.log1p(len(f.mentioned_files) / t.span_files),
        "dependencies": math.log1p(len(f.dependency_files) / t.span_files),
        # Callers need changing when the interface they call changes ("rename", "refactor", "everywhere").
        "interface_reach": math.log1p(reach / t.span_files) if f.broad_words or f.wide_words else 0.0,
        "broad": float(bool(f.broad_words)),
        "wide": float(len(f.wide_words)),
        "small": float(len(f.small_words)),
        "whole_selection": float(f.whole_selection),
        "items": float(max(0, f.instruction_items - 1)),
        "instruction_words": math.log1p(len(f.instruction.split())),
        **{f"verb_{kind}": float(f.verb_class == kind) for kind in VERB_CLASSES},
        **history_values(f.history),
        # Not an input of the fit: says that the history's inputs are missing, not 0 (`history_missing`).
        "history_missing": float(f.history is None),
        **lines_values(f.lines_history),
        "lines_missing": float(f.lines_history is None),
        "similar_hard": f.similar.lift() if f.similar is not None else 0.0,
        "similar_missing": float(f.similar is None),
    }


def _reason(name: str, f: RouteFeatures, t: RouterThresholds) -> str:
    if name == "selection":
        about = "" if f.whole_selection else f", about {max(1, round(f.expected_change(t)))} to change"
        return f"{f.selection_lines}-line selection{about}"
    if name == "reach":
        reach = f.mentioned_files + f.caller_files
        n = len(reach) + len(f.dependency_files)
        return f"reaches {n} other file{'s' * (n != 1)} ({_names(reach or f.dependency_files)})"
    if name == "broad":
        return f"broad instruction ({', '.join(repr(w) for w in f.broad_words[:2])})"
    if name == "wide":
        return f"instruction asks to {', '.join(f.wide_words[:2])}"
    if name == "small":
        return f"small-scope instruction ({', '.join(f.small_words[:2])})"
    if name == "items":
        return f"instruction lists {f.instruction_items} things"
    if name == "instruction_words":
        return f"{len(f.instruction.split())}-word instruction"
    if name == "whole_selection":
        return "instruction rewrites the whole selection"
    if name.startswith("verb_"):
        return f"instruction {_VERB_SAYS[f.verb_class]} ({f.verb!r})"
    if name == "history":
        h = f.history
        assert h is not None
        with_files = f" ({_names(h.partners)}{', ...' * (h.co_files > len(h.partners))})" if h.partners else ""
        return (f"its file changed with other code in {h.co_changed} of its last {h.commits} commits"
                f"{with_files}, more than 20 lines in {h.large}")  # fmt: skip
    if name == "lines_history":
        h = f.lines_history
        assert h is not None
        return (f"the selected lines changed with other code in {h.co_changed} of their last {h.commits} "
                f"commits, more than 20 lines in {h.large}")  # fmt: skip
    if name == "similar_hard":
        c = f.similar
        assert c is not None
        return (f"{c.neighbours_hard} of the {c.neighbours} past commits most like it changed other code or more "
                f"than 20 lines ({c.hard} of all {c.commits})")  # fmt: skip
    return "writes a new file"


# The kinds of reach, reported as one reason: "reaches 3 other files (...)".
_REACH = ("callers", "mentioned", "dependencies", "interface_reach")
# Inputs given as one reason per history, or none.
_NOT_ALONE = frozenset(
    (*HISTORY_FEATURES, *LINES_FEATURES, "history_missing", "lines_missing", "similar_missing", "whole_definition")
)


# Set by hand, not fitted: what the histories cannot teach. The working diff's log-odds at its threshold
# (a commit's diff is the answer, there is no change in progress to fit it on), and a broad instruction's
# ("everywhere", "all callers": commit subjects almost never say it). Each alone reaches the accurate model.
WORKING_DIFF_LOGIT = 3.0
BROAD_LOGIT = 3.0


def hand_logit(values: Mapping[str, float]) -> float:
    """The hand-set terms of the model's log-odds that `feature_values` carries (the broad instruction)."""
    return BROAD_LOGIT * values["broad"]


def _terms(f: RouteFeatures, t: RouterThresholds, w: RouterWeights) -> list[tuple[float, str]]:
    """(log-odds, reason) per feature that is present; their sum plus the bias is the model's log-odds."""
    terms: list[tuple[float, str]] = []
    values = feature_values(f, t)
    for name, value in values.items():
        if name.startswith("selection_") or name in _NOT_ALONE:
            continue  # shown with the selection's own reason, or as one reason for the history
        if value and name not in _REACH:
            weight = BROAD_LOGIT if name == "broad" else getattr(w, name)
            terms.append((weight * value, _reason(name, f, t)))
    if f.selection_lines:
        bands = sum(getattr(w, name) * values[name] for name in values if name.startswith("selection_"))
        terms = [(p + bands, r) if r == _reason("selection", f, t) else (p, r) for p, r in terms]
    elif values["selection_none"]:
        terms.append((w.selection_none, "nothing selected"))
    if any(values[name] for name in _REACH):
        terms.append((sum(getattr(w, name) * values[name] for name in _REACH), _reason("reach", f, t)))
    if f.history is not None and f.history.commits:
        by_history = sum(getattr(w, name) * values[name] for name in HISTORY_FEATURES)
        if by_history:
            terms.append((by_history, _reason("history", f, t)))
    if f.lines_history is not None and f.lines_history.commits:
        by_lines = sum(getattr(w, name) * values[name] for name in LINES_FEATURES)
        if by_lines:
            terms.append((by_lines, _reason("lines_history", f, t)))
    files = len(f.working_diff.files)
    if files > 1 or f.working_diff.lines:
        by_files = (files - 1) / max(1, t.working_diff_files - 1)
        by_lines = f.working_diff.lines / t.working_diff_lines
        terms.append((WORKING_DIFF_LOGIT * min(2.0, max(by_files, by_lines)), f"your change in progress spans "
                      f"{files} file(s), {f.working_diff.lines} lines"))  # fmt: skip
    return terms


# A term moves the log-odds by more than this to be given as a reason.
_SAYS = 0.05


def score_of_pressure(pressure: float) -> float:
    """The score for a pressure, 1 + log-odds / 3: 0.5 at 1.0 (even odds), towards 1 above."""
    return 1.0 / (1.0 + math.exp(-3.0 * (pressure - 1.0)))


def route(
    features: RouteFeatures,
    thresholds: RouterThresholds,
    *,
    override: Tier | None = None,
    weights: RouterWeights | RouterModel | None = None,
) -> RouteDecision:
    """Decide the tier for `features`. `override` (the user's, per request or per project) wins, but the
    score and reasons are still computed so the trace shows what the router would have done. The score is
    the model's probability that the edit is hard; the decision is accurate at `accurate_score` or above.
    `weights`: one set for every selection, or a `RouterModel` (default `DEFAULT_MODEL`), whose set for the
    selection's shape scores it."""
    if features.mode == "inline":
        tier: Tier = override or "fast"
        why = "requested by the user" if override else "inline completion"
        return RouteDecision(tier=tier, score=0.0, features=features, reasons=(why,), overridden=bool(override))
    weights = weights_for(DEFAULT_MODEL if weights is None else weights, features)
    terms = _terms(features, thresholds, weights)
    bias = weights.bias + (weights.history_missing if features.history is None else 0.0)
    bias += weights.lines_missing if features.lines_history is None else 0.0
    bias += weights.similar_missing if features.similar is None else 0.0
    score = score_of_pressure(1.0 + (bias + sum(p for p, _ in terms)) / 3.0)
    decided: Tier = "accurate" if score >= thresholds.accurate_score else "fast"
    ranked = sorted(terms, key=lambda pr: -abs(pr[0]))
    reasons: tuple[str, ...]
    if decided == "accurate":
        reasons = tuple(r for p, r in ranked if p > _SAYS)
    else:
        reasons = tuple(r for p, r in ranked if abs(p) > _SAYS) or ("small local edit, no other files involved",)
        if all(p <= _SAYS for p, _ in terms):
            reasons = ("small local edit, no other files involved", *(r for p, r in ranked if p < 0))
    if override and override != decided:
        reasons = (f"requested by the user (router said {decided})", *reasons)
    return RouteDecision(
        tier=override or decided, score=score, features=features, reasons=reasons, overridden=bool(override)
    )
