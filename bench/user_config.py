"""The user's own tandem config for a benchmark's server: `write(home, options)` writes `options` (tables of
scalars, as `initializationOptions` would hold them) to `home/.config/tandem/config.toml`.

A benchmark's client is no known editor, so its `initializationOptions` count as the workspace's and may not
choose a model or make tandem louder; the user's config may.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    raise TypeError(f"no TOML for {value!r}")


def toml(options: dict[str, Any], table: str = "") -> str:
    scalars = [f"{key} = {_value(value)}\n" for key, value in options.items() if not isinstance(value, dict)]
    text = (f"[{table}]\n" if table and scalars else "") + "".join(scalars)
    for key, value in options.items():
        if isinstance(value, dict):
            text += toml(value, f"{table}.{key}" if table else key)
    return text


def write(home: pathlib.Path, options: dict[str, Any]) -> pathlib.Path:
    path = home / ".config" / "tandem" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(toml(options))
    return path
