"""The circuit breaker per model: permanent errors stop requests for a long, growing back-off; transient
ones back off exponentially with jitter; each outage is announced once, and its end once."""

from __future__ import annotations

import random
import time

from tandem.completion.providers.breaker import (
    ANNOUNCE_AFTER,
    PERMANENT_BACKOFF_S,
    PERMANENT_MAX_S,
    TRANSIENT_MAX_S,
    Breaker,
    kind_of,
)
from tandem.completion.providers.errors import BackendTimeout, BackendUnavailable, BadResponse, NotSent, RateLimited


def test_kinds() -> None:
    assert kind_of(BadResponse("401", permanent=True)) == "permanent"
    assert kind_of(BadResponse("stream truncated")) == "transient"
    assert kind_of(BackendUnavailable("refused")) == "transient"
    assert kind_of(BackendTimeout("connect")) == "transient"
    assert kind_of(RateLimited("429", retry_after_s=2)) is None
    assert kind_of(NotSent("a private file")) is None


def test_permanent_error_opens_at_once_and_is_announced_once() -> None:
    breaker = Breaker("fast model")
    notice = breaker.failure(BadResponse("answered 401 Unauthorized", permanent=True), now_s=0.0)
    assert notice is not None and not notice.recovered and "401" in notice.message
    assert not breaker.allows(PERMANENT_BACKOFF_S - 1) and breaker.allows(PERMANENT_BACKOFF_S)
    # The try after the back-off fails too: longer back-off, no second message.
    assert breaker.failure(BadResponse("answered 401", permanent=True), now_s=PERMANENT_BACKOFF_S) is None
    assert breaker.remaining_s(PERMANENT_BACKOFF_S) == 2 * PERMANENT_BACKOFF_S
    for _ in range(20):
        breaker.failure(BadResponse("401", permanent=True), now_s=0.0)
    assert breaker.remaining_s(0.0) == PERMANENT_MAX_S
    recovered = breaker.success()
    assert recovered is not None and recovered.recovered
    assert breaker.success() is None  # recovery is announced once
    assert breaker.allows(0.0)


def test_transient_errors_back_off_exponentially_with_jitter_and_announce_after_a_few() -> None:
    breaker = Breaker("fast model", rng=random.Random(7))
    backoffs = []
    notices = []
    for _ in range(12):
        notices.append(breaker.failure(BackendUnavailable("connection refused"), now_s=0.0))
        backoffs.append(breaker.remaining_s(0.0))
    assert backoffs[0] == 0.0  # one failure: the next keystroke may try at once
    for n, backoff in enumerate(backoffs[1:]):
        ceiling = min(0.5 * 2**n, TRANSIENT_MAX_S)
        assert ceiling / 2 <= backoff <= ceiling
    assert [n is not None for n in notices].index(True) == ANNOUNCE_AFTER - 1
    assert sum(n is not None for n in notices) == 1


def test_a_single_blip_is_not_news() -> None:
    breaker = Breaker("fast model")
    assert breaker.failure(BackendUnavailable("reset"), now_s=0.0) is None
    assert breaker.success() is None


async def test_the_accurate_tier_serves_completions_while_the_fast_one_is_held_off_only_if_chosen() -> None:
    import httpx

    from tandem.completion.config.tree import ModelConfig, ModelsConfig
    from tandem.completion.providers.tiers import Tiers

    async with httpx.AsyncClient() as client:
        tiers = Tiers(client, env={})
        models = ModelsConfig(
            fast=ModelConfig(base_url="http://127.0.0.1:9/v1", model="fast"),
            accurate=ModelConfig(base_url="http://127.0.0.1:9/v1", model="accurate"),
        )
        assert tiers.configure(models) == []
        fast, accurate = tiers.get("fast"), tiers.get("accurate")
        assert fast is not None and accurate is not None
        assert tiers.for_completion() is fast
        fast.breaker.failure(BadResponse("answered 401", permanent=True), now_s=time.perf_counter())
        # Off by default ([completion] fallback_to_accurate): the held-off fast model, which answers with why.
        assert fast.holding_off() and tiers.for_completion() is fast
        assert fast.hold_reason().startswith("fast model refuses requests: bad response from provider: answered 401")
        tiers.fallback = True
        assert tiers.for_completion() is accurate
        accurate.breaker.failure(BadResponse("answered 403", permanent=True), now_s=time.perf_counter())
        assert tiers.for_completion() is fast  # both held off: the fast one, which answers empty
        # A configuration change starts the model afresh.
        tiers.configure(ModelsConfig(fast=ModelConfig(base_url="http://127.0.0.1:9/v1", model="fast-2")))
        renewed = tiers.get("fast")
        assert renewed is not None and not renewed.holding_off()
        await tiers.aclose()


