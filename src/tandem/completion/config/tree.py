"""tandem's configuration: one typed tree, merged from layers, with problems reported in words.

Layers, lowest first: defaults, the user's config.toml, the workspace's tandem.toml, the editor's
initializationOptions, workspace/didChangeConfiguration. Every layer is a plain mapping (TOML table or
JSON object) with the same shape:

    [models.fast]                       [completion]              [trace]
    provider = "openai-chat"            debounce_ms = 0           path = "..."
    base_url = "https://..."            multiline = "auto"
    model = "..."                       deadline_s = 10.0        trusted_workspaces = ["/path"]
    api_key_env = "CEREBRAS_API_KEY"    context_chars = 6000     trust_workspace = false
    max_tokens = 256
    timeout_s = 10.0
    transport = "http"   # "websocket": openai-responses only
    store = false        # openai-responses: let the provider store responses

    [router]                            [edit]
    force = ""   # "fast" | "accurate"  max_tokens = 16384
    large_selection_lines = 30          deadline_s = 300.0
    span_files = 2.0 ...                context_files = 4
                                        strategy = "banded"   # "route", "draft-check"
                                        hedge_from = 0.61   # = accurate_from: no hedge band
                                        accurate_from = 0.61

A workspace's tandem.toml comes from whoever wrote the repository: unless the user trusts it, it may only
make tandem cheaper, quieter or more private (`completion.config.trust`). Trusted or not, its trace path
must lie inside tandem's state or cache directory. A relative path is resolved against the directory of
the file that names it (`Layer.directory`); editor settings have none and resolve against the first
private directory.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import pathlib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args, get_origin

from tandem.completion.config.ranges import RANGES, range_for
from tandem.completion.config.trust import untrusted_values
from tandem.completion.machine.containment import really_inside
from tandem.completion.machine.state import is_state_file
from tandem.completion.routing.router import RouterThresholds

Provider = Literal["openai-chat", "fim", "openai-responses", "anthropic", "ollama"]
PROVIDERS: tuple[str, ...] = get_args(Provider)
# Providers whose backend exists today; the others are accepted by the schema but reported unusable.
IMPLEMENTED_PROVIDERS: frozenset[str] = frozenset({"openai-chat", "fim", "anthropic", "openai-responses"})


# The slowest prompt reading a local model's read timeout allows for (a 1.5B model on two shared cores reads
# ~56 tokens/s), and the window assumed when `context_tokens` is not given (llama-server's common `-c`).
LOCAL_SLOWEST_PROMPT_TOKENS_PER_S = 50.0
LOCAL_WINDOW_TOKENS = 8192


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    provider: Provider = "openai-chat"
    base_url: str = ""
    model: str = ""
    api_key_env: str = ""
    max_tokens: int = 256
    timeout_s: float = 10.0
    connect_timeout_s: float = 3.0
    # For provider "fim": a template name from providers.backends.fim_templates sends a raw FIM prompt;
    # empty sends `prompt` + `suffix` fields (vLLM, llama.cpp server, DeepSeek beta).
    fim_template: str = ""
    temperature: float = 0.0
    # USD per million tokens, for the cost estimate in traces and `tandem trace report` (0: not priced).
    # Cached input tokens cost the input price unless their own is set.
    price_input_per_mtok: float = 0.0
    price_output_per_mtok: float = 0.0
    price_cached_input_per_mtok: float = 0.0
    # For provider "openai-responses": "websocket" keeps one persistent connection per model (the Responses
    # API's WebSocket mode: no handshake per request, and consecutive completions in a document continue
    # from the previous response); "http" posts each request and reads it as server-sent events.
    transport: Literal["http", "websocket"] = "http"
    # For provider "openai-responses": let the provider store responses (`store: true`). Off, the user's
    # code is kept only as long as a request needs it (and, over a WebSocket, the connection's last response).
    store: bool = False
    # The model runs on this machine (llama.cpp's llama-server, Ollama, LM Studio): it costs no money, it
    # reads prompts at ~100 tokens/s, and what it has read stays in its prompt cache. Completions are then
    # asked with a prompt whose beginning stays the same from key to key (`completion.inline.local_prompt`),
    # one request at a time per server slot, and a superseded request is let finish reading its prompt.
    local: bool = False
    # Requests in flight to this model at once (0: no limit; a local model: 1 unless set).
    slots: int = 0
    # The model's context window in tokens (0: 128K); a local server's is its `-c` (tandem local serve: 8192).
    # Edit prompts are cut to fit the smallest window of the models an edit may ask.
    context_tokens: int = 0

    @property
    def slot_count(self) -> int:
        return self.slots or (1 if self.local else 0)

    @property
    def read_timeout_s(self) -> float:
        """How long a response may send nothing. A local server sends nothing while it reads a prompt, so
        for a local model it is at least the time to read a whole window at `LOCAL_SLOWEST_PROMPT_TOKENS_PER_S`
        (8,192 tokens: ~164 s); `timeout_s` otherwise."""
        if not self.local:
            return self.timeout_s
        return max(self.timeout_s, (self.context_tokens or LOCAL_WINDOW_TOKENS) / LOCAL_SLOWEST_PROMPT_TOKENS_PER_S)


@dataclass(frozen=True, kw_only=True)
class ModelsConfig:
    fast: ModelConfig | None = None
    accurate: ModelConfig | None = None


@dataclass(frozen=True, kw_only=True)
class CompletionConfig:
    # Misses wait before asking a model (cache hits never wait). "adaptive" follows the user's typing
    # rhythm and the model's recent latency, up to `debounce_ms` (a local model's misses never wait);
    # "fixed" always waits `debounce_ms`.
    debounce: Literal["adaptive", "fixed"] = "adaptive"
    debounce_ms: int = 150
    multiline: Literal["auto", "always", "never"] = "auto"
    # The whole completion, first byte to answer, may take no longer than this.
    deadline_s: float = 10.0
    # Characters of prefix and suffix sent around the cursor (the token-budgeted window is cache/'s job).
    prefix_chars: int = 6000
    suffix_chars: int = 2000
    max_lines: int = 12
    # With a local model (`models.fast.local`), a single-line suggestion is shown word by word as it is
    # written, not when its line is complete (a line at ~30 tokens/s takes longer than a key).
    early_units: bool = True
    # While the fast model is down (its breaker open, or a 429's Retry-After), ask the accurate model for
    # completions and next edits instead: it costs several times the price per token, so it is the user's
    # choice, off by default (off: no suggestions until the fast model answers again, and the status says so).
    fallback_to_accurate: bool = False


@dataclass(frozen=True, kw_only=True)
class ContextConfig:
    # tiktoken encoding: cl100k_base ships with tandem; o200k_base only where tiktoken's cache holds it.
    encoding: Literal["cl100k_base", "o200k_base"] = "cl100k_base"
    # Prompt budget for completions (hard maximum 128K tokens).
    budget_tokens: int = 2048
    suffix_share: float = 0.25
    snippet_share: float = 0.3
    # Index the workspace in the background for cross-file snippets (imports, definitions).
    scan_workspace: bool = True
    max_files: int = 20000
    # Prompt order: "stable-first" (snippets, then the file; the provider's prefix cache hits) or "naive"
    # (the cursor's neighbourhood first, snippets last; exists to measure what the first is worth).
    order: Literal["stable-first", "naive"] = "stable-first"


@dataclass(frozen=True, kw_only=True)
class PrivacyConfig:
    # gitignore-style paths the user allows although they look like secrets (never overrides credential
    # patterns found in content).
    opt_in: tuple[str, ...] = ()
    max_file_bytes: int = 1_000_000


@dataclass(frozen=True, kw_only=True)
class CacheConfig:
    # How suggestions are reused: "typed-through" serves the rest of a completion (streaming or finished)
    # the user is typing through; "exact" only where the cursor is exactly at an anchor (a prefetched
    # state); "off" asks the model on every miss. The last two exist to measure what the first is worth.
    reuse: Literal["typed-through", "exact", "off"] = "typed-through"
    max_entries: int = 4096
    max_bytes: int = 32 * 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class PrefetchConfig:
    enabled: bool = True
    # Speculate after a suggestion is shown (the state after accepting it) and when one is accepted.
    on_shown: bool = True
    # A prefetcher must not burn the user's quota: tokens (in + out) it may spend per minute.
    tokens_per_minute: int = 20000
    max_concurrent: int = 1


@dataclass(frozen=True, kw_only=True)
class RouterConfig(RouterThresholds):
    """`[router]`: where an edit goes (the thresholds of `completion.routing.router.RouterThresholds`), and a
    per-project override. `force = "fast"` or `"accurate"` sends every edit there; "" lets the router decide."""

    force: Literal["", "fast", "accurate"] = ""


@dataclass(frozen=True, kw_only=True)
class EditConfig:
    """`[edit]`: limits of one `tandem.edit`."""

    # An edit answer is whole SEARCH/REPLACE blocks: far longer than a completion. A cut answer is lost
    # whole, and a multi-file edit of a few hundred lines needs more than 4K tokens.
    max_tokens: int = 16384
    # The whole edit, escalation included (an accurate model at ~65 tokens/s needs ~4 minutes for 16K
    # tokens; the user can cancel from the progress notification).
    deadline_s: float = 300.0
    # Other files shown to the model beside the one being edited (the route's cross-file reach).
    context_files: int = 4
    context_chars: int = 60_000
    # Where an edit goes (`completion.edit.flow`). "banded": by the router's score, the fast model first
    # (an answer that fails its checks is re-run on the accurate model) below `hedge_from`; both models at
    # once from `hedge_from` up to `accurate_from` (hedged: the accurate stream is cancelled when the fast
    # answer passes its checks, and serves when it does not); the accurate model alone at `accurate_from`
    # or above. "route": the router's tier (`[router] accurate_score`) with escalation, as before hedging.
    # "draft-check": the fast model first; a fast answer that passes its checks is shown to the accurate
    # model, which keeps it or writes its own (an experiment: see `tandem replay --edits`).
    # A tier asked for by the user or by `[router] force` is asked alone, whatever the strategy.
    # `accurate_from` is chosen from real labels (`tandem.eval.router_bands`, a share set before any figure
    # was seen): at or above it at least 80% of edits were hard (211 of 263 over flask's, black's and
    # tandem's newest 300 edits, each history scored by the router fitted without it; on tandem's history
    # at a later commit, 993ac64, the same rule gives 0.66, 186 of 232). By default nothing is
    # hedged (`hedge_from = accurate_from`): below `accurate_from` the fast model goes first. The labels'
    # low edge (0.195: below it at most 15% hard) would hedge the edits between; on the simulated held-out
    # strategy tables that band kept the same correct edits and saved 3 points of always-accurate's wait
    # for 19-58 points of its price (the accurate prompt paid on every hedged edit): $0.08 per second of
    # wait saved on flask and black, $0.014 on tandem's longer edits. A setting for whoever values their
    # wait above that (`hedge_from = 0.195`; README, Edits).
    # `hedge_from = 0.0, accurate_from = 1.01` hedges every edit (least wait, most money);
    # `hedge_from = accurate_from = 1.01` asks the fast model first for every edit (least money).
    strategy: Literal["banded", "route", "draft-check"] = "banded"
    hedge_from: float = 0.61
    accurate_from: float = 0.61


@dataclass(frozen=True, kw_only=True)
class NextEditConfig:
    """`[next_edit]`: the fast model predicting the user's next change near the cursor."""

    enabled: bool = True
    # The editable region: lines over and under the cursor the model may rewrite.
    region_above: int = 8
    region_below: int = 12
    # Unchanged lines shown on each side of the region (trimmed to the budget).
    context_lines: int = 40
    # Prompt budget: the recent-edit history and cross-file snippets get at most a quarter each.
    budget_tokens: int = 2048
    # Tokens for the rewrite: a 20-line region is ~250 tokens.
    max_tokens: int = 600
    # "auto": raw for a `fim` provider (a next-edit model such as Zeta), chat otherwise.
    prompt: Literal["auto", "chat", "raw"] = "auto"
    # Wait for a pause in the typing (`pause_gaps` typing intervals), at most this long, before asking the
    # model: a request overtaken by the next key press costs its whole prompt (a newer keystroke cancels
    # the wait). Once half the minute's speculation budget is spent, the pause may pass this, up to 1 s as
    # the budget runs out (`NextEdits._delay_s`).
    debounce_ms: int = 250
    # When to ask: "none" (at once after every edit: with `rebase`, a rewrite overtaken by the next key
    # still answers it while it agrees), "typed" (at once after a key press that closes a bracket or a
    # quote, types `:`, `,` or `;`, or begins a line; after the pause otherwise: the cheaper choice without
    # `rebase`), "interval" (always after the pause). Each waits for the pause once half the minute's
    # speculation budget is spent (`NextEdits._delay_s`).
    pause: Literal["interval", "typed", "none"] = "none"
    # The pause that ends a burst of typing, in typing intervals (a typist's lognormal spread puts about one
    # gap in eight beyond 1.5 intervals, one in three beyond 1.2, one in forty beyond 2.0, one in 200 beyond 2.5).
    pause_gaps: float = 2.5
    # When a streaming hunk counts as complete: "distinct-line" (one line after it matches the region again
    # and is distinctive, or two lines that do) or "two-lines" (two lines, whatever they are).
    settle: Literal["two-lines", "distinct-line"] = "distinct-line"
    # Ask for the region in two parts at once, from the cursor's line down and from the region's top to the
    # cursor's line, so that a change below the cursor settles without the lines above being copied first.
    # Each part costs a prompt (twice the prompt tokens); two parts only while they leave half the
    # minute's speculation budget.
    split: bool = True
    # Keep a rewrite streaming after its request is answered or overtaken, and answer the keys that follow
    # from it while it agrees with them (it has what the user typed, or that with more at the cursor): one
    # request serves a change, and the next change is on screen when the user finishes this one
    # (`completion.next_edit.rebase`). Off: each key that asks is a new request, its rewrite stopped at
    # the first hunk shown.
    rebase: bool = True
    deadline_s: float = 5.0
    # Ask for the next edit at once when one is accepted (Tab, Tab, Tab costs no wait).
    prefetch_on_accept: bool = True


