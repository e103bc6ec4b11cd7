"""A circuit breaker per model: how long to leave a failing provider alone, and when to tell the user.

A pure state machine over (now, outcome); `tiers.Tier` feeds it each stream's outcome and asks it before
each request. Errors are of two kinds (`kind_of`):

- **permanent**: retrying will not help until something changes (401/403/404, a JSON or HTML body where a
  stream was expected, no usable model): the model is left alone for `PERMANENT_BACKOFF_S`, doubling on each
  failed try after it, up to `PERMANENT_MAX_S`. A configuration change of the model builds a new tier, so a
  new breaker; any other change of settings ends the hold-off (`settings_changed`): the next request tries.
- **transient**: it may pass (connection refused, DNS, 5xx, timeouts, a truncated stream): from the
  second failure in a row, exponential back-off with jitter from `TRANSIENT_BASE_S` up to `TRANSIENT_MAX_S`.

After a back-off expires one request tries the provider (`probing`: the others are held until its
outcome); success closes the breaker, failure opens it for longer. An outage is announced once: at once for
a permanent error, after `ANNOUNCE_AFTER` transient failures in a row (a single dropped connection is not
an outage); its end is announced once, and only if its start was. An end of failures whose start was not
announced is still news to a user who was told "unreachable" by a request the breaker held: that recovery
is a quiet notice (`Notice.loud` False: the status says it, no notification pops up).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from tandem.completion.providers.errors import (
    BackendTimeout,
    BackendUnavailable,
    BadResponse,
    CompletionError,
    NotConfigured,
    RateLimited,
    RequestRefused,
    describe,
)

PERMANENT_BACKOFF_S = 60.0
PERMANENT_MAX_S = 900.0
TRANSIENT_BASE_S = 0.5
# The longest a provider that cannot be reached is left alone: while it is down one probe goes out at most
# this often (a key after the back-off asks it; the other keys wait for that probe's outcome), so the first
# suggestion after it comes back is at most this late. (It was 60 s: users waited a minute after the model
# returned.)
TRANSIENT_MAX_S = 5.0
ANNOUNCE_AFTER = 3


def kind_of(error: CompletionError) -> str | None:
    """'permanent', 'transient', or None for an error the breaker leaves to others (429: Retry-After; errors
    that are not the provider's)."""
    if isinstance(error, RateLimited | RequestRefused):
        return None
    if isinstance(error, NotConfigured) or (isinstance(error, BadResponse) and error.permanent):
        return "permanent"
    if isinstance(error, BackendUnavailable | BackendTimeout | BadResponse):
        return "transient"
    return None  # not the provider's doing (the gate refused the prompt, say)


def abandoned_error(response: Any) -> CompletionError | None:
    """What a response nobody read says about its provider (status and content type only; the body of a
    superseded request is never read): the same kinds as the backends' own mapping."""
    status = response.status_code
    host = response.request.url.host
    if status in (401, 403, 404):
        return BadResponse(f"{host} answered {status} {response.reason_phrase}", permanent=True)
    if status >= 500:
        return BackendUnavailable(f"{host} answered {status} {response.reason_phrase}")
    content_type = response.headers.get("content-type", "")
    if 200 <= status < 300 and content_type.startswith(("application/json", "text/html")):
        return BadResponse(f"{host} answered {content_type.split(';')[0]} instead of an event stream", permanent=True)
    return None


@dataclass(frozen=True)
class Notice:
    """What to tell the user: an outage began (`recovered` False) or ended."""

    message: str
    recovered: bool
    # A notification as well as the status; False for a recovery only the status had reason to mention.
    loud: bool = True


@dataclass
class Breaker:
    model: str
    rng: random.Random = field(default_factory=random.Random)
    open_until_s: float = 0.0
    failures: int = 0
    kind: str | None = None
    announced: bool = False
    # A request is trying the provider again after a back-off; others wait for its outcome.
    probing: bool = False
    # The last failure, in the user's words (`errors.describe`).
    last_error: str = ""
    # A request was refused while the breaker held the provider off: its user was told "unreachable".
    refused: bool = False

    def allows(self, now_s: float) -> bool:
        return now_s >= self.open_until_s and not (self.failures and self.probing)

    def refuse(self) -> None:
        """A request is answered "unreachable" without asking the provider (`allows` said no)."""
        self.refused = True

    def settings_changed(self) -> None:
        """The user changed settings: whatever they fixed (a key file, the model name in another layer, the
        provider's own account), the next request tries the provider at once instead of waiting out the
        hold-off. A failure then opens the breaker again, for longer; a success announces the recovery."""
        self.open_until_s, self.probing = 0.0, False

    def remaining_s(self, now_s: float) -> float:
        return max(0.0, self.open_until_s - now_s)

    def success(self) -> Notice | None:
        was_announced, was_refused = self.announced, self.refused
        self.failures, self.kind, self.open_until_s, self.announced = 0, None, 0.0, False
        self.last_error, self.refused = "", False
        if was_announced or was_refused:
            return Notice(f"tandem: {self.model} is answering again.", recovered=True, loud=was_announced)
        return None

    def failure(self, error: CompletionError, now_s: float) -> Notice | None:
        kind = kind_of(error)
        if kind is None:
            return None
        self.failures = self.failures + 1 if self.kind == kind else 1
        self.kind, self.last_error = kind, describe(error)
        if kind == "permanent":
            backoff_s = min(PERMANENT_BACKOFF_S * 2 ** (self.failures - 1), PERMANENT_MAX_S)
        elif self.failures == 1:
            backoff_s = 0.0  # one dropped connection: the next keystroke may try at once
        else:
            ceiling = min(TRANSIENT_BASE_S * 2 ** (self.failures - 2), TRANSIENT_MAX_S)
            backoff_s = ceiling * (0.5 + 0.5 * self.rng.random())  # jitter: no herd of retries in step
        self.open_until_s = now_s + backoff_s
        if self.announced or (kind == "transient" and self.failures < ANNOUNCE_AFTER):
            return None
        self.announced = True
        if kind == "permanent":
            what = f"refuses tandem's requests ({describe(error)}); check its configuration (key, model, URL)"
        else:
            what = f"cannot be reached ({describe(error)})"
        return Notice(f"tandem: {self.model} {what}. Trying again in {backoff_s:.0f} s, then less often.", False)
