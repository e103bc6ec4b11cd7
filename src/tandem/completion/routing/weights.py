"""The router's fitted model: the weights of its logistic terms (`RouterWeights`), one set per selection
shape (`RouterModel`), and the sets it ships with. `completion.routing.router` builds the features and scores them;
`tandem replay --edits --leave-one-out` fits these numbers (`tandem.eval.router_fit`, `tandem.eval.router_shape`)
and says how they hold up on a history left out of the fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class Shaped(Protocol):
    """What picks a set of weights: whether the selection is one whole definition (`router.RouteFeatures` is
    one; the model does not need the rest of the features, so it does not import the router)."""

    @property
    def whole_definition(self) -> bool: ...


@dataclass(frozen=True, kw_only=True)
class RouterWeights:
    """The weights of the router's logistic model: the log-odds that an edit is hard (needs more than one
    source file, or more than 20 changed lines of source) are `bias` plus each weight times its feature
    (`feature_values`). Fitted by `tandem replay --edits --leave-one-out` (`tandem.eval.router_fit`,
    `tandem.eval.router_shape`), a set per selection shape (`RouterModel`). The defaults are the set for
    ranges, that command's fit on all three of its histories ("shipped, by shape, ranges") with `--limit 300`:
    tandem's own at 5768743 (199 tasks), flask's at 2ac89889 and black's at 8947c48 (their newest 300 tasks
    each), on each commit's changed region (a range a user picked around the lines to change), each task's
    file history, its selected lines' history and the repository's last commits read at its parent commit,
    the ridge penalty chosen by leaving each of the three out in turn. `DEFINITION_WEIGHTS` are the same
    fit on the user's selections that are one whole definition. That fit is in-sample on those histories;
    what says it generalises is each history's figure with the model fitted without it, which the same
    command prints ("shipped, by shape"): ROC AUC 0.85, 0.86 and 0.81 on tandem's, flask's and black's
    with the changed region, 0.82, 0.75 and 0.63 with a user's selection (the function or block enclosing
    the changed code, `eval.user_selection`)."""

    bias: float = -0.6006
    # log(1 + lines expected to change / large_selection_lines)
    selection: float = 0.3904
    # The selection's size by bands (the label is a threshold on changed lines, so the effect is not a
    # straight line): no line selected (a cursor in an existing file), 1-5, 6-20, 21-60 lines; over 60 is the
    # reference.
    selection_none: float = -0.7911
    selection_small: float = -0.9713
    selection_medium: float = -0.091
    selection_large: float = 0.216
    # The selection is not a whole definition (`RouteFeatures.partial_selection`): part of a body, or
    # module-level code.
    selection_partial: float = -0.6921
    new_file: float = 1.2133
    # log(1 + files / span_files), by kind of reach
    callers: float = 0.1715
    mentioned: float = -0.0602
    dependencies: float = 0.2641
    # log(1 + (callers + mentioned) / span_files) when the instruction changes an interface
    interface_reach: float = 0.0881
    wide: float = 0.2884
    small: float = 0.0638
    whole_selection: float = 0.1809
    # clauses after the first
    items: float = 0.1157
    # log(1 + words of the instruction)
    instruction_words: float = 0.1377
    # The instruction's leading verb, by class (`VERB_CLASSES`); any other word is the reference.
    verb_new: float = 0.2987
    verb_fix: float = -0.118
    verb_remove: float = 0.5676
    verb_restructure: float = 0.3352
    verb_maintain: float = 0.4152
    # The file's own history (`history_values`): the share of its last commits that changed another code
    # file, the share that changed more than 20 lines of code (each shrunk towards 1/2 and less 1/2: 0
    # without a history), and log(1 + other code files changed with it / 10).
    history_co_change: float = 0.6762
    history_large: float = 0.7961
    history_files: float = 0.1079
    # The selected lines' own last commits: the same two shares as the file's.
    lines_co_change: float = -0.0768
    lines_large: float = 0.8488
    # The past commits most like the instruction (`SimilarCommits.lift`): how much more often than the
    # repository's commits they were hard.
    similar_hard: float = 1.5855
    # Not fitted: the history terms of the fit's average task, added in their place when there is no
    # history to read (no git, or a repository whose config names commands), so that such a workspace is
    # scored as a typical file, not as one that never changed with another (`fit_weights` derives them).
    history_missing: float = 0.2318
    lines_missing: float = 0.0448
    similar_missing: float = 0.0568


HISTORY_FEATURES = ("history_co_change", "history_large", "history_files")
LINES_FEATURES = ("lines_co_change", "lines_large")
SIMILAR_FEATURES = ("similar_hard",)
FEATURES = (
    "selection", "selection_none", "selection_small", "selection_medium", "selection_large", "selection_partial",
    "new_file",
    "callers", "mentioned", "dependencies", "interface_reach", "wide", "small", "whole_selection", "items",
    "instruction_words", "verb_new", "verb_fix", "verb_remove", "verb_restructure", "verb_maintain",
    *HISTORY_FEATURES, *LINES_FEATURES, *SIMILAR_FEATURES,
)  # fmt: skip
DEFAULT_WEIGHTS = RouterWeights()


# The set for whole definitions (`RouterModel`): the same command's fit on all three histories ("shipped, by
# shape, definitions"), on the user's selections that are one whole definition (57%, 65% and 61% of them).
# It leaves the selection's size nearly alone: in a selected function, it pointed opposite ways in different
# histories. `selection_none`, `selection_partial` and `new_file` are 0: a whole definition is none of them.
DEFINITION_WEIGHTS = RouterWeights(
    bias=-0.5191,
    selection=0.0961,
    selection_none=0.0,
    selection_small=0.2226,
    selection_medium=-0.0641,
    selection_large=-0.0525,
    selection_partial=0.0,
    new_file=0.0,
    callers=0.0436,
    mentioned=0.0324,
    dependencies=-0.0599,
    interface_reach=0.0916,
    wide=0.2754,
    small=-0.0117,
    whole_selection=0.1927,
    items=0.0788,
    instruction_words=0.0823,
    verb_new=0.2231,
    verb_fix=-0.191,
    verb_remove=0.4405,
    verb_restructure=0.5655,
    verb_maintain=-0.0501,
    history_co_change=0.2424,
    history_large=0.4532,
    history_files=0.1998,
    lines_co_change=0.3104,
    lines_large=0.4407,
    similar_hard=1.2683,
    history_missing=0.2909,
    lines_missing=0.0916,
    similar_missing=0.0576,
)


@dataclass(frozen=True, kw_only=True)
class RouterModel:
    """The router's two sets of weights, by the selection's shape: `ranges` for a selection of some lines
    (a user who picks the lines to change: its size says how much changes), `definitions` for a whole
    definition (`RouteFeatures.whole_definition`: a user selecting the function they work in, whose size
    says little). Fitted apart, each on its own kind of selection (`tandem.eval.router_shape`): one set
    fitted on both kinds must trade one against the other, and held out it was worse on each."""

    ranges: RouterWeights = DEFAULT_WEIGHTS
    definitions: RouterWeights = DEFINITION_WEIGHTS

    def weights_for(self, features: Shaped) -> RouterWeights:
        return self.definitions if features.whole_definition else self.ranges


def weights_for(weights: RouterWeights | RouterModel, features: Shaped) -> RouterWeights:
    """The weights that score `features`: one set for every selection, or a model's set for its shape."""
    return weights.weights_for(features) if isinstance(weights, RouterModel) else weights


DEFAULT_MODEL = RouterModel()
