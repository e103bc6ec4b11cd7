"""tandem's credential check against detect-secrets' own examples: the lines its plugin tests say a detector
must flag, and those it must not.

detect-secrets ships no examples in its package, so they are read from a checkout of its public repository
(its `tests/plugins/*_test.py`), never copied here. Each `pytest.mark.parametrize` whose names hold a line
(or payload) and `should_flag` is read with `ast`; an example is taken when it is a literal, or an expression
of literals, the module's top-level string constants, `+`, `*` and `str.format` (anything else is counted as
skipped, never run). Each line goes through `tandem.cache.secrets.credential_in`, the check every document and
keystroke passes.

    python bench/bench_secret_examples.py PATH/TO/detect-secrets/tests/plugins

Prints, per test module: examples that should be flagged and how many tandem refuses; examples that should
not and how many tandem flags (false alarms); and the totals, with the modules of detectors tandem leaves
out on purpose (`cache.secrets.EXCLUDED_DETECTORS`) apart.
"""

from __future__ import annotations

import argparse
import ast
import pathlib
import sys
from typing import Any

from tandem.cache.secrets import credential_in

# Test modules of the detectors tandem leaves out (they flag ordinary code; see cache/secrets.py).
LEFT_OUT = {"basic_auth_test", "ip_public_test", "jwt_test", "keyword_test", "high_entropy_strings_test",
            "ibm_cloud_iam_test", "ibm_cos_hmac_test"}  # fmt: skip


class Unsupported(Exception):
    pass


def _value(node: ast.AST, names: dict[str, str]) -> Any:
    """The value of an expression of literals, known string names, `+`, `*` and `str.format`."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
        left, right = _value(node.left, names), _value(node.right, names)
        if isinstance(node.op, ast.Add) and isinstance(left, str) and isinstance(right, str):
            return left + right
        if isinstance(node.op, ast.Mult) and isinstance(left, str) and isinstance(right, int):
            return left * right
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and not node.keywords
    ):
        template = _value(node.func.value, names)
        arguments = [_value(argument, names) for argument in node.args]
        if isinstance(template, str) and all(isinstance(a, str | int) for a in arguments):
            return template.format(*arguments)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        text = _value(node.value, names)
        lower = _value(node.slice.lower, names) if node.slice.lower is not None else None
        upper = _value(node.slice.upper, names) if node.slice.upper is not None else None
        if isinstance(text, str):
            return text[lower:upper]
    raise Unsupported(ast.dump(node)[:60])


def examples(module: pathlib.Path) -> tuple[list[tuple[str, bool]], int]:
    """(line, should_flag) pairs of the module's parametrized tests, and how many were skipped."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    names: dict[str, str] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            try:
                value = _value(statement.value, names)
            except Unsupported:
                continue
            if isinstance(target, ast.Name) and isinstance(value, str):
                names[target.id] = value
    found: list[tuple[str, bool]] = []
    skipped = 0
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "parametrize" or len(node.args) < 2:
            continue
        try:
            argnames = _value(node.args[0], names)
        except Unsupported:
            continue
        fields = [name.strip() for name in argnames.split(",")] if isinstance(argnames, str) else []
        if "should_flag" not in fields or not isinstance(node.args[1], ast.List | ast.Tuple):
            continue
        text_at = next((i for i, name in enumerate(fields) if name in ("line", "payload", "text")), None)
        if text_at is None:
            continue
        flag_at = fields.index("should_flag")
        for case in node.args[1].elts:
            if not isinstance(case, ast.Tuple) or len(case.elts) != len(fields):
                skipped += 1
                continue
            try:
                line, flag = _value(case.elts[text_at], names), _value(case.elts[flag_at], names)
            except Unsupported:
                skipped += 1
                continue
            if isinstance(line, str) and isinstance(flag, bool):
                found.append((line, flag))
            else:
                skipped += 1
    return found, skipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("plugins", type=pathlib.Path, help="detect-secrets' tests/plugins directory")
    args = parser.parse_args(argv)
    totals = {True: [0, 0, 0, 0], False: [0, 0, 0, 0]}  # left out? -> [should, caught, should not, alarms]
    print(f"{'test module':32} {'should flag':>11} {'refused':>8} {'should not':>10} {'flagged':>8} skipped")
    for module in sorted(args.plugins.glob("*_test.py")):
        found, skipped = examples(module)
        if not found and not skipped:
            continue
        should = [line for line, flag in found if flag]
        should_not = [line for line, flag in found if not flag]
        caught = sum(bool(credential_in(line)) for line in should)
        alarms = sum(bool(credential_in(line)) for line in should_not)
        left_out = module.stem in LEFT_OUT
        for at, count in enumerate((len(should), caught, len(should_not), alarms)):
            totals[left_out][at] += count
        mark = " (left out)" if left_out else ""
        print(f"{module.stem + mark:32} {len(should):>11} {caught:>8} {len(should_not):>10} {alarms:>8} {skipped}")
    for left_out, (flag, refused, other, flagged) in totals.items():
        what = "detectors tandem leaves out" if left_out else "detectors tandem uses"
        print(f"{what}: {refused} of {flag} should-flag examples refused; {flagged} of {other} others flagged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
