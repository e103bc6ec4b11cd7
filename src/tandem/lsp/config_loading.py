"""Where configuration comes from: files, initializationOptions, workspace/didChangeConfiguration.

The layers are read here (the only place that touches config files) and merged by
`completion.config.tree.merge_layers`, which also enforces the workspace trust rules: each layer carries its
file's directory (relative paths in it start there), and tandem's state and cache directories bound where
a workspace's paths may point.
"""

from __future__ import annotations

import os
import pathlib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tandem.completion.config.tree import Config, Layer, Problem, mark_trusted_root, merge_layers
from tandem.completion.config.trust import editor_channels
from tandem.completion.machine.containment import Folders
from tandem.completion.machine.files import read_file


def user_config_path(env: Mapping[str, str]) -> pathlib.Path:
    base = env.get("XDG_CONFIG_HOME") or str(pathlib.Path(env.get("HOME", "~")).expanduser() / ".config")
    return pathlib.Path(base) / "tandem" / "config.toml"


def private_dirs(env: Mapping[str, str]) -> tuple[str, ...]:
    """tandem's own state and cache directories: the only places a workspace's config may have written."""
    home = pathlib.Path(env.get("HOME", "~")).expanduser()
    state = env.get("XDG_STATE_HOME") or str(home / ".local" / "state")
    cache = env.get("XDG_CACHE_HOME") or str(home / ".cache")
    return str(pathlib.Path(state) / "tandem"), str(pathlib.Path(cache) / "tandem")


# A config file larger than this is not read.
MAX_CONFIG_BYTES = 1_000_000


def _read_toml(path: pathlib.Path, problems: list[Problem], *, within: Folders | None = None) -> dict[str, Any]:
    # Through the one reader: a config file that is a pipe or a link to a device is refused, not waited on;
    # the workspace's own must be inside the workspace (not a link to the user's other files).
    read = read_file(path, max_bytes=MAX_CONFIG_BYTES, within=within)
    if read.missing:
        return {}
    text = read.text()
    if text is None:
        why = read.refusal or "not UTF-8 text"
        problems.append(Problem(str(path), "(file)", f"cannot be read ({why}); the file is ignored"))
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        problems.append(Problem(str(path), "(file)", f"not valid TOML ({error}); the file is ignored"))
    except RecursionError:
        # tomllib recurses once per nested array or inline table: ~300 levels reach Python's limit.
        problems.append(Problem(str(path), "(file)", "values nested too deeply to read; the file is ignored"))
    return {}


def _editor_settings(values: Any) -> dict[str, Any]:
    """Settings from an editor: VS Code nests them under "tandem"; others send them flat."""
    if not isinstance(values, Mapping):
        return {}
    inner = values.get("tandem")
    return dict(inner) if isinstance(inner, Mapping) else dict(values)


@dataclass
class ConfigSources:
    """The raw layers as last seen; `resolve()` merges them into a Config."""

    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    workspace_root: pathlib.Path | None = None
    # Every workspace folder the editor named (the root is the first); edits write only inside these.
    workspace_folders: list[pathlib.Path] = field(default_factory=list)
    initialization_options: dict[str, Any] = field(default_factory=dict)
    did_change: dict[str, Any] = field(default_factory=dict)
    # The editor's `clientInfo.name`: whether its settings channels are the user's (`editor_channels`).
    client_name: str = ""
    # The workspace's tandem.toml as first read: a later one that differs gains no trust.
    _workspace_file_at_start: dict[str, Any] | None = None

    def set_initialization_options(self, values: Any) -> None:
        self.initialization_options = _editor_settings(values)

    def set_did_change(self, values: Any) -> None:
        self.did_change = _editor_settings(values)

    def resolve(self) -> tuple[Config, list[Problem]]:
        """The configuration from every layer. Settings are trusted only from where the user wrote them in
        a user-level place: the user's config.toml, and an editor's channels where the workspace cannot
        write them (`config.trust.editor_channels`); every other layer is held to the workspace's rules."""
        problems: list[Problem] = []
        user_path = user_config_path(self.env)
        user = _read_toml(user_path, problems)
        layers = [Layer(str(user_path), user, directory=str(user_path.parent))]
        channels = editor_channels(self.client_name)
        if self.workspace_root is not None:
            root = str(self.workspace_root)
            mark_trusted_root(user, root)
            if channels.initialization_options:
                mark_trusted_root(self.initialization_options, root)
            if channels.did_change_configuration:
                mark_trusted_root(self.did_change, root)
            workspace_path = self.workspace_root / "tandem.toml"
            values = _read_toml(workspace_path, problems, within=Folders([self.workspace_root]))
            if self._workspace_file_at_start is None:
                self._workspace_file_at_start = values
            changed = values != self._workspace_file_at_start
            layers.append(
                Layer(str(workspace_path), values, from_workspace=True, directory=root, never_trusted=changed)
            )
        layers.append(
            Layer(
                "initializationOptions",
                self.initialization_options,
                from_workspace=not channels.initialization_options,
            )
        )
        layers.append(
            Layer(
                "workspace/didChangeConfiguration",
                self.did_change,
                from_workspace=not channels.did_change_configuration,
            )
        )
        config, merge_problems = merge_layers(layers, private_dirs=private_dirs(self.env))
        return config, problems + merge_problems
