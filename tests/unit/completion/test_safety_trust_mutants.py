"""What an untrusted workspace's tandem.toml may set (`completion.config.trust`): every rule in both
directions (what it lets through and what it stops), features turned back on, model tiers the user has
not configured, and keys without a rule (`python tools/mutation.py --module tandem.completion.config.trust`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tandem.completion.config.tree import Config, ModelConfig, ModelsConfig
from tandem.completion.config.trust import RULES, Rule, editor_channels, rule_for, untrusted_values

_MODEL_FIELD = "models.fast."


def _own_with(dotted: str, own_value: Any) -> Config:
    """The user's own Config with `dotted` set to `own_value` (a model key sets the fast tier's)."""
    config = Config()
    if dotted.startswith("models.*."):
        model = dataclasses.replace(ModelConfig(), **{dotted.split(".")[2]: own_value})
        return dataclasses.replace(config, models=ModelsConfig(fast=model))
    if "." not in dotted:
        return dataclasses.replace(config, **{dotted: own_value}) if hasattr(config, dotted) else config
    section, key = dotted.split(".")
    return dataclasses.replace(config, **{section: dataclasses.replace(getattr(config, section), **{key: own_value})})


def _layer(dotted: str, value: Any) -> dict[str, Any]:
    if dotted.startswith("models.*."):
        return {"models": {"fast": {dotted.split(".")[2]: value}}}
    if "." not in dotted:
        return {dotted: value}
    section, key = dotted.split(".")
    return {section: {key: value}}


def _judged(dotted: str, value: Any, own_value: Any) -> tuple[bool, str]:
    """(kept, why ignored) for the workspace setting `dotted` to `value` over the user's `own_value`."""
    kept, ignored = untrusted_values(_layer(dotted, value), _own_with(dotted, own_value), default_model=ModelConfig())
    name = dotted.replace("models.*.", _MODEL_FIELD)
    whys = [why for key, why in ignored if key == name]
    assert len(whys) + (kept == _layer(dotted, value)) == 1, (dotted, kept, ignored)
    return not whys, whys[0] if whys else ""


