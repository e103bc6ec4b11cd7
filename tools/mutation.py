"""Mutation testing of the safety code: would the tests notice if the code that decides what leaves the
machine, what a repository may configure, where an edit writes and whether the user's newer text
survives were wrong?

    python tools/mutation.py                      every module in tools/mutation.toml
    python tools/mutation.py --module tandem.completion.gate
    python tools/mutation.py --wide               survivors are also run against the slower suites
    python tools/mutation.py --list               the mutants, without running anything

The mutants are cosmic-ray's: its core operators (comparison, binary, unary and boolean operator
replacement, numbers, `break`/`continue`, exceptions, decorators, loops that run zero times) applied one
at a time with `cosmic_ray.mutating.mutate_code`. This driver only decides where the mutated module lives
and how tests are run: cosmic-ray's own runner mutates the file in the checkout and starts the test
command anew for each mutant, which here means the editable install's files and 2 s of imports per
mutant. Instead the installed `tandem` package is copied to a scratch folder (whatever the repository's
layout: the files are found through the import system), one module of the copy is mutated, and the tests
run in a child forked from a process that has already imported pytest and the heavy dependencies, with the
copy first on `sys.path` (and on PYTHONPATH for any `tandem serve` a test starts). The checkout is never
written to.

A mutant is killed when the selection fails (or errors, or exceeds its time limit), survives when it
passes. Mutants inside annotations are not generated (the modules use `from __future__ import
annotations`: annotations are never evaluated). Mutants listed as equivalent in the config, with the
reason, are counted apart and not run.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import importlib
import importlib.util
import json
import os
import pathlib
import pkgutil
import shutil
import signal
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator

import cosmic_ray.plugins
from cosmic_ray.ast import ast_nodes, get_ast
from cosmic_ray.mutating import mutate_code

REPO = pathlib.Path(__file__).resolve().parent.parent
CONFIG = REPO / "tools" / "mutation.toml"
# Imported once in the parent so that each forked child starts with them loaded (never `tandem` itself).
# Some are pytest plugins' packages, whose asserts pytest then cannot rewrite: the child says that is fine.
_PRELOAD = (
    "pytest",
    "_pytest.python",
    "hypothesis",
    "lsprotocol.types",
    "pygls.server",
    "trio",
    "httpx",
    "anyio",
    "pathspec",
    "tiktoken",
    "starlette",
    "uvicorn",
)
# cosmic-ray's operators that take arguments (which variable to replace by which) have no default mutants.
_QUIET_REWRITE = ("-W", "ignore::pytest.PytestAssertRewriteWarning")
_NEEDS_ARGUMENTS = ("VariableReplacer", "VariableInserter")


@dataclasses.dataclass(frozen=True)
class Module:
    name: str
    tests: tuple[str, ...]
    wide: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Equivalent:
    module: str
    line: str
    mutant: str
    reason: str


@dataclasses.dataclass
class Mutant:
    module: str
    operator: str
    occurrence: int
    line_no: int
    line: str  # the original line, stripped
    mutated_line: str  # the mutated line, stripped ("" when the mutation removed it)
    code: str
    outcome: str = ""  # killed | survived | equivalent | timeout
    reason: str = ""

    @property
    def label(self) -> str:
        return f"{self.module}:{self.line_no} {self.operator.removeprefix('core/')}#{self.occurrence}"


def load_config(path: pathlib.Path) -> tuple[list[Module], list[Equivalent]]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    modules = [
        Module(name=entry["name"], tests=tuple(entry["tests"]), wide=tuple(entry.get("wide", ())))
        for entry in data["module"]
    ]
    equivalents = [
        Equivalent(module=e["module"], line=e["line"].strip(), mutant=e["mutant"].strip(), reason=e["reason"])
        for e in data.get("equivalent", ())
    ]
    return modules, equivalents


def operators() -> list[tuple[str, object]]:
    out = []
    for name in cosmic_ray.plugins.operator_names():
        if not name.startswith("core/") or name.removeprefix("core/") in _NEEDS_ARGUMENTS:
            continue
        out.append((name, cosmic_ray.plugins.get_operator(name)()))
    return out


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) of every annotation, as (line, column) like parso's positions."""
    spans = []
    for node in ast.walk(ast.parse(source)):
        annotations: list[ast.expr | None] = []
        if isinstance(node, ast.arg):
            annotations.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
        for annotation in annotations:
            if annotation is not None and annotation.end_lineno is not None and annotation.end_col_offset is not None:
                spans.append(
                    ((annotation.lineno, annotation.col_offset), (annotation.end_lineno, annotation.end_col_offset))
                )
    return spans