def test_a_superseded_requests_response_still_classifies_its_provider() -> None:
    import httpx

    from tandem.completion.providers.breaker import abandoned_error

    request = httpx.Request("POST", "http://provider.test/v1/chat/completions")

    def response(status: int, content_type: str) -> httpx.Response:
        return httpx.Response(status, headers={"content-type": content_type}, request=request)

    refused = abandoned_error(response(401, "application/json"))
    assert isinstance(refused, BadResponse) and refused.permanent
    page = abandoned_error(response(200, "text/html; charset=utf-8"))
    assert isinstance(page, BadResponse) and page.permanent
    assert isinstance(abandoned_error(response(503, "text/plain")), BackendUnavailable)
    assert abandoned_error(response(200, "text/event-stream")) is None
    assert abandoned_error(response(429, "application/json")) is None


async def test_a_401_that_arrives_after_its_request_was_superseded_counts_for_the_breaker() -> None:
    """End to end over loopback: the provider holds its 401 until the request that asked was cancelled (the
    user typed on). The transport still closes the response and tells its observers, and the response
    they get says which provider answered: the transport's inner response comes without its request, and
    reading the host of that raised, so the outage went uncounted (an error in the log instead)."""
    import asyncio
    import contextlib

    import httpx

    from tandem.completion.providers.breaker import abandoned_error
    from tandem.completion.providers.transport import ResilientTransport

    asked, answer = asyncio.Event(), asyncio.Event()

    async def provider(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        asked.set()
        await answer.wait()
        body = b'{"error": "invalid api key"}'
        writer.write(
            b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(body), body)
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(provider, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    transport = ResilientTransport(lambda: httpx.AsyncHTTPTransport(), max_connections=2)
    seen: list[BaseException | None] = []
    transport.observers.append(lambda response: seen.append(abandoned_error(response)))
    async with server, httpx.AsyncClient(transport=transport) as client:
        request = asyncio.create_task(client.post(f"http://127.0.0.1:{port}/v1/chat/completions", json={}))
        await asyncio.wait_for(asked.wait(), 10)
        request.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await request
        answer.set()
        await asyncio.wait_for(transport.drain(), 10)
    [error] = seen
    assert isinstance(error, BadResponse) and error.permanent and "127.0.0.1 answered 401" in str(error)


async def test_any_change_of_settings_asks_a_held_off_provider_again_at_once() -> None:
    """The user fixed what was wrong somewhere tandem cannot see (the provider account, a key file) and
    touched their settings: the model is asked at the next request, not after the hold-off; a failure then
    holds it off again, for longer, and a success is announced as the recovery."""
    import httpx

    from tandem.completion.config.tree import ModelConfig, ModelsConfig
    from tandem.completion.providers.tiers import Tiers

    async with httpx.AsyncClient() as client:
        tiers = Tiers(client, env={})
        models = ModelsConfig(fast=ModelConfig(base_url="http://127.0.0.1:9/v1", model="fast"))
        tiers.configure(models)
        fast = tiers.get("fast")
        assert fast is not None
        fast.breaker.failure(BadResponse("answered 401", permanent=True), now_s=time.perf_counter())
        assert fast.holding_off()
        tiers.configure(models)  # didChangeConfiguration, the model's own settings unchanged
        assert tiers.get("fast") is fast and not fast.holding_off()
        fast.breaker.failure(BadResponse("answered 401", permanent=True), now_s=time.perf_counter())
        assert fast.breaker.remaining_s(time.perf_counter()) > PERMANENT_BACKOFF_S
        tiers.configure(models)
        recovered = fast.breaker.success()
        assert recovered is not None and recovered.recovered
        await tiers.aclose()


def test_a_long_outage_is_probed_every_few_seconds() -> None:
    """Issue 36 item 9: after a long outage (connection refused for minutes) the provider is asked again
    within seconds, never a minute later: the first key after it returns gets a suggestion soon."""
    breaker = Breaker("fast model", rng=random.Random(3))
    now = 0.0
    for _ in range(40):
        breaker.failure(BackendUnavailable("connection refused"), now_s=now)
        wait = breaker.remaining_s(now)
        assert wait <= 5.0, wait
        now += wait
    assert not breaker.allows(now - 0.01) and breaker.allows(now)
    assert "connection refused" in breaker.last_error


def test_an_outage_told_only_by_the_status_ends_in_the_status_alone() -> None:
    """Two failures (not yet announced: `ANNOUNCE_AFTER` is 3), then a key the breaker refuses: that user
    read "fast model unreachable" in the status, so the provider's next success is a recovery notice, a
    quiet one (the status says "back"; no notification pops up for an outage that never popped up)."""
    breaker = Breaker("fast model", rng=random.Random(1))
    for _ in range(ANNOUNCE_AFTER - 1):
        assert breaker.failure(BackendUnavailable("answered 500"), now_s=0.0) is None
    assert not breaker.allows(0.0)
    breaker.refuse()
    quiet = breaker.success()
    assert quiet is not None and quiet.recovered and not quiet.loud
    assert breaker.success() is None  # said once
    # Without a refused request in between, two failures and a success stay unsaid.
    for _ in range(ANNOUNCE_AFTER - 1):
        breaker.failure(BackendUnavailable("answered 500"), now_s=0.0)
    assert breaker.success() is None
    # An announced outage's end is loud.
    for _ in range(ANNOUNCE_AFTER):
        breaker.failure(BackendUnavailable("answered 500"), now_s=0.0)
    loud = breaker.success()
    assert loud is not None and loud.recovered and loud.loud
