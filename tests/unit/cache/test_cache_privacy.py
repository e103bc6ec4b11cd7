"""What may leave the machine: ignore files, secret-looking names, size, binary content, credentials."""

from __future__ import annotations

import inspect
import json.decoder
import pathlib
import subprocess
import sys

import pytest

from tandem.cache.privacy import PrivacyFilter, PrivacyPolicy

IGNORES = {
    ".gitignore": "build/\n*.log\n!keep.log\n# comment\n",
    "src/.tandemignore": "generated_*.py\n",
    "src/vendor/.gitignore": "!generated_ok.py\n",
}


@pytest.fixture
def privacy() -> PrivacyFilter:
    return PrivacyFilter(ignore_files=IGNORES, policy=PrivacyPolicy(opt_in=("config/.env.example",)))


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("build/out.py", "ignored by .gitignore (pattern 'build/')"),
        ("deep/build/x.py", "ignored by .gitignore (pattern 'build/')"),
        ("server.log", "ignored by .gitignore (pattern '*.log')"),
        ("src/generated_api.py", "ignored by src/.tandemignore (pattern 'generated_*.py')"),
        ("src/vendor/generated_no.py", "ignored by src/.tandemignore (pattern 'generated_*.py')"),
        (".env", "looks like a secret"),
        ("app/.env.production", "looks like a secret"),
        ("certs/server.pem", "looks like a secret"),
        ("keys/tls.key", "looks like a secret"),
        ("home/.ssh/id_rsa", "looks like a secret"),
        ("id_ed25519.pub", "looks like a secret"),
        ("deploy/credentials.json", "looks like a secret"),
        (".aws/credentials", "looks like a secret"),
        ("infra/prod.tfstate", "looks like a secret"),
        ("repo/.git/config", "inside .git"),
    ],
)
def test_refused_paths_say_why(privacy: PrivacyFilter, path: str, reason: str) -> None:
    verdict = privacy.check_path(path)
    assert not verdict.allowed and not verdict
    assert reason in verdict.reason


@pytest.mark.parametrize(
    "path",
    [
        "keep.log",  # re-included by `!keep.log`
        "generated_top.py",  # the .tandemignore in src/ does not apply above it
        "src/vendor/generated_ok.py",  # a deeper ignore file re-includes it
        "config/.env.example",  # explicitly opted in
        "Lib/secrets.py",  # a module named secrets is code, not a secret
        "src/credentials.py",
        "src/main.py",
    ],
)
def test_allowed_paths(privacy: PrivacyFilter, path: str) -> None:
    assert privacy.check_path(path).allowed


def test_ignore_files_can_be_replaced_and_removed(privacy: PrivacyFilter) -> None:
    assert not privacy.check_path("server.log")
    privacy.set_ignore_file(".gitignore", "dist/\n")
    assert privacy.check_path("server.log")
    assert not privacy.check_path("dist/a.js")
    privacy.remove_ignore_file(".gitignore")
    assert privacy.check_path("dist/a.js")


def test_a_line_that_is_no_pattern_is_skipped_and_the_rest_of_the_file_applies() -> None:
    # Git skips a lone "!" or "\\" (a real repository's test data has such files); the rest must apply.
    privacy = PrivacyFilter()
    assert privacy.set_ignore_file("vendor/.gitignore", "!\nkeys.py\n\\\n*.pem\n") == ["!", "\\"]
    assert not privacy.check_path("vendor/keys.py") and not privacy.check_path("vendor/a/b.pem")
    assert privacy.check_path("vendor/other.py") and privacy.check_path("keys.py")
    assert privacy.set_ignore_file(".gitignore", "dist/\n") == []


def test_content_checks(privacy: PrivacyFilter) -> None:
    real = pathlib.Path(inspect.getsourcefile(json.decoder) or "").read_bytes()
    assert privacy.check("Lib/json/decoder.py", real).allowed
    assert privacy.check_content("a.py", b"abc\x00def").reason == "binary (NUL bytes)"
    assert privacy.check_content("a.py", "abc\x00def").reason == "binary (NUL characters)"
    assert privacy.check_content("a.py", b"\xff\xfe\xfa").reason == "binary (not UTF-8)"
    small = PrivacyFilter(policy=PrivacyPolicy(max_file_bytes=100))
    assert small.check_content("a.py", "x" * 101).reason == "too large (101 bytes > 100)"
    assert small.check_content("a.py", "é" * 60).reason == "too large (120 bytes > 100)"


@pytest.mark.parametrize(
    ("content", "what"),
    [
        ('AWS_KEY = "AKIAIOSFODNN7EXAMPLE"\n', "AWS Access Key"),
        ("x = 1\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n", "Private Key"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\n", "Private Key"),
        ('key = "sk-proj-' + "a1B2" * 12 + '"', "OpenAI-style API key"),
        ('key = "sk-ant-api03-' + "x" * 40 + '"', "Anthropic API key"),
        ("token = 'ghp_" + "A" * 36 + "'", "GitHub Token"),
        ("SLACK = 'xoxb-1234567890-abcdef'", "Slack Token"),
        ("g = 'AIza" + "b" * 35 + "'", "Google API key"),
    ],
)
def test_credential_patterns_refuse_even_opted_in_files(privacy: PrivacyFilter, content: str, what: str) -> None:
    verdict = privacy.check("config/.env.example", content)
    assert not verdict.allowed
    assert verdict.reason.startswith(f"contains a credential ({what}, line ")
    assert content.strip() not in verdict.reason  # never echo the secret


@pytest.mark.parametrize(
    "content",
    [
        'api_key = "sk-..."  # placeholder\n',
        "PUBLIC = '-----BEGIN PUBLIC KEY-----'\n",
        "def askit(): return 'task-runner'\n",
    ],
)
def test_lookalikes_are_not_credentials(privacy: PrivacyFilter, content: str) -> None:
    assert privacy.check("src/main.py", content).allowed


# Run in a fresh interpreter: detect-secrets is not loaded by starting the server, and the first check (from
# eight threads at once) loads it and refuses a credential in every one of them.
_FIRST_CHECK = """
import json, sys, threading
import tandem.lsp.server
from tandem.cache.privacy import PrivacyFilter
before = sorted(m for m in ("detect_secrets", "requests") if m in sys.modules)
privacy = PrivacyFilter()
reasons = []
def check():
    reasons.append(privacy.check("src/app.py", "x = 1\\nkey = 'AKIAIOSFODNN7EXAMPLE'\\n").reason)
threads = [threading.Thread(target=check) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps({"before": before, "after": "detect_secrets" in sys.modules, "reasons": reasons}))
"""


def test_detect_secrets_loads_at_the_first_check_and_the_first_check_refuses() -> None:
    done = subprocess.run([sys.executable, "-P", "-c", _FIRST_CHECK], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["before"] == []  # the server's imports do not load detect-secrets or requests
    assert seen["after"]
    assert seen["reasons"] == ["contains a credential (AWS Access Key, line 2, detect-secrets rule)"] * 8


def test_the_verdict_memo_keeps_the_path_strings_it_is_given() -> None:
    # The workspace scan checks every file's path, which the index holds already: the memo's key is that
    # string, not a normalized copy of it (a path that needs normalizing still gets one).
    privacy = PrivacyFilter()
    path = "/".join(["src", "app.py"])
    assert privacy.check_path(path)
    assert privacy.check_path("/lib/./util.py")
    keys = list(privacy._ignored_cache)
    assert keys == ["src/app.py", "lib/util.py"]
    assert keys[0] is path
