"""The config tree: layering, error messages, and the workspace trust rule."""

from __future__ import annotations

import pathlib

import pytest

from tandem.completion.config.tree import Config, Layer, merge_layers
from tandem.lsp.config_loading import ConfigSources

FAST = {"provider": "openai-chat", "base_url": "https://api.example.com/v1", "model": "m", "api_key_env": "K"}


def test_defaults_have_no_model() -> None:
    config, problems = merge_layers([])
    assert config == Config()
    assert config.models.fast is None
    assert problems == []


def test_later_layers_win_key_by_key() -> None:
    config, problems = merge_layers(
        [
            Layer("user", {"models": {"fast": FAST}, "completion": {"debounce_ms": 30}}),
            Layer("initializationOptions", {"models": {"fast": {"max_tokens": 64}}}),
        ]
    )
    assert problems == []
    assert config.models.fast is not None
    assert config.models.fast.base_url == FAST["base_url"]
    assert config.models.fast.max_tokens == 64
    assert config.completion.debounce_ms == 30


def test_bad_values_name_the_key_and_keep_the_default() -> None:
    config, problems = merge_layers(
        [Layer("config.toml", {"models": {"fast": {**FAST, "max_tokens": "lots", "timeout_s": -1}}, "colour": 1})]
    )
    messages = [str(p) for p in problems]
    assert any("models.fast.max_tokens" in m and "whole number" in m and "'lots'" in m for m in messages)
    assert any("models.fast.timeout_s" in m for m in messages)
    assert any("colour" in m and "unknown key" in m for m in messages)
    assert config.models.fast is not None and config.models.fast.max_tokens == 256


def test_a_band_edge_of_zero_is_kept_and_other_times_of_zero_are_not() -> None:
    """`hedge_from = 0.0` (hedge every edit, the README's setting for whoever values wait over money) is a
    score, where 0 means "from the start"; a time of 0 is still refused."""
    config, problems = merge_layers(
        [Layer("config.toml", {"edit": {"hedge_from": 0.0, "accurate_from": 1.01, "deadline_s": 0.0}})]
    )
    assert config.edit.hedge_from == 0.0 and config.edit.accurate_from == 1.01
    assert len(problems) == 1 and "edit.deadline_s" in str(problems[0]) and "above 0" in str(problems[0])
    _, problems = merge_layers([Layer("config.toml", {"edit": {"hedge_from": -0.1}})])
    assert len(problems) == 1 and "edit.hedge_from" in str(problems[0]) and "from 0 to 2" in str(problems[0])


def test_unknown_provider_and_pasted_key_are_refused_without_echoing_the_key() -> None:
    _, problems = merge_layers(
        [Layer("user", {"models": {"fast": {**FAST, "provider": "magic", "api_key_env": "sk-secret123"}}})]
    )
    text = " ".join(str(p) for p in problems)
    assert "models.fast.provider" in text
    assert "models.fast.api_key_env" in text
    assert "sk-secret123" not in text


def test_untrusted_workspace_cannot_redirect_code_or_keys() -> None:
    config, problems = merge_layers(
        [
            Layer("user", {"models": {"fast": FAST}}),
            Layer(
                "repo/tandem.toml",
                {
                    "models": {
                        "fast": {"base_url": "https://evil.example/v1", "api_key_env": "AWS_SECRET", "max_tokens": 9}
                    },
                    "trust_workspace": True,
                },
                from_workspace=True,
            ),
        ]
    )
    assert config.models.fast is not None
    assert config.models.fast.base_url == FAST["base_url"]
    assert config.models.fast.api_key_env == "K"
    assert config.models.fast.max_tokens == 9  # behaviour may be tuned
    assert not config.trust_workspace
    [problem] = problems
    assert "models.fast.base_url" in problem.key and "not trusted" in problem.message


