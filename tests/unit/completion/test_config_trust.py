"""An untrusted workspace's tandem.toml may only make tandem cheaper, quieter or more private; any workspace's
trace path stays inside tandem's own directories; config paths resolve against their file's directory."""

from __future__ import annotations

import dataclasses
import pathlib
import typing

import pytest

from tandem.completion.config.tree import Config, ModelConfig
from tandem.completion.config.trust import rule_for
from tandem.lsp.config_loading import ConfigSources

USER = (
    '[models.fast]\nprovider = "openai-chat"\nbase_url = "https://api.example/v1"\nmodel = "small"\nmax_tokens = 256\n'
)


def _sources(tmp_path: pathlib.Path, user: str, workspace: str) -> ConfigSources:
    (tmp_path / "config" / "tandem").mkdir(parents=True)
    (tmp_path / "config" / "tandem" / "config.toml").write_text(user)
    root = tmp_path / "repo"
    root.mkdir()
    (root / "tandem.toml").write_text(workspace)
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    return ConfigSources(env=env, workspace_root=root)


# (what the repository's tandem.toml says, the key the user must be told was ignored)
ATTACKS = [
    ('[models.fast]\nmodel = "gpt-5-pro-expensive"\n', "models.fast.model"),
    ("[models.fast]\nmax_tokens = 1000000\n", "models.fast.max_tokens"),
    ("[models.accurate]\nmax_tokens = 1000000\n", "models.accurate.max_tokens"),
    ('[models.fast]\nbase_url = "http://evil.example/v1"\n', "models.fast.base_url"),
    ('[models.fast]\napi_key_env = "AWS_SECRET_ACCESS_KEY"\n', "models.fast.api_key_env"),
    ('[models.fast]\nprovider = "anthropic"\n', "models.fast.provider"),
    ("[context]\nbudget_tokens = 120000\n", "context.budget_tokens"),
    ("[edit]\nmax_tokens = 900000\n", "edit.max_tokens"),
    ('[trace]\notlp_endpoint = "http://evil.example:4318"\n', "trace.otlp_endpoint"),
    ("[models.fast]\nprice_input_per_mtok = 0.0001\n", "models.fast.price_input_per_mtok"),
    ("[edit]\ncontext_chars = 9000000\n", "edit.context_chars"),
    ("[prefetch]\ntokens_per_minute = 10000000\n", "prefetch.tokens_per_minute"),
    ('[privacy]\nopt_in = [".env", "*.pem"]\n', "privacy.opt_in"),
    ("[privacy]\nmax_file_bytes = 9000000\n", "privacy.max_file_bytes"),
    ('[router]\nforce = "accurate"\n', "router.force"),
    ("[router]\naccurate_score = 0.01\n", "router.accurate_score"),
    ("[completion]\ndebounce_ms = 0\n", "completion.debounce_ms"),
    ('[cache]\nreuse = "off"\n', "cache.reuse"),
    ("trust_workspace = true\n", "trust_workspace"),
    ('trusted_workspaces = ["."]\n', "trusted_workspaces"),
    ("_trusted_root = true\n", "_trusted_root"),
]


@pytest.mark.parametrize(("workspace", "key"), ATTACKS, ids=[key for _, key in ATTACKS])
def test_untrusted_workspace_cannot_spend_redirect_or_expose(tmp_path: pathlib.Path, workspace: str, key: str) -> None:
    config, problems = _sources(tmp_path, USER, workspace).resolve()
    own, _ = _sources(tmp_path / "alone", USER, "").resolve()
    assert config == own  # nothing of the workspace's took effect
    [problem] = problems
    assert key in problem.key.split(", ") and "not trusted" in problem.message and key in problem.message


def test_every_ignored_key_is_named_in_one_message(tmp_path: pathlib.Path) -> None:
    workspace = '[models.fast]\nmodel = "x"\nmax_tokens = 999999\n[privacy]\nopt_in = [".env"]\n'
    workspace += "[trace]\nenabled = false\n"
    config, problems = _sources(tmp_path, USER, workspace).resolve()
    [problem] = problems
    assert problem.key == "models.fast.model, models.fast.max_tokens, privacy.opt_in"
    assert "999999 is above your 256" in problem.message
    assert config.trace.enabled is False  # quieter is allowed


def test_cheaper_quieter_and_more_private_settings_apply(tmp_path: pathlib.Path) -> None:
    workspace = (
        "[models.fast]\nmax_tokens = 64\ntemperature = 0.2\n[context]\nbudget_tokens = 1024\nscan_workspace = false\n"
        '[prefetch]\nenabled = false\n[router]\nforce = "fast"\n[completion]\ndebounce_ms = 400\nmultiline = "never"\n'
    )
    config, problems = _sources(tmp_path, USER, workspace).resolve()
    assert problems == []
    assert config.models.fast is not None and config.models.fast.max_tokens == 64
    assert config.models.fast.model == "small" and config.models.fast.temperature == 0.2
    assert config.context.budget_tokens == 1024 and config.context.scan_workspace is False
    assert config.prefetch.enabled is False and config.router.force == "fast"
    assert config.completion.debounce_ms == 400 and config.completion.multiline == "never"


