"""The rooms stay apart, judged from each module's source (every import statement, relative ones resolved,
type-only and function-level ones included) and, for the product/tooling boundary, from `sys.modules` after
importing every module in a fresh interpreter:

- one way down the product: `tandem.lsp -> tandem.completion -> tandem.cache`; `completion` never imports
  `lsp`, and `cache` imports neither;
- only `tandem.lsp` imports pygls or lsprotocol (and, in the tooling, the replay client `tandem.eval.replay`,
  which is an LSP client);
- the product never imports the tooling (`tandem.sim`, `tandem.eval`), and the simulator imports nothing of
  the product, so tests against it check tandem against something tandem did not write;
- inside the model side, the one path to a model (`tandem.completion.providers`) imports no feature: each
  feature builds its own prompt and cleans its own answers, and a backend only speaks its API.

And `pip install .` puts only `tandem` and its dist-info into site-packages (read from the wheel it would
install)."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import pathlib
import pkgutil
import shutil
import subprocess
import sys
import zipfile

import pytest

PRODUCT = ("tandem.lsp", "tandem.completion", "tandem.cache")
TOOLING = ("tandem.sim", "tandem.eval")
LSP_LIBRARIES = ("pygls", "lsprotocol")
# The features of the model side, each a room that asks the providers for text.
FEATURES = (
    "tandem.completion.inline",
    "tandem.completion.next_edit",
    "tandem.completion.edit",
    "tandem.completion.routing",
)
# Who may import what: for each package, the packages it must never import (a module keeps the rules of
# every package it is in).
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "tandem.cache": ("tandem.completion", "tandem.lsp", *TOOLING, *LSP_LIBRARIES),
    "tandem.completion": ("tandem.lsp", *TOOLING, *LSP_LIBRARIES),
    "tandem.lsp": TOOLING,
    "tandem.sim": (*PRODUCT, "tandem.eval", *LSP_LIBRARIES),
    "tandem.eval": LSP_LIBRARIES,
    "tandem.completion.providers": FEATURES,
}
# The one exception to "only tandem.lsp imports the LSP libraries": the replay client is an LSP client.
ALLOWED: dict[str, tuple[str, ...]] = {"tandem.eval.replay": LSP_LIBRARIES}
ROOT = pathlib.Path(__file__).resolve().parents[2]


def _modules(package: str) -> list[str]:
    """`package` and every module under it, found on disk without importing them."""
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations is not None, package
    found = [package]
    for info in pkgutil.walk_packages(list(spec.submodule_search_locations), prefix=f"{package}."):
        found.append(info.name)
    return sorted(found)


def _imports_in(source: str, package: str) -> set[str]:
    """Every module named by an import statement anywhere in `source` (relative imports resolved against
    `package`, the package the module belongs to or is)."""
    named: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            named.add(target)
            named.update(f"{target}.{alias.name}" for alias in node.names)
    return named


def _imports(module: str) -> set[str]:
    """Every module named by an import statement in `module`'s source."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, module
    package = module if spec.submodule_search_locations is not None else module.rpartition(".")[0]
    return _imports_in(pathlib.Path(spec.origin).read_text(), package)


def _within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def violations(module: str, named: set[str]) -> list[str]:
    """The imports in `named` that `module`'s layer forbids."""
    forbidden = tuple(name for package, rule in FORBIDDEN.items() if _within(module, (package,)) for name in rule)
    allowed = next((rule for package, rule in ALLOWED.items() if _within(module, (package,))), ())
    return sorted(name for name in named if _within(name, forbidden) and not _within(name, allowed))


def test_every_module_keeps_to_its_layer() -> None:
    modules = [name for package in FORBIDDEN for name in _modules(package)]
    assert len(modules) > 150  # the walk sees the packages, not an empty folder
    wrong = {module: found for module in modules if (found := violations(module, _imports(module)))}
    assert not wrong


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("tandem.completion.inline.engine", "from tandem.lsp.server import TandemServer\n"),
        ("tandem.completion.inline.engine", "def later():\n    import tandem.lsp.documents\n"),
        ("tandem.completion.inline.engine", "from ...lsp import server\n"),
        ("tandem.completion.gate", "if TYPE_CHECKING:\n    from lsprotocol import types\n"),
        ("tandem.cache.lines", "from tandem.completion.gate import Gate\n"),
        ("tandem.cache.lines", "import pygls.workspace\n"),
        ("tandem.lsp.server", "from tandem.eval.replay.client import ReplayClient\n"),
        ("tandem.sim.app", "from tandem.completion.edit import prompt\n"),
        ("tandem.eval.trace_report", "from lsprotocol import types\n"),
        ("tandem.completion.providers.backends.openai_chat", "from tandem.completion.inline.prompts import HOLE\n"),
        ("tandem.completion.providers.backends.anthropic", "from ...inline import prompts\n"),
        ("tandem.completion.providers.tiers", "def later():\n    import tandem.completion.edit.flow\n"),
        ("tandem.completion.providers.backends.base", "if TYPE_CHECKING:\n    from ...next_edit import types\n"),
    ],
)
def test_the_rule_catches_an_import_against_the_layering(module: str, source: str) -> None:
    package = module.rpartition(".")[0]
    assert violations(module, _imports_in(source, package))


