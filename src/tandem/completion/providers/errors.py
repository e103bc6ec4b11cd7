"""Why a completion could not be produced.

    CompletionError
    ├── NotConfigured        no model is configured for the tier that was asked for
    ├── BackendUnavailable   connection refused or reset, DNS failure, 5xx
    │   └── RateLimited      429; carries the provider's Retry-After (seconds) when it sent one
    ├── BackendTimeout       connect/read timeout, a stalled stream, or the per-completion deadline
    ├── BadResponse          4xx other than 429, malformed or truncated stream, a body that is not the API
    │                        (`permanent`: 401/403/404 or a body that is not a stream: retrying cannot help)
    └── NotSent              the gate (`completion.gate`) refused the prompt: nothing was sent

The edit path adds its own branch (`completion.edit.file_edits.EditError`: parse, invalid, conflict); a
subclass may carry its own `words` for `describe`.

`describe()` is the one place that maps an error to the words a user sees; every layer above raises or
logs these, never a raw httpx exception.
"""

from __future__ import annotations


class CompletionError(Exception):
    """Base of every failure to produce a completion."""


class NotConfigured(CompletionError):
    """No usable model is configured."""


class BackendUnavailable(CompletionError):
    """The provider could not be reached or failed (connection error, 5xx)."""


class RateLimited(BackendUnavailable):
    """The provider answered 429."""

    def __init__(self, message: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class BackendTimeout(CompletionError):
    """A phase took longer than its limit (connect, read, stall, or the whole completion)."""


class BadResponse(CompletionError):
    """The provider answered, but not with something we can use."""

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        # Retrying cannot help until the configuration changes (providers.breaker).
        self.permanent = permanent


class RequestRefused(BadResponse):
    """The provider refused this one request (400, 413, 422: too long for its context, say) and would serve
    another: not a sign that it is down, so the breaker leaves it alone."""


class NotSent(CompletionError):
    """The prompt may not leave the machine (a private or secret-holding file); the reason names the rule."""

    words = "not sent to a model"


def describe(error: BaseException) -> str:
    """One line for a user or a log: the kind of failure and its detail. Never includes secrets."""
    kinds: list[tuple[type[BaseException], str]] = [
        (NotConfigured, "no model configured"),
        (RateLimited, "rate limited by the provider"),
        (BackendUnavailable, "provider unavailable"),
        (BackendTimeout, "provider timed out"),
        (BadResponse, "bad response from provider"),
    ]
    own = getattr(type(error), "words", None)
    if isinstance(own, str):
        kinds.insert(0, (type(error), own))
    for kind, words in kinds:
        if isinstance(error, kind):
            detail = str(error)
            return f"{words}: {detail}" if detail else words
    return f"unexpected error: {type(error).__name__}: {error}"
