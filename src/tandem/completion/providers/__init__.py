"""The one path to a model: tiers of configured models, backends behind one narrow seam, the transport.

Start at `tiers.Tier.reading` (every feature streams through it, so the breaker, the hold-off and the local limits
are one code path); `breaker` leaves a failing provider alone; `slots` gives a local server one request per
slot; `errors` is the error tree; `http`, `transport`, `aio_pool` and `sse` are the shared HTTP client, the
transport that cancellation cannot wedge, the connection pool under it (aiohttp's) and the event-stream
parser; `backends/` speaks each provider's API. Nothing here imports a feature: each builds its own prompt
(`base.ModelRequest`) and cleans its own answers.
"""
