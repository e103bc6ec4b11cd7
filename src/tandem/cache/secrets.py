"""What a credential looks like in a text: detect-secrets' maintained rules, and tandem's own where they add.

The rules come from two sources, each named in the reason a refusal gives:

    detect-secrets  Yelp's detect-secrets (a maintained, installable rule set): every detector that is a
                    set of regular expressions (`RegexBasedDetector`, its `denylist`) except those that flag
                    ordinary code: `BasicAuthDetector` (any `scheme://user:pass@` in an example URL),
                    `IPPublicDetector` (addresses), `JwtTokenDetector` (any `eyJ.x.y`; detect-secrets
                    itself confirms a JWT by decoding it; tandem's own rule wants a JSON header and
                    payload), the keyword and entropy detectors (any
                    `password = ...` line, any random-looking string), and the two IBM detectors, whose
                    service-name part may be empty (any `key = '<44 letters>'`). A refusal stops a whole document
                    from being completed, so a detector has to be specific.
    tandem          formats detect-secrets does not know or knows too narrowly (`OWN_RULES`, each with
                    the gap it fills; `bench/bench_secret_rules.py` measures what each source catches).

Speed: every rule is screened at once by one RE2 alternation (linear in the text, one pass), and only a line
the screen matched is checked with each rule's own (Python) pattern, which names it. A keystroke checks the
lines it touched; opening a document checks the document in pieces (`completion.gate`).

Memory: detect-secrets, and the `requests` it imports for its (unused) verifiers, are imported when the
first text is checked, not with this module (about 7 MB the server does not need before its first check).
The rules are compiled then, once, under a lock; a check never runs without them.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

import re2

# detect-secrets detectors left out, and why (the module docstring says more).
EXCLUDED_DETECTORS = frozenset(
    {"BasicAuthDetector", "IPPublicDetector", "JwtTokenDetector", "KeywordDetector", "Base64HighEntropyString",
     "HexHighEntropyString", "IbmCloudIamDetector", "IbmCosHmacDetector"}
)  # fmt: skip


@dataclass(frozen=True)
class Rule:
    """One credential pattern: what it finds (for the reason), which rule set it comes from."""

    what: str
    pattern: re.Pattern[str]
    source: str


# tandem's own rules: only formats detect-secrets misses (each comment names the gap).
OWN_RULES = (
    # detect-secrets lists seven PEM headers; any `-----BEGIN ... PRIVATE KEY-----` (ENCRYPTED, DSA, ...).
    Rule("Private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"), "tandem"),
    # Not in detect-secrets at all.
    Rule("Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}"), "tandem"),
    # detect-secrets' OpenAI rule needs the legacy `T3BlbkFJ` marker; project and service keys lack it.
    Rule("OpenAI-style API key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}"), "tandem"),
    # detect-secrets has the classic gh*_ tokens only; fine-grained tokens start github_pat_.
    Rule("GitHub fine-grained token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{60,}"), "tandem"),
    # detect-secrets needs digits between the dashes (`xoxb-1-...`); newer tokens and legacy ones vary.
    Rule("Slack token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}"), "tandem"),
    # Not in detect-secrets.
    Rule("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"), "tandem"),
    # detect-secrets: live keys of exactly 24 characters; test keys and longer keys too.
    Rule("Stripe key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{20,}"), "tandem"),
    # Not in detect-secrets.
    Rule("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}"), "tandem"),
    # Not in detect-secrets (HashiCorp Vault service, batch and recovery tokens).
    Rule("Vault token", re.compile(r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}"), "tandem"),
    # Not in detect-secrets (personal, OAuth and refresh tokens).
    Rule("DigitalOcean token", re.compile(r"\bdo[opr]_v1_[a-f0-9]{64}\b"), "tandem"),
    # detect-secrets wants whitespace or a double quote around it (a single-quoted one passes).
    Rule("Artifactory token", re.compile(r"\bAKC[a-zA-Z0-9]{10,}\b"), "tandem"),
    # detect-secrets finds npm tokens only in an .npmrc `_authToken=` line.
    Rule("npm token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), "tandem"),
    # detect-secrets leaves out every JWT it cannot decode; a header and a payload that are both base64url
    # JSON objects (`eyJ` is `{"`) followed by a signature is a token, not code.
    Rule("JSON Web Token", re.compile(r"\beyJ[\w-]{10,}\.eyJ[\w-]{10,}\.[\w-]{10,}", re.ASCII), "tandem"),
    # The rest are not in detect-secrets: each vendor's documented prefix and length.
    Rule("Shopify token", re.compile(r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"), "tandem"),
    Rule("Mailgun API key", re.compile(r"\bkey-[0-9a-f]{32}\b"), "tandem"),
    Rule("Square access token", re.compile(r"\b(?:sq0atp-[\w-]{22}|EAAA[\w+=-]{60})(?![\w-])", re.ASCII), "tandem"),
    Rule("Databricks token", re.compile(r"\bdapi[a-f0-9]{32}(?:-\d)?\b"), "tandem"),
    Rule("age secret key", re.compile(r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b"), "tandem"),
    Rule("Linear API key", re.compile(r"\blin_api_[A-Za-z0-9]{40}\b"), "tandem"),
    Rule("Pulumi token", re.compile(r"\bpul-[a-f0-9]{40}\b"), "tandem"),
    Rule("Doppler token", re.compile(r"\bdp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9._-]{40,}"), "tandem"),
    Rule(
        "Azure AD client secret",
        re.compile(r"(?<![\w~.-])[\w~.]{3}\dQ~[\w~.-]{31,34}(?![\w~.-])", re.ASCII),
        "tandem",
    ),
)


def maintained_rules() -> tuple[Rule, ...]:
    """detect-secrets' regular-expression detectors, less `EXCLUDED_DETECTORS`."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    rules: list[Rule] = []
    mapping: dict[str, Any] = dict(get_mapping_from_secret_type_to_class())
    for secret_type, detector in sorted(mapping.items()):
        if not issubclass(detector, RegexBasedDetector) or detector.__name__ in EXCLUDED_DETECTORS:
            continue
        for pattern in detector().denylist:
            rules.append(Rule(secret_type, pattern, "detect-secrets"))
    return tuple(rules)


