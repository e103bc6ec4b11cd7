"""Every number in the configuration has a declared range (`completion.config.ranges`): non-finite and
out-of-range values are refused with the key named and the default kept, whatever layer they come from."""

from __future__ import annotations

import dataclasses
import math
import pathlib
import typing
from collections.abc import Iterator
from typing import Any

import pytest

from tandem.completion.config.ranges import RANGES, range_for
from tandem.completion.config.tree import Config, Layer, ModelConfig, merge_layers
from tandem.lsp.config_loading import ConfigSources


def _numeric_keys(cls: type, prefix: str = "") -> Iterator[tuple[str, type, Any]]:
    """(dotted name, int or float, default) for every numeric key of the tree (models as `models.fast`)."""
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        annotation = hints[field.name]
        name = f"{prefix}{field.name}"
        if name == "models":
            yield from _numeric_keys(ModelConfig, "models.fast.")
        elif dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
            yield from _numeric_keys(annotation, f"{name}.")
        elif annotation in (int, float):
            default = field.default_factory() if field.default is dataclasses.MISSING else field.default  # type: ignore[misc]
            yield name, annotation, default


NUMERIC = list(_numeric_keys(Config))


def _layer(dotted: str, value: Any) -> dict[str, Any]:
    layer: dict[str, Any] = {}
    table = layer
    *sections, key = dotted.split(".")
    for section in sections:
        table = table.setdefault(section, {})
    table[key] = value
    return layer


def _value(config: Config, dotted: str) -> Any:
    found: Any = config
    for part in dotted.split("."):
        found = getattr(found, part)
    return found


def test_every_numeric_key_has_a_range_that_holds_its_default() -> None:
    assert len(NUMERIC) > 40
    for name, _, default in NUMERIC:
        declared = range_for(name)
        assert declared is not None, f"{name} has no declared range"
        assert declared.admits(default), (name, default)
    named = {name.replace("models.fast.", "models.*.") for name, _, _ in NUMERIC}
    assert set(RANGES) == named  # and no range for a key that does not exist


@pytest.mark.parametrize(("name", "kind", "default"), NUMERIC, ids=[n for n, _, _ in NUMERIC])
def test_non_finite_and_out_of_range_numbers_are_refused_with_the_key_named(
    name: str, kind: type, default: Any
) -> None:
    declared = range_for(name)
    assert declared is not None
    fast = {"provider": "openai-chat", "base_url": "http://127.0.0.1:1/v1", "model": "m"}
    too_big = int(declared.high) + 1 if kind is int else declared.high * 2 + 1
    too_small = declared.low - 1
    bad: list[Any] = [too_big, too_small, 10**400]
    if kind is float:
        bad += [math.inf, -math.inf, math.nan]
    for value in bad:
        layer = _layer(name, value)
        if name.startswith("models."):
            layer["models"]["fast"].update(fast)
        config, problems = merge_layers([Layer("config.toml", layer)])
        assert [p.key for p in problems] == [name], (value, problems)
        assert "using the default" in problems[0].message and len(problems[0].message) < 200
        kept = _value(config, name)
        assert kept == default, (value, kept)


def test_the_edges_of_a_range_are_admitted() -> None:
    config, problems = merge_layers(
        [Layer("u", {"models": {"fast": {"temperature": 0}}, "context": {"suffix_share": 1.0}, "trace": {"keep": 0}})]
    )
    assert problems == []
    assert config.models.fast is not None and config.models.fast.temperature == 0.0
    assert config.context.suffix_share == 1.0 and config.trace.keep == 0


def test_toml_inf_nan_and_a_400_digit_number_from_files(tmp_path: pathlib.Path) -> None:
    # TOML has `inf` and `nan` literals; a workspace's file or the user's may hold them.
    (tmp_path / "config" / "tandem").mkdir(parents=True)
    digits = "9" * 400
    (tmp_path / "config" / "tandem" / "config.toml").write_text(
        f'[models.fast]\nprovider = "openai-chat"\nbase_url = "http://127.0.0.1:1/v1"\nmodel = "m"\n'
        f"temperature = inf\n[context]\nsnippet_share = nan\n[completion]\ndebounce_ms = {digits}\n"
    )
    (tmp_path / "repo").mkdir()
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    config, problems = ConfigSources(env=env, workspace_root=tmp_path / "repo").resolve()
    assert sorted(p.key for p in problems) == [
        "completion.debounce_ms",
        "context.snippet_share",
        "models.fast.temperature",
    ]
    assert config.models.fast is not None and config.models.fast.temperature == 0.0
    assert config.context.snippet_share == Config().context.snippet_share
    assert config.completion.debounce_ms == Config().completion.debounce_ms
    assert all(digits not in str(p) for p in problems)  # named, not echoed


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        # Dotted keys build any depth without recursing; repr, deepcopy and comparison then did.
        ("[completion]\ndebounce_ms" + ".a" * 3000 + " = 1\n", "completion.debounce_ms"),
        ("[models.fast]\nmodel" + ".a" * 3000 + ' = "x"\n', "models.fast.model"),
        # Nested arrays: tomllib itself recursed past Python's limit.
        ("trusted_workspaces = " + "[" * 1200 + "]" * 1200 + "\n", "(file)"),
    ],
)
def test_settings_nested_deep_are_refused_with_the_key_named(tmp_path: pathlib.Path, toml: str, key: str) -> None:
    (tmp_path / "config" / "tandem").mkdir(parents=True)
    (tmp_path / "config" / "tandem" / "config.toml").write_text(toml)
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "tandem.toml").write_text("[context]\nbudget_tokens = 1000\n")
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    config, problems = ConfigSources(env=env, workspace_root=tmp_path / "repo").resolve()
    assert [p.key for p in problems] == [key]
    assert len(str(problems[0])) < 400
    assert config.context.budget_tokens == 1000  # the rest still applies
