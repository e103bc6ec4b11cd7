"""The role of each file in a change, and which files of a change count as code.

    source      code (by extension), outside tests, docs, configuration and generated files
    test        test code: a `tests`/`test`/`testing` directory, `test_*`, `*_test.*`, `*.test.*`, `*.spec.*`,
                `conftest.py`; and the files under it (test data written as code)
    doc         code under a `docs`/`doc` directory (examples, Sphinx's conf.py)
    config      code that configures the build or the tooling: setup.py, noxfile.py, CI scripts (.github/ ...)
    generated   code written by a tool: protobuf output, minified or vendored code
    other       everything else: changelogs, prose, lock files, data, configuration formats (toml, yaml, json)

The router reads a file's past commits by these roles (`file_history`), and the evaluation labels an edit
"hard" by them (`tandem.eval.code_label`): one notion of source for both.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal, Protocol

SOURCE_SUFFIXES = frozenset(
    "py pyi js jsx ts tsx mjs cjs go rs c h cc cpp cxx hpp hh java kt kts scala rb php cs swift m mm lua sh "
    "bash zsh pl pm r jl ex exs erl hrl hs ml mli clj cljs el lisp scm vim sql dart zig nim vue svelte".split()
)

Role = Literal["source", "test", "doc", "config", "generated", "other"]

_TEST_DIRS = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs", "testdata"})
_TEST_NAME = re.compile(r"^(test_.*|.*_test\.[^.]+|.*\.(test|spec)\.[^.]+|conftest\.py)$")
_DOC_DIRS = frozenset({"doc", "docs", "documentation"})
_CONFIG_DIRS = frozenset({".github", ".circleci", ".gitlab", ".ci", ".buildkite", ".devcontainer"})
_CONFIG_NAMES = frozenset(
    "setup.py noxfile.py fabfile.py dodo.py conanfile.py tasks.py webpack.config.js rollup.config.js "
    "vite.config.ts vite.config.js jest.config.js babel.config.js eslint.config.js .eslintrc.js".split()
)
_GENERATED = re.compile(
    r"(_pb2(_grpc)?\.pyi?$|\.pb\.go$|\.min\.js$|\.generated\.|_generated\.|(^|/)(vendor|vendored|third_party|"
    r"node_modules|dist|build)/)"
)


def is_source(path: str) -> bool:
    """Code, by the file's extension."""
    return "." in path.rsplit("/", 1)[-1] and path.rsplit(".", 1)[-1].lower() in SOURCE_SUFFIXES


def file_role(path: str) -> Role:
    """The role of `path` (workspace-relative, `/`-separated) in a change."""
    if not is_source(path):
        return "other"
    parts = path.split("/")
    dirs, name = [p.lower() for p in parts[:-1]], parts[-1].lower()
    if _GENERATED.search(path):
        return "generated"
    if any(d in _CONFIG_DIRS for d in dirs) or (name in _CONFIG_NAMES and len(dirs) <= 1):
        return "config"
    if any(d in _DOC_DIRS for d in dirs):
        return "doc"
    if any(d in _TEST_DIRS for d in dirs) or _TEST_NAME.match(name):
        return "test"
    return "source"


class Changed(Protocol):
    """A file of a commit's diff, as `history.FileChange` is."""

    @property
    def path(self) -> str: ...

    @property
    def added(self) -> int: ...

    @property
    def deleted(self) -> int: ...

    @property
    def binary(self) -> bool: ...


def code_files(changes: Iterable[Changed], *, count_tests: bool = False) -> list[Changed]:
    """The changes that count as code: source files (and tests, when `count_tests` or when the commit
    changes no source file but tests)."""
    listed = [c for c in changes if not c.binary]
    roles = [file_role(c.path) for c in listed]
    wanted = {"source", "test"} if count_tests or "source" not in roles else {"source"}
    return [c for c, role in zip(listed, roles, strict=True) if role in wanted]
