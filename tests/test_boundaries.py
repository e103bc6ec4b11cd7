"""The rooms stay apart: the product (tandem.lsp, tandem.completion, tandem.cache) never imports the tooling
(tandem.sim, tandem.eval), and the simulator imports nothing of the product, judged twice: from each
module's source (every import statement, relative ones resolved, type-only ones included) and from
`sys.modules` after importing every module in a fresh interpreter. And `pip install .` puts only `tandem`
and its dist-info into site-packages (read from the wheel it would install)."""

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
ROOT = pathlib.Path(__file__).resolve().parent.parent


def _modules(package: str) -> list[str]:
    """`package` and every module under it, found on disk without importing them."""
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations is not None, package
    found = [package]
    for info in pkgutil.walk_packages(list(spec.submodule_search_locations), prefix=f"{package}."):
        found.append(info.name)
    return sorted(found)


def _imports(module: str) -> set[str]:
    """Every module named by an import statement in `module`'s source (relative imports resolved)."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, module
    tree = ast.parse(pathlib.Path(spec.origin).read_text(), spec.origin)
    package = module if spec.submodule_search_locations is not None else module.rpartition(".")[0]
    named: set[str] = set()
    for node in ast.walk(tree):
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


def _within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


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
    for folder in ("tandem", "lsp", "completion", "cache", "sim", "eval"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
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
    # Every package folder of the checkout is in it (a subpackage left out of pyproject's list is not).
    for folder in ("lsp", "completion", "cache", "sim", "eval", "tandem"):
        inside = "" if folder == "tandem" else f"{folder}/"
        for init in (ROOT / folder).rglob("__init__.py"):
            wanted = f"tandem/{inside}{init.relative_to(ROOT / folder).as_posix()}"
            assert wanted in names, f"{wanted} is not in the wheel (add its package to pyproject's list)"
