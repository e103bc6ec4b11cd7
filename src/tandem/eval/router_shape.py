"""The router by the selection's shape (`completion.routing.router.RouterModel`), fitted and judged held out.

A selection of some lines and a whole definition say different things. A user who picks the lines to change
shows how much will change; a user who selects the function they work in does not know yet, and that
function's size pointed opposite ways in different histories (larger ones were easier in tandem's own, harder
in flask's and black's). One set of weights fitted on both must trade the one against the other. So the model
has two:

    ranges        fitted on the commits' changed regions (the lines that changed: what a precise selection is)
    definitions   fitted on the user's selections that are one whole definition (`RouteFeatures.whole_definition`)

and a request is scored by the set for its selection's shape, whatever kind of selection it came from: a
user's selection that is module-level code (a paragraph) is a range; a changed region that is exactly one
definition is a definition. Each set's ridge penalty is chosen inside the fold, from the training histories
alone, as `router_fit.choose_l2` does for one set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tandem.completion.routing.weights import RouterModel
from tandem.eval.router_eval import roc_auc
from tandem.eval.router_fit import Sample, choose_l2, fit_weights, logit

# The selection kind each set is fitted on; the definitions' set only on the tasks whose selection is one.
RANGES_FIT = "changed"
DEFINITIONS_FIT = "user"


def is_definition(inputs: Mapping[str, float]) -> bool:
    return bool(inputs.get("whole_definition", 0.0))


def model_logit(model: RouterModel, inputs: Mapping[str, float]) -> float:
    """The log-odds of the set for the selection's shape."""
    return logit(model.definitions if is_definition(inputs) else model.ranges, inputs)


def fit_model(histories: Mapping[str, Sequence[Sample]]) -> RouterModel:
    """Both sets fitted on every task of `histories`, each penalty chosen by leaving each out in turn. With
    no whole-definition selection to fit on, the set for ranges serves both."""
    definitions = {
        name: picked
        for name, rows in histories.items()
        if (picked := [s for s in rows if is_definition(s.inputs[DEFINITIONS_FIT])])
    }
    ranges = fit_weights(
        [(s.inputs[RANGES_FIT], s.hard) for rows in histories.values() for s in rows],
        l2=choose_l2(histories, selection=RANGES_FIT),
    )
    if not definitions:
        return RouterModel(ranges=ranges, definitions=ranges)
    whole = fit_weights(
        [(s.inputs[DEFINITIONS_FIT], s.hard) for rows in definitions.values() for s in rows],
        l2=choose_l2(definitions, selection=DEFINITIONS_FIT),
    )
    return RouterModel(ranges=ranges, definitions=whole)


def shape_folds(histories: Mapping[str, Sequence[Sample]]) -> dict[str, RouterModel]:
    """{history: the model fitted on all the others} (`fit_model`)."""
    return {held: fit_model({n: rows for n, rows in histories.items() if n != held}) for held in histories}


def judged(
    histories: Mapping[str, Sequence[Sample]], folds: Mapping[str, RouterModel], kinds: Sequence[str]
) -> dict[str, dict[str, float | None]]:
    """Each history's ROC AUC, per selection kind, of the model fitted without it."""
    return {
        name: {
            kind: roc_auc([model_logit(folds[name], s.inputs[kind]) for s in rows], [s.hard for s in rows])
            for kind in kinds
            if all(kind in s.inputs for s in rows)
        }
        for name, rows in histories.items()
        if name in folds
    }


def definition_share(histories: Mapping[str, Sequence[Sample]], kind: str) -> dict[str, float]:
    """Per history, the share of its tasks whose `kind` selection is one whole definition."""
    return {
        name: sum(is_definition(s.inputs[kind]) for s in rows) / len(rows) if rows else 0.0
        for name, rows in histories.items()
    }