def _sources(tmp_path: pathlib.Path, user: str, workspace: str) -> ConfigSources:
    home = tmp_path / "config"
    (home / "tandem").mkdir(parents=True)
    (home / "tandem" / "config.toml").write_text(user)
    root = tmp_path / "repo"
    root.mkdir()
    (root / "tandem.toml").write_text(workspace)
    return ConfigSources(env={"XDG_CONFIG_HOME": str(home)}, workspace_root=root)


def test_trusted_folders_list_lets_the_workspace_choose(tmp_path: pathlib.Path) -> None:
    workspace = '[models.fast]\nbase_url = "http://127.0.0.1:9/v1"\n'
    user = f'trusted_workspaces = ["{tmp_path / "repo"}"]\n[models.fast]\nbase_url = "https://a.example/v1"\n'
    config, problems = _sources(tmp_path, user, workspace).resolve()
    assert problems == []
    assert config.models.fast is not None and config.models.fast.base_url == "http://127.0.0.1:9/v1"


def test_editor_setting_can_trust_the_workspace(tmp_path: pathlib.Path) -> None:
    """VS Code's settings are the user's own (every tandem setting is machine-scoped), so its workspace
    trust counts."""
    sources = _sources(tmp_path, "", '[models.fast]\nbase_url = "http://127.0.0.1:9/v1"\n')
    sources.client_name = "Visual Studio Code"
    config, problems = sources.resolve()
    assert config.models.fast is None
    assert len(problems) == 1
    sources.set_initialization_options({"tandem": {"trust_workspace": True}})
    config, problems = sources.resolve()
    assert problems == []
    assert config.models.fast is not None and config.models.fast.base_url == "http://127.0.0.1:9/v1"


@pytest.mark.parametrize("client", ["helix", "", "Eglot", "emacs"])
def test_settings_an_editor_may_take_from_the_workspace_are_the_workspaces(tmp_path: pathlib.Path, client: str) -> None:
    """Helix's workspace languages.toml and Emacs's directory-local eglot-workspace-configuration reach the
    server as editor settings: held to the workspace's rules, they neither redirect the key nor grant trust."""
    sources = _sources(tmp_path, '[models.fast]\nbase_url = "https://users.example/v1"\n', "")
    sources.client_name = client
    evil = {"trust_workspace": True, "trusted_workspaces": [str(tmp_path)],
            "models": {"fast": {"base_url": "http://attacker.example/v1", "api_key_env": "HOME"}}}  # fmt: skip
    sources.set_initialization_options(evil)
    sources.set_did_change(evil)
    config, problems = sources.resolve()
    assert config.models.fast is not None and config.models.fast.base_url == "https://users.example/v1"
    assert config.models.fast.api_key_env != "HOME"
    assert problems and all("workspace" in p.message for p in problems)


def test_a_tandem_toml_changed_after_start_up_gains_no_trust(tmp_path: pathlib.Path) -> None:
    """Trusted, the workspace's tandem.toml chooses models; rewritten afterwards (a model's edit, a pull),
    the new file is held to the untrusted rules."""
    sources = _sources(tmp_path, f'trusted_workspaces = ["{tmp_path / "repo"}"]\n', '[models.fast]\nmodel = "m1"\n')
    root = sources.workspace_root
    assert root is not None
    config, problems = sources.resolve()
    assert config.models.fast is not None and config.models.fast.model == "m1" and problems == []
    (root / "tandem.toml").write_text('[models.fast]\nmodel = "m1"\nbase_url = "http://attacker.example/v1"\n')
    config, problems = sources.resolve()
    assert config.models.fast is None or config.models.fast.base_url != "http://attacker.example/v1"
    assert problems


def test_broken_toml_is_reported_and_the_rest_works(tmp_path: pathlib.Path) -> None:
    sources = _sources(tmp_path, "[models.fast\n", "[completion]\ndebounce_ms = 400\n")
    config, problems = sources.resolve()
    assert config.completion.debounce_ms == 400
    [problem] = problems
    assert "not valid TOML" in problem.message and problem.source.endswith("config.toml")