def mutants_of(module: str, source: str) -> Iterator[Mutant]:
    spans = annotation_spans(source)
    tree = get_ast(source)
    nodes = list(ast_nodes(tree))
    original_lines = source.splitlines()
    for name, operator in operators():
        positions = [start for node in nodes for start, _ in operator.mutation_positions(node)]  # type: ignore[attr-defined]
        for occurrence, start in enumerate(positions):
            if any(lo <= start < hi for lo, hi in spans):
                continue
            code = mutate_code(source, operator, occurrence)
            if code is None or code == source:
                continue
            line_no = start[0]
            mutated_lines = code.splitlines()
            mutated = mutated_lines[line_no - 1].strip() if line_no - 1 < len(mutated_lines) else ""
            yield Mutant(
                module=module,
                operator=name,
                occurrence=occurrence,
                line_no=line_no,
                line=original_lines[line_no - 1].strip(),
                mutated_line=mutated,
                code=code,
            )


def _mapped_packages() -> dict[str, str]:
    """{package: folder} from setuptools' editable finder, which maps packages to folders that a walk of
    the top package's folder cannot see (package-dir); {} for a regular install or a plain src layout."""
    mapped: dict[str, str] = {}
    for finder in sys.meta_path:
        module = sys.modules.get(getattr(finder, "__module__", ""))
        mapping = getattr(module, "MAPPING", None)
        if isinstance(mapping, dict):
            mapped.update({k: v for k, v in mapping.items() if k == "tandem" or k.startswith("tandem.")})
    return mapped


def stage_package(stage: pathlib.Path) -> dict[str, pathlib.Path]:
    """Copy the installed `tandem` package's Python files into `stage` (as the import system sees the
    package, whatever folders the repository keeps them in); {module name: its file in the copy}."""
    files: dict[str, pathlib.Path] = {}
    spec = importlib.util.find_spec("tandem")
    assert spec is not None and spec.submodule_search_locations is not None
    packages: dict[str, list[str]] = {"tandem": list(spec.submodule_search_locations)}
    packages.update({name: [folder] for name, folder in _mapped_packages().items()})
    pending = list(packages)
    while pending:
        package = pending.pop()
        for info in pkgutil.iter_modules(packages[package]):
            name = f"{package}.{info.name}"
            if info.ispkg and name not in packages:
                packages[name] = [os.path.join(str(getattr(info.module_finder, "path", "")), info.name)]
                pending.append(name)
    for package, locations in packages.items():
        target = stage.joinpath(*package.split("."))
        target.mkdir(parents=True, exist_ok=True)
        for location in locations:
            for source in pathlib.Path(location).glob("*.py"):
                shutil.copy2(source, target / source.name)
                stem = source.stem
                files[package if stem == "__init__" else f"{package}.{stem}"] = target / source.name
    return files


def run_tests(stage: pathlib.Path, tests: tuple[str, ...], timeout_s: float, log: pathlib.Path) -> str:
    """Run `tests` in a forked child against the staged package: "passed", "failed" or "timeout"."""
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 3
        try:
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.setpgid(0, 0)
            sys.dont_write_bytecode = True
            sys.path.insert(0, str(stage))
            os.chdir(REPO)
            import pytest

            code = int(pytest.main(["-x", "-q", "-p", "no:cacheprovider", "-o", "timeout=0", *_QUIET_REWRITE, *tests]))
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    deadline = time.monotonic() + timeout_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            if code == 5 or code == 4:
                raise SystemExit(f"pytest found no tests or was misused ({code}) for {tests}: see {log}")
            return "passed" if code == 0 else "failed"
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout"
        time.sleep(0.02)


