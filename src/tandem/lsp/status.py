"""`tandem/status`: what the server says about itself to the editor's status display, one typed shape.

Every client (the VS Code extension, the Neovim plugin, tandem.el) shows `text` in its status bar,
statusline or mode line and `tooltip` on hover, in `:TandemStatus` or `M-x tandem-status`. Both are
composed here, so clients need no change when fields are added; the other fields are the same facts as
data, for statusline plugins and tests.

The words are the server's vocabulary for routes and sources (`ROUTE_WORDS`, `SOURCE_WORDS`): a status
says what happened to the last request and nothing more. A request answered with no suggestion says so;
it never keeps the previous answer's "cached".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from tandem.lsp.shown import shown

if TYPE_CHECKING:
    from tandem.completion.inline.request import CompletionResult
    from tandem.completion.observe.live_stats import LiveFigures

METHOD = "tandem/status"
# Longest `text`: a status bar item shares its line with others.
TEXT_CHARS = 40

State = Literal["ready", "busy", "error"]

# The models by role, as every message names them.
ROUTE_WORDS = {"fast": "fast model", "accurate": "accurate model"}
# Where a suggestion came from, in the tooltip's words.
SOURCE_WORDS = {
    "model": "a new request to the {route}",
    "stream": "the {route}'s answer already streaming (no new request)",
    "cache": "the completion cache (no new request)",
}


# The status bar's word for a suggestion not asked of a model just now.
SOURCE_TEXT = {"stream": "reused", "cache": "cached"}


def latency_words(ms: float) -> str:
    return f"{ms / 1000:.1f} s" if ms >= 1000 else f"{round(ms)} ms"


def live_words(live: LiveFigures) -> str:
    """The last minutes in one sentence for the tooltip. A request that asked a model joins the figures
    when its stream ends, after its own status: with none in the window yet, the share is left out rather
    than "no suggestion requests" said just after one."""
    minutes = f"{live.window_s / 60:g} min"
    share = (
        f"{live.no_wait_share or 0:.0%} of {live.requests} suggestion requests needed no model wait, "
        if live.requests
        else ""
    )
    errors = f"{live.errors} error{'s' if live.errors != 1 else ''}"
    budget = (
        f"; {live.budget_tokens_left:,} prefetch tokens left this minute" if live.budget_tokens_left is not None else ""
    )
    return f"Last {minutes}: {share}{errors}{budget}.{spend_words(live)}"


def spend_words(live: LiveFigures) -> str:
    """Today's spend: money where a model has a price, else tokens (no price is not "$0.00")."""
    tokens = live.spend_today_tokens
    counted = f"{tokens:,} tokens" if tokens is not None else ""
    if live.spend_today_usd is not None:
        return f" Today: ${live.spend_today_usd:.2f} spent" + (f" ({counted})." if counted else ".")
    if counted:
        return (
            f" Today: {counted} spent (no model has a price: set price_input_per_mtok and "
            "price_output_per_mtok in [models.*] to see money)."
        )
    return ""


def fit(text: str, chars: int = TEXT_CHARS) -> str:
    """`text` cut to `chars`, with an ellipsis when cut."""
    return text if len(text) <= chars else text[: chars - 1].rstrip() + "…"


def failure_kind(error: str) -> str:
    """The kind of a failure, as `completion.providers.errors.describe` words it first ("rate limited by the
    provider: ..." -> "rate limited by the provider")."""
    return error.split(":", 1)[0].strip() or "error"