def _other(value: Any) -> Any:
    """A value of the same type that differs from `value`."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 7
    if isinstance(value, tuple):
        return (*value, "*")
    return f"{value}-other"


def _default(dotted: str) -> Any:
    config = Config()
    if dotted.startswith("models.*."):
        return getattr(ModelConfig(), dotted.split(".")[2])
    if "." not in dotted:
        return getattr(config, dotted, False)
    section, key = dotted.split(".")
    return getattr(getattr(config, section), key)


def _of_kind(kind: str) -> list[str]:
    return [key for key, rule in RULES.items() if rule.kind == kind]


@pytest.mark.parametrize("dotted", _of_kind("never"))
def test_a_never_key_keeps_only_the_users_own_value(dotted: str) -> None:
    own = _default(dotted)
    kept, why = _judged(dotted, _other(own), own)
    assert not kept and why == RULES[dotted].why and why
    if hasattr(Config(), dotted.split(".")[0]) or dotted.startswith("models"):
        assert _judged(dotted, own, own) == (True, "")
        if isinstance(own, str):
            # Equal is enough: the workspace's copy of the user's own value is not the same object.
            mine = f"{dotted}-mine"
            assert _judged(dotted, "".join([mine, ""]), mine) == (True, "")


@pytest.mark.parametrize("dotted", _of_kind("at_most"))
def test_an_at_most_key_may_lower_never_raise(dotted: str) -> None:
    own = 10.0 if isinstance(_default(dotted), float) else 10
    lower, higher = own - 1, own + 1
    assert _judged(dotted, lower, own) == (True, "")
    assert _judged(dotted, own, own) == (True, "")
    assert _judged(dotted, higher, own) == (False, f"{higher!r} is above your {own!r}")


@pytest.mark.parametrize("dotted", _of_kind("at_least"))
def test_an_at_least_key_may_raise_never_lower(dotted: str) -> None:
    own = 10.0 if isinstance(_default(dotted), float) else 10
    lower, higher = own - 1, own + 1
    assert _judged(dotted, higher, own) == (True, "")
    assert _judged(dotted, own, own) == (True, "")
    assert _judged(dotted, lower, own) == (False, f"{lower!r} is below your {own!r}")


@pytest.mark.parametrize("dotted", _of_kind("only_off"))
def test_an_only_off_key_may_turn_off_never_back_on(dotted: str) -> None:
    assert _judged(dotted, False, True) == (True, "")
    assert _judged(dotted, True, True) == (True, "")
    assert _judged(dotted, True, False) == (False, "turns on what you have off")


@pytest.mark.parametrize("dotted", _of_kind("one_of"))
def test_a_one_of_key_may_choose_only_the_named_cheaper_values(dotted: str) -> None:
    rule = RULES[dotted]
    own = _default(dotted)
    for allowed in rule.allowed:
        assert _judged(dotted, allowed, own) == (True, ""), allowed
    assert _judged(dotted, own, own) == (True, "")
    dearer = "dearer-choice"
    assert _judged(dotted, dearer, own) == (False, f"{dearer!r} instead of your {own!r}")


@pytest.mark.parametrize("dotted", _of_kind("free"))
def test_a_free_key_is_kept_whatever_it_says(dotted: str) -> None:
    own = _default(dotted)
    assert _judged(dotted, _other(own), own) == (True, "")


def test_every_rule_kind_is_tested_above() -> None:
    assert {rule.kind for rule in RULES.values()} == {"never", "at_most", "at_least", "only_off", "one_of", "free"}


@pytest.mark.parametrize(
    "layer",
    [{"bogus": 1}, {"context": {"bogus": 1}}, {"models": {"fast": {"bogus": 1}}}, {"models": {"fast": "x"}}],
)
def test_a_key_without_a_rule_is_refused(layer: dict[str, Any]) -> None:
    kept, ignored = untrusted_values(layer, Config(), default_model=ModelConfig())
    assert [why for _, why in ignored] == ["is not known to be harmless"]
    assert kept in ({}, {"context": {}}, {"models": {}})


def test_rules_are_found_for_either_model_tier_only_by_three_part_names() -> None:
    assert rule_for("models.accurate.base_url") == rule_for("models.fast.base_url") == RULES["models.*.base_url"]
    assert rule_for("models.fast.base_url.x") == Rule("never", "is not known to be harmless")
    assert rule_for("models.base_url") == Rule("never", "is not known to be harmless")
    assert rule_for("context.budget_tokens") == RULES["context.budget_tokens"]
    # Only a model tier's name has three parts: another section's three-part name has no rule.
    for section in ("context", "trace"):
        assert rule_for(f"{section}.fast.max_tokens") == Rule("never", "is not known to be harmless")


def test_a_table_where_a_setting_was_expected_is_refused() -> None:
    for section in ("context", "trace"):
        kept, ignored = untrusted_values({section: {"x": {"temperature": 0.5}}}, Config(), default_model=ModelConfig())
        assert kept == {section: {}} and ignored == [(f"{section}.x", "is not known to be harmless")]


def test_only_false_turns_a_feature_off() -> None:
    assert _judged("prefetch.enabled", 0, True) == (False, "turns on what you have off")


def test_a_model_tier_the_user_has_not_configured_is_judged_against_the_default_model() -> None:
    default = ModelConfig(max_tokens=256)
    values = {"models": {"accurate": {"max_tokens": 300, "temperature": 0.5}}}
    kept, ignored = untrusted_values(values, Config(), default_model=default)
    assert kept == {"models": {"accurate": {"temperature": 0.5}}}
    assert ignored == [("models.accurate.max_tokens", "300 is above your 256")]
    kept, ignored = untrusted_values({"models": {"accurate": {"max_tokens": 200}}}, Config(), default_model=default)
    assert kept == {"models": {"accurate": {"max_tokens": 200}}} and not ignored


def test_both_model_tiers_in_one_layer_are_each_judged() -> None:
    values = {"models": {"fast": {"max_tokens": 100}, "accurate": {"max_tokens": 9999, "temperature": 0.1}}}
    kept, ignored = untrusted_values(values, Config(), default_model=ModelConfig(max_tokens=256))
    assert kept == {"models": {"fast": {"max_tokens": 100}, "accurate": {"temperature": 0.1}}}
    assert ignored == [("models.accurate.max_tokens", "9999 is above your 256")]


def test_the_rules_cannot_be_changed_once_made() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        RULES["models.*.base_url"].kind = "free"  # type: ignore[misc]


def test_a_model_table_emptied_by_the_rules_does_not_bring_a_tier_into_being() -> None:
    values = {"models": {"fast": {"base_url": "http://evil.example/v1", "model": "dear"}}}
    kept, ignored = untrusted_values(values, Config(), default_model=ModelConfig())
    assert kept == {"models": {}}
    assert [key for key, _ in ignored] == ["models.fast.base_url", "models.fast.model"]


def test_several_keys_are_each_judged_on_their_own() -> None:
    own = Config()
    values = {
        "completion": {"debounce_ms": 300, "deadline_s": 99.0, "multiline": "never"},
        "prefetch": {"enabled": False, "tokens_per_minute": own.prefetch.tokens_per_minute * 2},
        "trust_workspace": True,
        "trusted_workspaces": (),
    }
    kept, ignored = untrusted_values(values, own, default_model=ModelConfig())
    assert kept == {
        "completion": {"debounce_ms": 300, "multiline": "never"},
        "prefetch": {"enabled": False},
        "trusted_workspaces": (),
    }
    assert [key for key, _ in ignored] == ["completion.deadline_s", "prefetch.tokens_per_minute", "trust_workspace"]


# -- whose settings channels are the user's (`editor_channels`) -------------------------------------------------


@pytest.mark.parametrize(
    "client",
    [
        "Visual Studio Code",
        "Visual Studio Code - Insiders",
        "code-server",
        "VSCodium",
        "Code - OSS",
        "Neovim",
        " neovim ",
    ],
)
def test_an_editor_whose_channels_a_workspace_cannot_write_is_the_users_on_both(client: str) -> None:
    channels = editor_channels(client)
    assert channels.initialization_options is True
    assert channels.did_change_configuration is True


@pytest.mark.parametrize("client", ["", "Emacs", "eglot", "helix", "Helix", "Sublime Text LSP", "Visual Studio"])
def test_any_other_editor_is_held_to_the_workspaces_rules_on_both(client: str) -> None:
    channels = editor_channels(client)
    assert channels.initialization_options is False
    assert channels.did_change_configuration is False


def test_an_editors_channels_cannot_be_changed_once_decided() -> None:
    channels = editor_channels("Neovim")
    with pytest.raises(dataclasses.FrozenInstanceError):
        channels.initialization_options = False  # type: ignore[misc]
    assert editor_channels("Neovim").did_change_configuration is True


# Each key's rule kind, written out: the tests above check each kind's behaviour for the keys that have
# it, so a key whose kind changed (`completion.prefix_chars` at-most becoming at-least, `models.*.store`
# only-off becoming free) would pass them under its new kind. This table is the decision; changing a
# key's kind means changing it here too, on purpose.
KINDS: dict[str, tuple[str, ...]] = {
    "never": (
        "trusted_workspaces", "trust_workspace", "_trusted_root", "models.*.provider", "models.*.base_url",
        "models.*.api_key_env", "models.*.model", "models.*.price_input_per_mtok", "models.*.price_output_per_mtok",
        "models.*.price_cached_input_per_mtok", "privacy.opt_in", "router.targeted_share",
        "router.specific_name_files", "budget.fast_usd_per_day", "budget.accurate_usd_per_day",
        "budget.fast_tokens_per_day", "budget.accurate_tokens_per_day", "edit.accurate_from", "trace.otlp_endpoint",
        "models.*.local", "models.*.slots",
    ),
    "at_most": (
        "models.*.max_tokens", "models.*.timeout_s", "models.*.connect_timeout_s", "completion.deadline_s",
        "completion.prefix_chars", "completion.suffix_chars", "completion.max_lines", "context.budget_tokens",
        "context.max_files", "privacy.max_file_bytes", "cache.max_entries", "cache.max_bytes",
        "prefetch.tokens_per_minute", "prefetch.max_concurrent", "next_edit.region_above", "next_edit.region_below",
        "next_edit.context_lines", "next_edit.budget_tokens", "next_edit.max_tokens", "next_edit.deadline_s",
        "edit.max_tokens", "edit.deadline_s", "edit.context_files", "edit.context_chars", "trace.max_mb",
        "trace.keep", "models.*.context_tokens",
    ),
    "at_least": (
        "completion.debounce_ms", "router.large_selection_lines", "router.span_files", "router.working_diff_files",
        "router.working_diff_lines", "router.accurate_score", "next_edit.debounce_ms", "next_edit.pause_gaps",
        "edit.hedge_from",
    ),
    "only_off": (
        "models.*.store", "context.scan_workspace", "prefetch.enabled", "prefetch.on_shown", "next_edit.enabled",
        "next_edit.split", "next_edit.prefetch_on_accept", "trace.enabled",
        "completion.fallback_to_accurate",
    ),
    "one_of": (
        "models.*.transport", "completion.debounce", "completion.multiline", "context.order", "cache.reuse",
        "router.force", "next_edit.pause", "edit.strategy",
    ),
    "free": (
        "models.*.fim_template", "models.*.temperature", "context.encoding", "context.suffix_share",
        "context.snippet_share", "next_edit.prompt", "next_edit.settle", "next_edit.rebase", "trace.path",
        "completion.early_units",
    ),
}
ONE_OF_ALLOWED: dict[str, tuple[str, ...]] = {
    "models.*.transport": ("http",),
    "completion.debounce": ("fixed",),
    "completion.multiline": ("never",),
    "context.order": ("stable-first",),
    "cache.reuse": ("typed-through",),
    "router.force": ("fast",),
    "next_edit.pause": ("interval", "typed"),
    "edit.strategy": ("route",),
}


def test_each_keys_rule_kind_is_the_one_decided() -> None:
    decided = {key: kind for kind, keys in KINDS.items() for key in keys}
    assert len(decided) == sum(len(keys) for keys in KINDS.values())  # no key under two kinds
    assert {key: rule.kind for key, rule in RULES.items()} == decided
    assert {key: rule.allowed for key, rule in RULES.items() if rule.kind == "one_of"} == ONE_OF_ALLOWED


@pytest.mark.parametrize(
    ("dotted", "lower_kept", "higher_kept"),
    [("completion.prefix_chars", True, False), ("completion.debounce_ms", False, True)],
)
def test_named_survivors_keep_their_direction(dotted: str, lower_kept: bool, higher_kept: bool) -> None:
    # The two directions, through the rules as a workspace meets them (a survivor of the mutation audit).
    own = _default(dotted)
    assert _judged(dotted, own - 1, own)[0] is lower_kept
    assert _judged(dotted, own + 1, own)[0] is higher_kept


def test_a_workspace_cannot_turn_on_provider_storage() -> None:
    assert _judged("models.*.store", True, False) == (False, "turns on what you have off")
    assert _judged("models.*.store", False, True) == (True, "")