# Lookarounds (which RE2 lacks) are dropped for the screen, and repetitions past RE2's bound of 1,000
# opened: the screen finds a superset, the rule's own pattern decides.
_LOOKAROUND = re.compile(r"\(\?<?[=!](?:[^()\\]|\\.)*\)")
_LONG_REPEAT = re.compile(r"\{(\d+),\d{4,}\}")


def _screenable(rule: Rule) -> str:
    source = _LONG_REPEAT.sub(r"{\1,}", _LOOKAROUND.sub("", rule.pattern.pattern))
    flags = "i" if rule.pattern.flags & re.IGNORECASE else ""
    return f"(?{flags}m:{source})" if flags else f"(?m:{source})"


_compiled: tuple[tuple[Rule, ...], Any] | None = None
_compiling = threading.Lock()


def rules() -> tuple[Rule, ...]:
    """Every rule a check applies: detect-secrets' (`maintained_rules`), then tandem's (`OWN_RULES`)."""
    return _compile()[0]


def _compile() -> tuple[tuple[Rule, ...], Any]:
    """The rules and their RE2 screen, compiled by the first caller (any thread) and kept."""
    global _compiled
    if _compiled is None:
        with _compiling:
            if _compiled is None:
                every = (*maintained_rules(), *OWN_RULES)
                _compiled = (every, re2.compile("|".join(_screenable(rule) for rule in every)))
    return _compiled


def credential_in(text: str) -> str:
    """What credential `text` holds, on which line and by whose rule ("AWS Access Key, line 3,
    detect-secrets rule"), or "" if none. Never the credential itself."""
    every, screen = _compile()
    for match in screen.finditer(text):
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        line_text = text[start : len(text) if end < 0 else end]
        for rule in every:
            if rule.pattern.search(line_text):
                line = text.count("\n", 0, start) + 1
                return f"{rule.what}, line {line}, {rule.source} rule"
    return ""