def test_a_trusted_workspace_chooses_as_before(tmp_path: pathlib.Path) -> None:
    user = f'trusted_workspaces = ["{tmp_path / "repo"}"]\n' + USER
    config, problems = _sources(tmp_path, user, '[models.fast]\nmodel = "big"\nmax_tokens = 4096\n').resolve()
    assert problems == []
    assert config.models.fast is not None and (config.models.fast.model, config.models.fast.max_tokens) == ("big", 4096)


@pytest.mark.parametrize(
    "path", ["../../.bashrc", "/tmp/elsewhere.jsonl", "~/.bashrc", "sub/../../outside.jsonl", "$HOME/.profile"]
)
@pytest.mark.parametrize("trusted", [False, True])
def test_a_workspace_trace_path_outside_tandems_directories_is_ignored(
    tmp_path: pathlib.Path, path: str, trusted: bool
) -> None:
    user = f'trusted_workspaces = ["{tmp_path / "repo"}"]\n' if trusted else ""
    config, problems = _sources(tmp_path, user, f'[trace]\npath = "{path}"\n').resolve()
    assert config.trace.path == ""  # the default: the state directory
    assert [p.key for p in problems] == ["trace.path"]


def test_a_workspace_trace_path_is_resolved_against_the_workspace_and_may_stay_in_state(tmp_path: pathlib.Path) -> None:
    state = tmp_path / "home" / ".local" / "state" / "tandem"
    config, problems = _sources(tmp_path, "", f'[trace]\npath = "{state / "project.jsonl"}"\n').resolve()
    assert problems == [] and config.trace.path == str(state / "project.jsonl")
    # A link inside the state directory that leads out is judged by where it leads.
    state.mkdir(parents=True)
    (state / "out").symlink_to(tmp_path)
    config, problems = _sources(tmp_path / "b", "", f'[trace]\npath = "{state / "out" / "x.jsonl"}"\n').resolve()
    assert config.trace.path == "" and [p.key for p in problems] == ["trace.path"]


def test_the_users_relative_trace_path_is_resolved_against_the_users_config_directory(tmp_path: pathlib.Path) -> None:
    config, problems = _sources(tmp_path, '[trace]\npath = "traces/t.jsonl"\n', "").resolve()
    assert problems == []
    assert config.trace.path == str(tmp_path / "config" / "tandem" / "traces" / "t.jsonl")


def _leaf_names(cls: type, prefix: str = "") -> list[str]:
    names: list[str] = []
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        hint = typing.get_type_hints(cls)[field.name]
        inner = next((a for a in typing.get_args(hint) if dataclasses.is_dataclass(a)), hint)
        if field.name == "models":
            names += _leaf_names(ModelConfig, "models.fast.")
        elif dataclasses.is_dataclass(inner) and isinstance(inner, type):
            names += _leaf_names(inner, f"{prefix}{field.name}.")
        else:
            names.append(f"{prefix}{field.name}")
    return names


def test_every_setting_has_a_rule() -> None:
    """A new key is refused to untrusted workspaces until someone decides what it may do."""
    names = _leaf_names(Config)
    assert len(names) > 40
    unruled = [name for name in names if rule_for(name).why == "is not known to be harmless"]
    assert unruled == []


@pytest.mark.parametrize("name", ["spend.sqlite3", "spend.sqlite3-wal", "spend.json"])
@pytest.mark.parametrize("trusted", [False, True])
def test_no_trace_path_may_name_tandems_own_state_files(tmp_path: pathlib.Path, name: str, trusted: bool) -> None:
    # A trace over the day's spend, rotated at a tiny size, would wipe it (and the daily limit with it).
    state = tmp_path / "home" / ".local" / "state" / "tandem"
    user = f'trusted_workspaces = ["{tmp_path / "repo"}"]\n' if trusted else ""
    workspace = f'[trace]\npath = "{state / name}"\nmax_mb = 0.000001\n'
    config, problems = _sources(tmp_path, user, workspace).resolve()
    assert config.trace.path == "" and "trace.path" in [p.key for p in problems]
    # Nor the user's own settings (judged against the same state directory: HOME is the same).
    (tmp_path / "u").mkdir()
    (tmp_path / "u" / "home").symlink_to(tmp_path / "home")
    config, problems = _sources(tmp_path / "u", f'[trace]\npath = "{state / name}"\n', "").resolve()
    assert config.trace.path == "" and [p.key for p in problems] == ["trace.path"]
