"""The one path to a model: tiers of configured models, backends behind one narrow seam, the transport.

Start at `tiers.Tier.read` (every feature streams through it, so the breaker, the hold-off and the trace are one
code path); `breaker` leaves a failing provider alone; `errors` is the error tree; `http`, `transport` and
`sse` are the shared HTTP client, its pool and the event-stream parser; `slots` orders the requests in
flight to one model server (the user's before speculation's); `backends/` speaks each provider's API.
"""