def judge(
    module: Module,
    file: pathlib.Path,
    stage: pathlib.Path,
    equivalents: list[Equivalent],
    used: set[int],
    *,
    wide: bool,
    logs: pathlib.Path,
    killed_before: set[tuple[str, str, str, str]],
) -> list[Mutant]:
    original = file.read_text(encoding="utf-8")
    pycache = file.parent / "__pycache__"
    for stale in pycache.glob(f"{file.stem}.*.pyc"):
        stale.unlink()
    started = time.monotonic()
    if run_tests(stage, module.tests, 600, logs / "baseline.log") != "passed":
        tail = (logs / "baseline.log").read_text(errors="replace")[-3000:]
        raise SystemExit(f"{module.name}: the tests fail without any mutation:\n{tail}")
    timeout_s = max(10.0, 4 * (time.monotonic() - started))
    wide_timeout_s = 600.0
    if wide and module.wide:
        started = time.monotonic()
        if run_tests(stage, module.wide, 900, logs / "baseline-wide.log") != "passed":
            tail = (logs / "baseline-wide.log").read_text(errors="replace")[-3000:]
            raise SystemExit(f"{module.name}: the wide tests fail without any mutation:\n{tail}")
        wide_timeout_s = max(30.0, 4 * (time.monotonic() - started))
    results = list(mutants_of(module.name, original))
    try:
        for number, mutant in enumerate(results, 1):
            match = next(
                (
                    i
                    for i, e in enumerate(equivalents)
                    if e.module == module.name and e.line == mutant.line and e.mutant == mutant.mutated_line
                ),
                None,
            )
            if match is not None:
                used.add(match)
                mutant.outcome, mutant.reason = "equivalent", equivalents[match].reason
                continue
            if (mutant.module, mutant.operator, mutant.line, mutant.mutated_line) in killed_before:
                mutant.outcome, mutant.reason = "killed", "killed in the earlier run"
                continue
            file.write_text(mutant.code, encoding="utf-8")
            outcome = run_tests(stage, module.tests, timeout_s, logs / "mutant.log")
            if outcome == "passed" and wide and module.wide:
                outcome = run_tests(stage, module.wide, wide_timeout_s, logs / "mutant-wide.log")
            mutant.outcome = {"passed": "survived", "failed": "killed"}.get(outcome, outcome)
            print(f"  [{number}/{len(results)}] {mutant.outcome:9} {mutant.label}", file=sys.stderr, flush=True)
    finally:
        file.write_text(original, encoding="utf-8")
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--module", action="append", help="only this module (import name); repeatable")
    parser.add_argument("--wide", action="store_true", help="run survivors against the module's wide suites too")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument("--json", type=pathlib.Path, help="also write every mutant's outcome here")
    parser.add_argument(
        "--since",
        type=pathlib.Path,
        help="a --json file of an earlier run: a mutant it killed (same module, operator, line and change) is "
        "counted killed without running, which holds while tests were only added",
    )
    parser.add_argument("--config", type=pathlib.Path, default=CONFIG)
    args = parser.parse_args()

    modules, equivalents = load_config(args.config)
    killed_before: set[tuple[str, str, str, str]] = set()
    if args.since:
        killed_before = {
            (m["module"], m["operator"], m["line"], m["mutated_line"])
            for m in json.loads(args.since.read_text())
            if m["outcome"] in ("killed", "timeout")
        }
    if args.module:
        unknown = set(args.module) - {m.name for m in modules}
        if unknown:
            parser.error(f"not in {args.config}: {', '.join(sorted(unknown))}")
        modules = [m for m in modules if m.name in args.module]
    for module in modules:
        for test in (*module.tests, *module.wide):
            if not (REPO / test.split("::")[0]).exists():
                parser.error(f"{module.name}: test selection {test} does not exist (update {args.config})")

    for name in _PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)

    with tempfile.TemporaryDirectory(prefix="tandem-mutation-") as scratch:
        stage = pathlib.Path(scratch) / "stage"
        logs = pathlib.Path(scratch) / "logs"
        logs.mkdir()
        files = stage_package(stage)
        # Finding the files imported the packages' __init__ modules: the children must import the copy.
        for name in [name for name in sys.modules if name == "tandem" or name.startswith("tandem.")]:
            del sys.modules[name]
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(stage), os.environ.get("PYTHONPATH", "")]))
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        import compileall

        compileall.compile_dir(stage, quiet=1)
        all_results: list[Mutant] = []
        used: set[int] = set()
        for module in modules:
            if module.name not in files:
                raise SystemExit(f"{module.name} is not a module of the installed package (update {args.config})")
            file = files[module.name]
            if args.list:
                for mutant in mutants_of(module.name, file.read_text(encoding="utf-8")):
                    print(f"{mutant.label}: {mutant.line!r} -> {mutant.mutated_line!r}")
                continue
            print(f"{module.name}: {module.tests}", file=sys.stderr, flush=True)
            all_results += judge(
                module, file, stage, equivalents, used, wide=args.wide, logs=logs, killed_before=killed_before
            )
    if args.list:
        return 0

    print()
    print(f"{'module':40} {'mutants':>8} {'killed':>7} {'survived':>9} {'equivalent':>11} {'score':>7}")
    for module in modules:
        results = [m for m in all_results if m.module == module.name]
        killed = sum(m.outcome in ("killed", "timeout") for m in results)
        survived = sum(m.outcome == "survived" for m in results)
        equivalent = sum(m.outcome == "equivalent" for m in results)
        score = f"{100 * killed / (killed + survived):.1f}%" if killed + survived else "-"
        print(f"{module.name:40} {len(results):8} {killed:7} {survived:9} {equivalent:11} {score:>7}")
    carried = sum(m.reason == "killed in the earlier run" for m in all_results)
    if carried:
        print(f"({carried} of the killed were killed in {args.since} and not run again)")
    survivors = [m for m in all_results if m.outcome == "survived"]
    if survivors:
        print("\nsurvived:")
        for mutant in survivors:
            print(f"  {mutant.label}: {mutant.line!r} -> {mutant.mutated_line!r}")
    stale = [e for i, e in enumerate(equivalents) if i not in used and e.module in {m.name for m in modules}]
    if stale:
        print("\nequivalent entries that match no mutant (stale; remove or update them):")
        for entry in stale:
            print(f"  {entry.module}: {entry.line!r} -> {entry.mutant!r}")
    if args.json:
        args.json.write_text(
            json.dumps([{k: v for k, v in dataclasses.asdict(m).items() if k != "code"} for m in all_results], indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