# The most rotated trace files kept (`trace.keep`).
MAX_TRACE_KEEP = int(RANGES["trace.keep"].high)


@dataclass(frozen=True, kw_only=True)
class TraceConfig:
    # Empty: the user state dir ($XDG_STATE_HOME/tandem/trace.jsonl).
    path: str = ""
    enabled: bool = True
    # The file rotates when it would pass this size; `keep` rotated files are kept (trace.jsonl.1 ...).
    max_mb: float = 20.0
    keep: int = 3
    # OpenTelemetry export (needs the `otel` extra): an OTLP/HTTP endpoint such as http://localhost:4318.
    # Empty: the standard OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT variables
    # decide; neither set, nothing is exported.
    otlp_endpoint: str = ""


@dataclass(frozen=True, kw_only=True)
class BudgetConfig:
    """`[budget]`: a daily spend limit per tier, in USD (at the models' configured prices) or tokens; 0: no
    limit. Past 80% of a limit speculation stops, past 90% next edits, at 100% completions (said once);
    edits still run when asked (`completion.observe.spend`). The day is the local calendar day; the day's spend is
    kept in the state directory, so a restart does not reset it."""

    fast_usd_per_day: float = 0.0
    accurate_usd_per_day: float = 0.0
    fast_tokens_per_day: int = 0
    accurate_tokens_per_day: int = 0