def test_the_rule_lets_each_layer_import_downwards() -> None:
    assert not violations("tandem.lsp.server", {"tandem.completion.gate", "pygls.server", "tandem.cache.lines"})
    assert not violations("tandem.completion.gate", {"tandem.cache.privacy", "tandem.completion.observe.trace"})
    assert not violations("tandem.eval.replay.client", {"lsprotocol.types", "pygls.lsp.client", "tandem.lsp"})
    assert not violations(
        "tandem.completion.providers.tiers",
        {"tandem.completion.config.tree", "tandem.completion.providers.errors", "tandem.cache.tokens"},
    )
    assert not violations("tandem.completion.inline.engine", {"tandem.completion.providers.tiers"})


def _loaded_after_importing(packages: tuple[str, ...]) -> list[str]:
    """The `tandem.*` modules in `sys.modules` of a fresh interpreter after it imports every module of
    `packages`."""
    names = [name for package in packages for name in _modules(package)]
    script = (
        "import importlib, json, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('tandem.'))))\n"
    )
    done = subprocess.run([sys.executable, "-P", "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout)
    assert set(names) <= set(loaded)  # the walk found them, and each imported
    return loaded


def test_the_product_imports_no_tooling_and_the_simulator_nothing_of_the_product() -> None:
    product = [name for package in PRODUCT for name in _modules(package)]
    sim = _modules("tandem.sim")
    assert len(product) > 50 and len(sim) > 10  # the walk sees the packages, not an empty folder
    for module in product:
        wrong = sorted(name for name in _imports(module) if _within(name, TOOLING))
        assert not wrong, f"{module} imports {wrong}"
    for module in sim:
        wrong = sorted(name for name in _imports(module) if _within(name, PRODUCT))
        assert not wrong, f"{module} imports {wrong}"
    # And at run time, through whatever a module imports on its way (plugins, lazy imports at load).
    assert not [m for m in _loaded_after_importing(PRODUCT) if _within(m, TOOLING)]
    assert not [m for m in _loaded_after_importing(("tandem.sim",)) if _within(m, PRODUCT)]


@pytest.mark.e2e
def test_the_wheel_installs_only_tandem_and_its_dist_info(tmp_path: pathlib.Path) -> None:
    # Built as `pip install .` builds it (in an isolated environment with the setuptools that pyproject asks
    # for, from the package index), from a copy, so the checkout gains no build/ or egg-info.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    out = tmp_path / "wheel"
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q"]
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    done = subprocess.run([*command, "-w", str(out), str(source)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    [wheel] = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    top = {name.split("/", 1)[0] for name in names}
    [dist_info] = [t for t in top if t.endswith(".dist-info")]
    assert top == {"tandem", dist_info} and dist_info.startswith("tandem_lsp-")
    # Every package folder of the checkout is in it.
    package = ROOT / "src" / "tandem"
    for init in package.rglob("__init__.py"):
        wanted = f"tandem/{init.relative_to(package).as_posix()}"
        assert wanted in names, f"{wanted} is not in the wheel"


def test_the_checkout_does_not_shadow_the_installed_package() -> None:
    # `python -c "import tandem.lsp"` in the repository root: the root holds no `tandem` of its own.
    done = subprocess.run(
        [sys.executable, "-c", "import tandem.lsp, tandem.completion.inline.engine"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert not (ROOT / "tandem").exists()


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle in `graph` ({module: modules it imports}) as the modules along it, or []."""
    done: set[str] = set()
    path: list[str] = []

    def visit(module: str) -> list[str]:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return []
        path.append(module)
        for imported in sorted(graph.get(module, ())):
            if found := visit(imported):
                return found
        path.pop()
        done.add(module)
        return []

    for module in sorted(graph):
        if found := visit(module):
            return found
    return []


def test_routing_has_no_import_cycle_and_does_not_import_the_edit_path() -> None:
    # The router is an input of the edit path (`edit` imports `routing`), never the other way: a feature of
    # the router is added in `routing/` alone. Type-only imports count: they are a cycle in the reading.
    package = "tandem.completion.routing"
    modules = _modules(package)
    assert len(modules) > 8  # the walk sees the package
    graph = {m: {n for n in _imports(m) if n in modules and n != m} for m in modules}
    assert _cycle(graph) == []
    wrong = {
        m: found
        for m in modules
        if (found := sorted(n for n in _imports(m) if _within(n, ("tandem.completion.edit",))))
    }
    assert wrong == {}


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []
