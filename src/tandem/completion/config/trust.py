"""What a workspace's tandem.toml may set when the user does not trust that workspace.

A repository's tandem.toml is written by whoever wrote the repository. Untrusted, it may only make tandem
cheaper, quieter or more private than the user's own settings (defaults, the user's config.toml, the
editor's settings). Every key has a rule; a key without one is refused, so a new setting is closed until
someone decides what it may do:

    never       where code and keys go, which model, which private files are sent, trust itself
    at_most     limits, budgets and deadlines: no higher than the user's own
    at_least    waits and thresholds whose raising means fewer or cheaper model calls
    only_off    features that spend or read: may be turned off, never on
    one_of      choices: the user's own, or the named cheaper ones
    free        no cost, destination or privacy side

Where a trace file may be written is decided for every workspace layer, trusted or not, by
`completion.config.tree.merge_layers` (only inside tandem's state and cache directories).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

RuleKind = Literal["never", "at_most", "at_least", "only_off", "one_of", "free"]


@dataclass(frozen=True)
class Rule:
    kind: RuleKind
    why: str = ""  # for "never": what the key would let the workspace do
    allowed: tuple[str, ...] = ()  # for "one_of"


_NEVER_WHERE = Rule("never", "chooses where code and API keys go")
_AT_MOST, _AT_LEAST, _ONLY_OFF, _FREE = Rule("at_most"), Rule("at_least"), Rule("only_off"), Rule("free")

# Keys by their dotted name; "models.*" is either model tier.
RULES: dict[str, Rule] = {
    "trusted_workspaces": Rule("never", "grants trust"),
    "trust_workspace": Rule("never", "grants trust"),
    "_trusted_root": Rule("never", "grants trust"),
    "models.*.provider": _NEVER_WHERE,
    "models.*.base_url": _NEVER_WHERE,
    "models.*.api_key_env": _NEVER_WHERE,
    "models.*.model": Rule("never", "chooses the model your account pays for"),
    "models.*.max_tokens": _AT_MOST,
    "models.*.timeout_s": _AT_MOST,
    "models.*.connect_timeout_s": _AT_MOST,
    "models.*.fim_template": _FREE,
    "models.*.price_input_per_mtok": Rule("never", "changes what your usage is reported to cost"),
    "models.*.price_output_per_mtok": Rule("never", "changes what your usage is reported to cost"),
    "models.*.price_cached_input_per_mtok": Rule("never", "changes what your usage is reported to cost"),
    "models.*.temperature": _FREE,
    # A continued WebSocket turn is billed the conversation the server holds: the user's choice.
    "models.*.transport": Rule("one_of", allowed=("http",)),
    "models.*.store": _ONLY_OFF,
    "models.*.local": Rule("never", "decides how your model server is asked (prompt shape, requests at once)"),
    "models.*.context_tokens": _AT_MOST,
    "models.*.slots": Rule("never", "decides how your model server is asked (prompt shape, requests at once)"),
    "completion.debounce": Rule("one_of", allowed=("fixed",)),
    "completion.debounce_ms": _AT_LEAST,
    "completion.multiline": Rule("one_of", allowed=("never",)),
    "completion.deadline_s": _AT_MOST,
    "completion.prefix_chars": _AT_MOST,
    "completion.suffix_chars": _AT_MOST,
    "completion.max_lines": _AT_MOST,
    "completion.early_units": _FREE,
    # Turning it on spends the accurate model's money on keystrokes.
    "completion.fallback_to_accurate": _ONLY_OFF,
    "context.encoding": _FREE,
    "context.budget_tokens": _AT_MOST,
    "context.suffix_share": _FREE,
    "context.snippet_share": _FREE,
    "context.scan_workspace": _ONLY_OFF,
    "context.max_files": _AT_MOST,
    "context.order": Rule("one_of", allowed=("stable-first",)),
    "privacy.opt_in": Rule("never", "sends files that look private"),
    "privacy.max_file_bytes": _AT_MOST,
    "cache.reuse": Rule("one_of", allowed=("typed-through",)),
    "cache.max_entries": _AT_MOST,
    "cache.max_bytes": _AT_MOST,
    "prefetch.enabled": _ONLY_OFF,
    "prefetch.on_shown": _ONLY_OFF,
    "prefetch.tokens_per_minute": _AT_MOST,
    "prefetch.max_concurrent": _AT_MOST,
    "router.force": Rule("one_of", allowed=("fast",)),
    # Raising these sends fewer edits to the (dearer) accurate model.
    "router.large_selection_lines": _AT_LEAST,
    "router.span_files": _AT_LEAST,
    "router.working_diff_files": _AT_LEAST,
    "router.working_diff_lines": _AT_LEAST,
    "router.accurate_score": _AT_LEAST,
    "router.targeted_share": Rule("never", "moves edits between models"),
    "router.specific_name_files": Rule("never", "moves edits between models"),
    "next_edit.enabled": _ONLY_OFF,
    # 0 means no limit, so "no higher than the user's" would let a workspace lift one: the user's alone.
    "budget.fast_usd_per_day": Rule("never", "changes your daily spend limit"),
    "budget.accurate_usd_per_day": Rule("never", "changes your daily spend limit"),
    "budget.fast_tokens_per_day": Rule("never", "changes your daily spend limit"),
    "budget.accurate_tokens_per_day": Rule("never", "changes your daily spend limit"),
    "next_edit.region_above": _AT_MOST,
    "next_edit.region_below": _AT_MOST,
    "next_edit.context_lines": _AT_MOST,
    "next_edit.budget_tokens": _AT_MOST,
    "next_edit.max_tokens": _AT_MOST,
    # The raw form sends the same material as the chat form, in another layout.
    "next_edit.prompt": _FREE,
    "next_edit.debounce_ms": _AT_LEAST,
    # Asking only after a pause spends the fewest tokens.
    "next_edit.pause": Rule("one_of", allowed=("interval", "typed")),
    "next_edit.settle": _FREE,
    "next_edit.pause_gaps": _AT_LEAST,
    "next_edit.split": _ONLY_OFF,
    "next_edit.deadline_s": _AT_MOST,
    "next_edit.prefetch_on_accept": _ONLY_OFF,
    # Either way the same material is sent, within the same speculation budget.
    "next_edit.rebase": _FREE,
    "edit.max_tokens": _AT_MOST,
    "edit.deadline_s": _AT_MOST,
    "edit.context_files": _AT_MOST,
    "edit.context_chars": _AT_MOST,
    # Hedging pays for an accurate prompt beside the fast one: a workspace may turn it off or narrow it.
    "edit.strategy": Rule("one_of", allowed=("route",)),
    "edit.hedge_from": _AT_LEAST,
    "edit.accurate_from": Rule("never", "moves edits between models"),
    "trace.enabled": _ONLY_OFF,
    "trace.path": _FREE,  # confined by merge_layers
    "trace.max_mb": _AT_MOST,
    "trace.keep": _AT_MOST,
    "trace.otlp_endpoint": Rule("never", "sends your traces elsewhere"),
}


def rule_for(name: str) -> Rule:
    parts = name.split(".")
    if parts[0] == "models" and len(parts) == 3:
        name = f"models.*.{parts[2]}"
    return RULES.get(name, Rule("never", "is not known to be harmless"))


def _judge(rule: Rule, value: Any, own: Any) -> str:
    """ "" if `value` keeps to `rule` given the user's `own` value, else why it is ignored."""
    if rule.kind == "free" or value == own:
        return ""
    if rule.kind == "never":
        return rule.why
    if rule.kind == "at_most":
        return "" if value <= own else f"{value!r} is above your {own!r}"
    if rule.kind == "at_least":
        return "" if value >= own else f"{value!r} is below your {own!r}"
    if rule.kind == "only_off":
        return "" if value is False else "turns on what you have off"
    return "" if value in rule.allowed else f"{value!r} instead of your {own!r}"


def untrusted_values(
    values: Mapping[str, Any], own: Any, *, default_model: Any
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The part of a workspace layer's validated `values` an untrusted workspace may set, judged against
    the user's own Config `own` (`default_model` stands in for a model tier the user has not configured);
    and [(dotted key, why it is ignored)] for the rest."""
    kept: dict[str, Any] = {}
    ignored: list[tuple[str, str]] = []
    for key, value in values.items():
        if not isinstance(value, Mapping):
            why = _judge(rule_for(key), value, getattr(own, key, None))
            if why:
                ignored.append((key, why))
            else:
                kept[key] = value
            continue
        section = getattr(own, key, None)
        kept[key] = {}
        for sub, sub_value in value.items():
            if key == "models" and isinstance(sub_value, Mapping):
                user_model = getattr(section, sub, None) or default_model
                table: dict[str, Any] = {}
                for field, field_value in sub_value.items():
                    name = f"models.{sub}.{field}"
                    why = _judge(rule_for(name), field_value, getattr(user_model, field, None))
                    if why:
                        ignored.append((name, why))
                    else:
                        table[field] = field_value
                if table:  # an emptied table would still bring a model tier into being
                    kept[key][sub] = table
                continue
            name = f"{key}.{sub}"
            why = _judge(rule_for(name), sub_value, getattr(section, sub, None))
            if why:
                ignored.append((name, why))
            else:
                kept[key][sub] = sub_value
    return kept, ignored


@dataclass(frozen=True)
class EditorChannels:
    """Whether an editor's two settings channels carry only what the user wrote in a user-level place
    (True), or may carry what a workspace wrote (False: held to the workspace's rules, like its tandem.toml)."""

    initialization_options: bool = False
    did_change_configuration: bool = False


# Editors whose channels a workspace cannot write, by `clientInfo.name` (which the workspace cannot choose
# either). Each editor's README says where its settings come from:
# - VS Code (and code-server, VSCodium): every `tandem.*` setting is declared `"scope": "machine"` in the
#   extension's package.json, which VS Code applies from user (or remote machine) settings only, never from
#   a workspace's `.vscode/settings.json`; the extension builds both channels from those.
# - Neovim: both channels come from `require("tandem").setup(opts)` in the user's init; a workspace's
#   `.nvim.lua`/`.exrc` runs only after the user trusts that file (`:help 'exrc'`, `vim.secure`).
# Any other editor, and one that does not say who it is, is held to the workspace's rules on both: Emacs
# applies a repository's `.dir-locals.el` value of `eglot-workspace-configuration` without asking (it is
# marked safe) and eglot sends it as didChangeConfiguration; Helix merges a workspace's
# `.helix/languages.toml` (its `[language-server.tandem.config]` becomes initializationOptions and
# didChangeConfiguration). Their users put models and trust in tandem's own config.toml.
_USER_LEVEL_EDITORS = {
    "visual studio code": EditorChannels(True, True),
    "visual studio code - insiders": EditorChannels(True, True),
    "code-server": EditorChannels(True, True),
    "vscodium": EditorChannels(True, True),
    "code - oss": EditorChannels(True, True),
    "neovim": EditorChannels(True, True),
}


def editor_channels(client_name: str) -> EditorChannels:
    """Which of this editor's settings channels are the user's own (see `_USER_LEVEL_EDITORS`)."""
    return _USER_LEVEL_EDITORS.get(client_name.strip().lower(), EditorChannels())