@dataclass(frozen=True, kw_only=True)
class Config:
    models: ModelsConfig = field(default_factory=ModelsConfig)
    completion: CompletionConfig = field(default_factory=CompletionConfig)
    context: ContextConfig = field(default_factory=ContextConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    prefetch: PrefetchConfig = field(default_factory=PrefetchConfig)
    trace: TraceConfig = field(default_factory=TraceConfig)
    router: RouterConfig = field(default_factory=RouterConfig)
    edit: EditConfig = field(default_factory=EditConfig)
    next_edit: NextEditConfig = field(default_factory=NextEditConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    trusted_workspaces: tuple[str, ...] = ()
    # Sent by an editor that has its own notion of trust (VS Code's workspace trust).
    trust_workspace: bool = False


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one key, in words a user can act on."""

    source: str
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.key}: {self.message}"


@dataclass(frozen=True)
class Layer:
    source: str  # "~/.config/tandem/config.toml", "initializationOptions", ...
    values: Mapping[str, Any]
    from_workspace: bool = False
    # The directory of the file the layer came from ("" for editor settings): relative paths start there.
    directory: str = ""
    # A workspace layer that trust does not reach: a tandem.toml that changed after start-up (the user
    # trusted the file they had, not what a model or a pull wrote into it since).
    never_trusted: bool = False


def merge_layers(layers: list[Layer], *, private_dirs: tuple[str, ...] = ()) -> tuple[Config, list[Problem]]:
    """Merge `layers` over the defaults. Bad keys are dropped (the default stays) and reported.

    Workspace layers keep only what `config_trust` allows unless a non-workspace layer (the user's
    config, or the editor) trusts the workspace; what they lose is named in one problem per layer.
    `private_dirs` are tandem's state and cache directories, the only places a workspace's trace may go.
    """
    problems: list[Problem] = []
    merged: dict[str, Any] = {}
    own: dict[str, Any] = {}
    layers = [dataclasses.replace(layer, values=bounded(layer.values)) for layer in layers]
    trusted = any(_trusts(layer.values) for layer in layers if not layer.from_workspace)
    cleaned: list[tuple[Layer, dict[str, Any]]] = []
    for layer in layers:
        clean = _validate(Config, layer.values, prefix="", source=layer.source, problems=problems)
        _resolve_trace_path(clean, layer, private_dirs, problems)
        cleaned.append((layer, clean))
        if not layer.from_workspace:
            _deep_merge(own, copy.deepcopy(clean))
    user_own = _build(Config, own)
    for layer, clean in cleaned:
        if layer.from_workspace and (not trusted or layer.never_trusted):
            clean, ignored = untrusted_values(clean, user_own, default_model=ModelConfig())
            if ignored:
                problems.append(_ignored(layer.source, ignored))
        _deep_merge(merged, clean)
    return _build(Config, merged), problems


# The deepest a setting's value is read: the tree is four levels deep (models.fast.key, a list under it);
# below this a value is `TooDeep` (refused with its key named like any misfit). Past ~1,000 levels repr,
# deepcopy and comparisons raise RecursionError, and TOML's dotted keys build any depth without recursing.
MAX_SETTING_DEPTH = 16


class TooDeep:
    """Stands for a value nested past `MAX_SETTING_DEPTH` (what it was is not kept)."""

    def __repr__(self) -> str:
        return f"a value nested more than {MAX_SETTING_DEPTH} levels deep"


def bounded(values: Mapping[str, Any], limit: int = MAX_SETTING_DEPTH) -> dict[str, Any]:
    """A copy of `values` in which every table or list deeper than `limit` is a `TooDeep`; iterative, so
    any depth is copied in time linear in its size without recursing."""
    top: dict[str, Any] = {}
    stack: list[tuple[Any, Any, int]] = [(values, top, 1)]
    while stack:
        source, target, depth = stack.pop()
        items = source.items() if isinstance(source, Mapping) else enumerate(source)
        for key, value in items:
            if isinstance(value, Mapping | list | tuple):
                if depth >= limit:
                    copied: Any = TooDeep()
                else:
                    copied = {} if isinstance(value, Mapping) else [None] * len(value)
                    stack.append((value, copied, depth + 1))
            else:
                copied = value
            target[key] = copied
    return top


def _ignored(source: str, ignored: list[tuple[str, str]]) -> Problem:
    names = ", ".join(name for name, _ in ignored)
    whys = "; ".join(f"{name} {why}" for name, why in ignored)
    return Problem(
        source,
        names,
        f"ignored: these settings may come from the workspace, which is not trusted (or this tandem.toml "
        f"changed since tandem started), so they may only make tandem cheaper, quieter or more private "
        f"({whys}). Put them in your user config, or add the workspace to trusted_workspaces there.",
    )


def _resolve_trace_path(
    clean: dict[str, Any], layer: Layer, private_dirs: tuple[str, ...], problems: list[Problem]
) -> None:
    """Make `trace.path` absolute (against the layer's own directory); a workspace's must stay private."""
    trace = clean.get("trace")
    raw = trace.get("path") if isinstance(trace, dict) else None
    if not isinstance(trace, dict) or not isinstance(raw, str) or not raw:
        return
    base = layer.directory or (private_dirs[0] if private_dirs else "")
    path = os.path.normpath(os.path.join(base, os.path.expanduser(raw) if not layer.from_workspace else raw))
    trace["path"] = path
    state = pathlib.Path(private_dirs[0]) if private_dirs else None
    if is_state_file(path, state, rotations=MAX_TRACE_KEEP):
        trace.pop("path")
        problems.append(
            Problem(layer.source, "trace.path", "ignored: it names one of tandem's own state files (the day's spend)")
        )
    elif layer.from_workspace:
        if not really_inside(path, private_dirs):
            trace.pop("path")
            where = " or ".join(private_dirs) or "tandem's state directory"
            problems.append(
                Problem(layer.source, "trace.path", f"ignored: a workspace may only put its trace inside {where}")
            )


def _trusts(merged: Mapping[str, Any]) -> bool:
    return bool(merged.get("trust_workspace")) or bool(merged.get("_trusted_root"))


def mark_trusted_root(layer_values: dict[str, Any], workspace_root: str) -> None:
    """Record on a user layer that it trusts `workspace_root` (set by the loader, which knows the root)."""
    trusted = layer_values.get("trusted_workspaces", [])
    if isinstance(trusted, list) and workspace_root.rstrip("/") in {str(p).rstrip("/") for p in trusted}:
        layer_values["_trusted_root"] = True


def _deep_merge(into: dict[str, Any], new: Mapping[str, Any]) -> None:
    for key, value in new.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _deep_merge(into[key], value)
        elif isinstance(value, Mapping):
            into[key] = {}
            _deep_merge(into[key], value)
        else:
            into[key] = value


def _dataclass_of(annotation: Any) -> type | None:
    """The dataclass in `X` or `X | None`, else None."""
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        return annotation
    if get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in get_args(annotation):
            if dataclasses.is_dataclass(arg) and isinstance(arg, type):
                return arg
    return None


def _validate(
    cls: type, values: Mapping[str, Any], *, prefix: str, source: str, problems: list[Problem]
) -> dict[str, Any]:
    """The subset of `values` that fits `cls`; every misfit becomes a Problem."""
    hints = typing.get_type_hints(cls)
    clean: dict[str, Any] = {}
    for key, value in values.items():
        if key == "_trusted_root":
            clean[key] = value
            continue
        name = f"{prefix}{key}"
        if key not in hints:
            known = ", ".join(sorted(hints))
            problems.append(Problem(source, name, f"unknown key (known here: {known})"))
            continue
        annotation = hints[key]
        sub = _dataclass_of(annotation)
        if sub is not None:
            if not isinstance(value, Mapping):
                problems.append(Problem(source, name, f"expected a table, got {_show(value)}"))
                continue
            clean[key] = _validate(sub, value, prefix=f"{name}.", source=source, problems=problems)
            if sub is ModelConfig:
                _check_model(clean[key], name, source, problems)
            continue
        ok, converted, expected = _coerce(annotation, value, name=name)
        if ok:
            clean[key] = converted
        else:
            problems.append(Problem(source, name, f"expected {expected}, got {_show(value)}; using the default"))
    return clean


def _check_model(table: dict[str, Any], name: str, source: str, problems: list[Problem]) -> None:
    provider = table.get("provider")
    if provider is not None and provider not in IMPLEMENTED_PROVIDERS:
        problems.append(
            Problem(
                source,
                f"{name}.provider",
                f"{provider!r} is not available yet; use one of "
                + ", ".join(repr(p) for p in PROVIDERS if p in IMPLEMENTED_PROVIDERS),
            )
        )
        table.pop("provider")
    named = table.get("provider")
    if table.get("transport") == "websocket" and named is not None and named != "openai-responses":
        problems.append(
            Problem(
                source,
                f"{name}.transport",
                "'websocket' is only for provider 'openai-responses' (the Responses API's WebSocket mode); "
                "using 'http'",
            )
        )
        table.pop("transport")
    key_env = table.get("api_key_env")
    if isinstance(key_env, str) and key_env.startswith(("sk-", "csk-", "gsk_")):
        # Someone pasted the key itself: never keep it, never echo it.
        problems.append(
            Problem(source, f"{name}.api_key_env", "looks like an API key; name the environment variable instead")
        )
        table.pop("api_key_env")


def _coerce(annotation: Any, value: Any, *, name: str) -> tuple[bool, Any, str]:
    origin = get_origin(annotation)
    if origin is Literal:
        choices = get_args(annotation)
        return value in choices, value, "one of " + ", ".join(repr(c) for c in choices)
    if annotation is bool:
        return isinstance(value, bool), value, "true or false"
    if annotation in (int, float):
        return _number(annotation, value, name)
    if annotation is str:
        return isinstance(value, str), value, "a string"
    if origin is tuple:
        ok = isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
        return ok, tuple(value) if ok else value, "a list of strings"
    return False, value, str(annotation)


def _number(annotation: Any, value: Any, name: str) -> tuple[bool, Any, str]:
    """An int key takes whole numbers, a float key any number; either only inside its declared range."""
    whole = annotation is int
    declared = range_for(name)
    if declared is None:
        return False, value, "a key with a declared range (this one has none: completion.config.ranges)"
    expected = declared.describe(whole)
    number = isinstance(value, int) if whole else isinstance(value, int | float)
    if not number or isinstance(value, bool):
        return False, value, expected
    try:
        admitted = declared.admits(value)
    except OverflowError:  # an integer too large for a float
        admitted = False
    if not admitted:
        return False, value, expected
    return True, value if whole else float(value), expected


def _show(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"a {len(str(abs(value)))}-digit number"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _build(cls: type, values: Mapping[str, Any]) -> Any:
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        if key not in hints:
            continue
        sub = _dataclass_of(hints[key])
        kwargs[key] = _build(sub, value) if sub is not None and isinstance(value, Mapping) else value
    return cls(**kwargs)