@dataclass(frozen=True, kw_only=True)
class Status:
    """One `tandem/status` notification. `text` fits a status bar; `tooltip` says it in full."""

    state: State
    text: str
    tooltip: str
    # The last completion: server time from request received to answer, in ms.
    latency_ms: float | None = None
    # "fast" | "accurate" | "" (none asked); `model` is the configured model's name.
    route: str = ""
    model: str = ""
    # "model" (a new request), "stream" (a running or finished stream), "cache", "none" (nothing shown).
    source: str = "none"
    # The suggestion came from model output that already existed: no model was asked for it.
    cache_hit: bool = False
    error: str | None = None
    # The last minutes (`window_s`, from the trace records; see completion/observe/live_stats.py): completion
    # requests, the share of them answered without waiting for a model (0..1, None without requests),
    # and failed requests of any kind.
    window_s: float | None = None
    recent_requests: int = 0
    no_wait_share: float | None = None
    recent_errors: int = 0
    # Prefetch tokens still allowed this minute.
    budget_tokens_left: int | None = None
    # Today's spend on every model, USD at the models' configured prices (`[budget]` counts it; None when
    # no model has a price), and tokens in and out.
    spend_today_usd: float | None = None
    spend_today_tokens: int | None = None
    # Why the accurate model answered although a fast one is configured ("" when it did not).
    stand_in: str = ""

    def to_json(self) -> dict[str, Any]:
        """The notification's fields, every text escaped (`lsp.shown`): a status bar is a screen too."""
        return {key: shown(value) if isinstance(value, str) else value for key, value in asdict(self).items()}

    @staticmethod
    def ready() -> Status:
        return Status(state="ready", text="tandem", tooltip="tandem is ready: suggestions appear as you type.")

    @staticmethod
    def of_completion(result: CompletionResult, live: LiveFigures | None = None) -> Status:
        """The status after a completion request (its suggestion, its failure, or that there was none),
        with the last minutes' figures when `live` is given."""
        status = Status._of_result(result)
        if live is None:
            return status
        return replace(
            status,
            tooltip=f"{status.tooltip} {live_words(live)}",
            window_s=live.window_s,
            recent_requests=live.requests,
            no_wait_share=live.no_wait_share,
            recent_errors=live.errors,
            budget_tokens_left=live.budget_tokens_left,
            spend_today_usd=live.spend_today_usd,
            spend_today_tokens=live.spend_today_tokens,
        )

    def after_recovery(self, message: str) -> Status:
        """This status while a model's outage has just ended: said in the status bar too ("back"), not only
        in a notification the user may have missed."""
        return replace(self, text=fit(f"{self.text} ✓ back"), tooltip=f"{message} {self.tooltip}")

    @staticmethod
    def _of_result(result: CompletionResult) -> Status:
        latency_ms = round(result.waited_ms, 1)
        route = result.tier if result.tier in ROUTE_WORDS else ""
        model = result.model
        role = ROUTE_WORDS.get(route, "model")
        named = f"{role} ({model})" if model else role
        if result.error:
            kind = failure_kind(result.error)
            return Status(
                state="error",
                text=fit(f"tandem ⚠ {kind}"),
                tooltip=f"No suggestion: {result.error}. tandem keeps serving; suggestions come back when the "
                "model answers.",
                latency_ms=latency_ms,
                route=route,
                model=model,
                source=result.source,
                error=result.error,
            )
        if not result.text:
            return Status(
                state="ready",
                text="tandem",
                tooltip="No suggestion at the last request (nothing useful to add there).",
                latency_ms=latency_ms,
                route=route,
                model=model,
                source="none",
            )
        cache_hit = result.source in ("stream", "cache")
        where = SOURCE_WORDS.get(result.source, "the {route}").format(route=named)
        # A new request names its model's role; an answer read from a stream already running (typed
        # through, or started by an earlier keystroke) is "reused"; the completion cache's is "cached".
        shown = SOURCE_TEXT.get(result.source) or route or "model"
        # The accurate model standing in for a fast one that is down: said where the user looks, with why.
        standing_in = " (fast down)" if result.stand_in else ""
        why = f" Why the accurate model: {result.stand_in}." if result.stand_in else ""
        return Status(
            state="ready",
            text=fit(f"tandem {latency_words(latency_ms)} {shown}{standing_in}"),
            tooltip=f"Last suggestion in {latency_words(latency_ms)}, from {where}.{why}",
            stand_in=result.stand_in,
            latency_ms=latency_ms,
            route=route,
            model=model,
            source=result.source,
            cache_hit=cache_hit,
        )
