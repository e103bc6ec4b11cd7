"""`tandem/status`: the one shape every client shows (lsp/status.py)."""

from __future__ import annotations

from tandem.completion.inline.request import CompletionResult
from tandem.completion.observe.live_stats import LiveFigures, LiveStats
from tandem.completion.observe.trace import TraceRecord
from tandem.lsp.status import TEXT_CHARS, Status


def test_a_new_suggestion_names_its_latency_and_route() -> None:
    status = Status.of_completion(CompletionResult(text="x", source="model", waited_ms=84.4, tier="fast", model="m"))
    assert (status.state, status.text, status.cache_hit) == ("ready", "tandem 84 ms fast", False)
    assert status.tooltip == "Last suggestion in 84 ms, from a new request to the fast model (m)."


def test_a_reused_suggestion_says_cached_and_where_from() -> None:
    stream = Status.of_completion(CompletionResult(text="x", source="stream", waited_ms=2.6, tier="fast", model="m"))
    assert (stream.text, stream.cache_hit) == ("tandem 3 ms reused", True)
    assert "already streaming" in stream.tooltip
    cache = Status.of_completion(CompletionResult(text="x", source="cache", waited_ms=1500, tier="cache"))
    assert cache.text == "tandem 1.5 s cached" and cache.route == ""
    assert cache.tooltip == "Last suggestion in 1.5 s, from the completion cache (no new request)."


def test_no_suggestion_claims_nothing() -> None:
    status = Status.of_completion(CompletionResult(text="", source="cache", waited_ms=5, tier="cache"))
    assert (status.text, status.cache_hit, status.source) == ("tandem", False, "none")
    assert status.tooltip.startswith("No suggestion")


def test_a_failure_is_short_in_the_text_and_whole_in_the_tooltip() -> None:
    error = "provider unavailable: connection refused by 127.0.0.1:9 after 3 tries, the provider may be down"
    status = Status.of_completion(CompletionResult(error=error, source="model", waited_ms=12, tier="fast"))
    assert status.state == "error" and status.error == error
    assert status.text == "tandem ⚠ provider unavailable" and len(status.text) <= TEXT_CHARS
    assert error in status.tooltip


def test_the_json_is_every_field() -> None:
    status = Status.ready()
    assert set(status.to_json()) >= {"state", "text", "tooltip", "latency_ms", "route", "model", "cache_hit", "error"}


def test_the_last_minutes_join_the_tooltip_and_the_fields() -> None:
    live = LiveFigures(window_s=300, requests=40, no_wait_share=0.725, errors=1, budget_tokens_left=18_000)
    result = CompletionResult(text="x", source="stream", waited_ms=2.0, tier="fast", model="m")
    status = Status.of_completion(result, live)
    assert status.tooltip.endswith(
        "Last 5 min: 72% of 40 suggestion requests needed no model wait, 1 error; "
        "18,000 prefetch tokens left this minute."
    )
    data = status.to_json()
    assert (data["no_wait_share"], data["recent_requests"], data["recent_errors"]) == (0.725, 40, 1)
    assert (data["window_s"], data["budget_tokens_left"]) == (300, 18_000)
    assert status.text == "tandem 2 ms reused"  # the status bar text stays short


def test_a_first_request_still_streaming_is_not_called_no_request() -> None:
    """A model request is traced when its stream ends, after its status: the window is then still empty,
    and the tooltip must not say there were no suggestion requests (seen in Emacs' first capture)."""
    live = LiveFigures(window_s=300, requests=0, no_wait_share=None, errors=0)
    result = CompletionResult(text="x", source="model", waited_ms=180.0, tier="fast", model="m", streaming=True)
    tooltip = Status.of_completion(result, live).tooltip
    assert "no suggestion requests" not in tooltip and tooltip.endswith("Last 5 min: 0 errors.")


def test_live_stats_count_the_window_by_the_reports_definition() -> None:
    stats = LiveStats(window_s=60)
    served = TraceRecord(kind="inline", received_ns=1, source="stream", outcome="shown")
    waited = TraceRecord(kind="inline", received_ns=1, source="stream", outcome="shown", waited_for_model=True)
    asked = TraceRecord(kind="completion", received_ns=1, source="model", outcome="shown")
    failed = TraceRecord(kind="edit", received_ns=1, source="model", outcome="error")
    stats.record(served, now_s=0.0)  # leaves the window before the figures are read
    for record in (served, waited, asked, failed):
        stats.record(record, now_s=30.0)
    figures = stats.figures(now_s=70.0)
    assert (figures.requests, figures.no_wait_share, figures.errors) == (3, round(1 / 3, 4), 1)
    assert stats.figures(now_s=200.0).no_wait_share is None


def test_whether_a_status_is_news_does_not_depend_on_the_last_minutes() -> None:
    """`lsp.completing` asks for the last minutes' figures (`Engine.live_figures`) only for a status that will
    be sent: the answer for the status without them must be the answer for the one with them."""
    from tandem.lsp.server import build_server

    live = LiveFigures(window_s=300, requests=40, no_wait_share=0.725, errors=1, budget_tokens_left=18_000)
    results = [
        CompletionResult(text="x", source="model", waited_ms=84.4, tier="fast", model="m"),
        CompletionResult(text="", source="cache", waited_ms=5, tier="cache"),
        CompletionResult(text="", source="model", waited_ms=30, tier="fast", model="m"),
        CompletionResult(error="provider unavailable: refused", source="model", waited_ms=12, tier="fast"),
    ]
    server = build_server(env={})
    asked = 0
    for last in [Status.ready(), *(Status.of_completion(r) for r in results)]:
        for result in results:
            server.last_status = last
            bare, full = Status.of_completion(result), Status.of_completion(result, live)
            assert server.status_is_news(bare) == server.status_is_news(full)
            asked += server.status_is_news(bare)
    assert 0 < asked < len(results) * (len(results) + 1)  # some statuses are news, some are not
