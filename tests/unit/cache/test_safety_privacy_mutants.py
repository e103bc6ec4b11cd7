"""What may leave the machine (`cache.privacy`), where mutation testing found one example per rule: every
documented variant of each credential pattern and the lengths at its edge, secret paths at any depth, the
order in which nested ignore files decide, and the exact size and binary limits
(`python tools/mutation.py --module tandem.cache.privacy`)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tandem.cache.privacy import ALLOWED, PrivacyFilter, PrivacyPolicy, credential_in

UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

# (the names credential_in may give it (the rule sets overlap: detect-secrets' rules are asked first),
# prefixes the pattern exists for, body alphabet, shortest body, longest body or None when longer bodies
# match too). Bodies are drawn from the alphabet; a body one shorter is no match.
PATTERNS = [
    (("AWS Access Key",), ("AKIA", "ASIA"), UPPER_DIGITS, 16, None),
    (("Anthropic API key",), ("sk-ant-", "sk-ant-api03-"), ALNUM + "_-", 20, None),
    (("OpenAI-style API key",), ("sk-", "sk-proj-", "sk-svcacct-", "sk-admin-"), ALNUM + "_-", 32, None),
    (("GitHub Token",), ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), ALNUM, 36, None),
    (("GitHub fine-grained token",), ("github_pat_",), ALNUM + "_", 60, None),
    (("Slack Token", "Slack token"), ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-"), ALNUM + "-", 10, None),
    (("Google API key",), ("AIza",), ALNUM + "_-", 35, 35),
    (("Stripe Access Key", "Stripe key"), ("sk_live_", "rk_live_", "sk_test_", "rk_test_"), ALNUM, 20, None),
    (("Hugging Face token",), ("hf_",), ALNUM, 30, None),
    (("Vault token",), ("hvs.", "hvb.", "hvr."), ALNUM + "_-", 24, None),
    (("npm token",), ("npm_",), ALNUM, 36, 36),
]


@pytest.mark.parametrize(("what", "prefixes", "alphabet", "shortest", "longest"), PATTERNS)
@given(data=st.data())
def test_every_variant_of_every_credential_pattern_is_found_from_its_shortest_length(
    what: tuple[str, ...],
    prefixes: tuple[str, ...],
    alphabet: str,
    shortest: int,
    longest: int | None,
    data: st.DataObject,
) -> None:
    prefix = data.draw(st.sampled_from(prefixes))
    size = data.draw(st.integers(shortest, longest if longest is not None else shortest + 40))
    body = data.draw(st.text(alphabet=alphabet, min_size=size, max_size=size))
    line = data.draw(st.integers(1, 4))
    text = "x = 1\n" * (line - 1) + f"KEY = '{prefix}{body}'\n"
    found = credential_in(text)
    assert found.split(",")[0] in what and f", line {line}, " in found
    # One character short is no credential (after the plain prefix: a longer one is body characters too).
    short = f"KEY = '{prefixes[0]}{body[: shortest - 1]}'\n"
    assert credential_in(short).split(",")[0] not in what


@pytest.mark.parametrize("kind", ["", "RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED ", "PGP "])
def test_every_private_key_header_is_found(kind: str) -> None:
    block = " BLOCK" if kind == "PGP " else ""
    found = credential_in(f"\n\n-----BEGIN {kind}PRIVATE KEY{block}-----\nMIIE\n")
    assert found.split(",")[0] in ("Private Key", "Private key") and ", line 3, " in found
    assert credential_in(f"-----BEGIN {kind}PUBLIC KEY-----\n") == ""


def test_the_line_named_counts_every_newline_before_the_credential() -> None:
    key = "AKIA" + "Q7RZ2V4N8K3M5P1X"
    assert credential_in(key) == "AWS Access Key, line 1, detect-secrets rule"
    assert credential_in("\n" + key) == "AWS Access Key, line 2, detect-secrets rule"
    assert credential_in("\n\nx\n" + key) == "AWS Access Key, line 4, detect-secrets rule"


def test_the_default_size_cap_is_a_million_bytes() -> None:
    privacy = PrivacyFilter()
    assert privacy.check_content("a.py", "x" * 1_000_000)
    assert privacy.check_content("a.py", "x" * 1_000_001).reason == "too large (1000001 bytes > 1000000)"


def test_verdicts_and_policies_cannot_be_changed_once_made() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        ALLOWED.allowed = False  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        PrivacyPolicy().opt_in = ("*",)  # type: ignore[misc]


def test_fixed_length_keys_inside_longer_words_are_not_keys() -> None:
    assert credential_in("id = 'AIza" + "Q" * 36 + "'") == ""


@pytest.mark.parametrize(
    "path",
    [
        "home/.ssh/known_hosts",
        ".ssh/config",
        "dotfiles/home/.ssh/authorized_keys",
        "home/.docker/config.json",
        ".docker/config.json",
        "home/.aws/credentials",
        "HOME/.SSH/Config",
    ],
)
def test_secret_paths_are_secret_at_any_depth(path: str) -> None:
    assert "looks like a secret by its name" in PrivacyFilter().check_path(path).reason


@pytest.mark.parametrize("path", ["docker/config.json", "src/ssh/client.py", "a.ssh.py", "aws/credentials.py"])
def test_code_that_is_merely_named_after_them_is_not(path: str) -> None:
    assert PrivacyFilter().check_path(path)


@pytest.mark.parametrize("path", [".git", "a/.git", ".git/config", "sub/.git/hooks/pre-commit", "/.git/HEAD"])
def test_anything_in_git_is_refused(path: str) -> None:
    assert PrivacyFilter().check_path(path).reason == "inside .git"


@pytest.mark.parametrize("path", [".github/workflows/ci.yml", "x.git", "a/.gitignore", "git/.gitkeep"])
def test_names_that_only_look_like_git_are_not(path: str) -> None:
    assert PrivacyFilter().check_path(path)


def test_deeper_ignore_files_decide_whatever_order_they_were_added_in() -> None:
    files = {
        "src/vendor/.gitignore": "!keep.log\n",
        "src/.gitignore": "*.log\n!src.log\n",
        ".gitignore": "*.log\n",
    }
    for order in (list(files), list(reversed(files))):
        privacy = PrivacyFilter(ignore_files={name: files[name] for name in order})
        assert privacy.check_path("src/vendor/keep.log")
        assert privacy.check_path("src/src.log")
        assert privacy.check_path("src/other.log").reason == "ignored by src/.gitignore (pattern '*.log')"
        assert privacy.check_path("top.log").reason == "ignored by .gitignore (pattern '*.log')"
        assert privacy.check_path("src/vendor/x.log").reason == "ignored by src/.gitignore (pattern '*.log')"


def test_an_ignore_file_applies_only_below_its_own_directory_and_anchors_there() -> None:
    privacy = PrivacyFilter(ignore_files={"src/.gitignore": "/build\n"})
    assert privacy.check_path("src/build").reason == "ignored by src/.gitignore (pattern '/build')"
    assert privacy.check_path("src/x/build") and privacy.check_path("build")
    # A sibling folder whose name starts the same is not below it.
    assert PrivacyFilter(ignore_files={"src/.gitignore": "*.py\n"}).check_path("srcfoo/a.py")


def test_an_ignore_file_is_named_as_written_and_replaced_by_its_normalised_path() -> None:
    privacy = PrivacyFilter(ignore_files={"/src/./.tandemignore": "a.py\n"})
    assert privacy.check_path("src/a.py").reason == "ignored by src/.tandemignore (pattern 'a.py')"
    privacy.set_ignore_file("src/.tandemignore", "b.py\n")
    assert privacy.check_path("src/a.py") and not privacy.check_path("src/b.py")
    privacy.remove_ignore_file("/src/.tandemignore")
    assert privacy.check_path("src/b.py")
    # Paths as asked are normalised too.
    assert not PrivacyFilter(ignore_files={".gitignore": "b.py\n"}).check_path("/./b.py")


def test_opt_in_allows_a_secret_name_never_a_credential() -> None:
    privacy = PrivacyFilter(policy=PrivacyPolicy(opt_in=("config/.env.example",)))
    assert privacy.opted_in("config/.env.example") and privacy.opted_in("/config/./.env.example")
    assert not privacy.opted_in(".env")
    assert privacy.check("config/.env.example", "A=1\n")
    assert "AWS" in privacy.check("config/.env.example", "A=AKIA" + "Q7RZ2V4N8K3M5P1X\n").reason
    assert not privacy.check(".env")
    # A refused path is refused before its content is looked at.
    assert "secret by its name" in privacy.check(".env", "A=1\n").reason


def test_size_is_counted_in_utf8_bytes_up_to_the_exact_limit() -> None:
    privacy = PrivacyFilter(policy=PrivacyPolicy(max_file_bytes=1000))
    assert privacy.check_content("a.py", "x" * 1000) and privacy.check_content("a.py", b"x" * 1000)
    assert not privacy.check_content("a.py", "x" * 1001)
    assert privacy.check_content("a.py", "x" * 1001).reason == "too large (1001 bytes > 1000)"
    assert privacy.check_content("a.py", b"x" * 1001).reason == "too large (1001 bytes > 1000)"
    assert privacy.check_content("a.py", "\u00e9" * 501).reason == "too large (1002 bytes > 1000)"


def test_binary_is_sniffed_in_the_first_8192_only() -> None:
    privacy = PrivacyFilter()
    assert not privacy.check_content("a.bin", b"x" * 8191 + b"\0")
    assert privacy.check_content("a.bin", b"x" * 8191 + b"\0").reason == "binary (NUL bytes)"
    assert privacy.check_content("a.bin", b"x" * 8192 + b"\0")
    assert not privacy.check_content("a.py", "x" * 8191 + "\0")
    assert privacy.check_content("a.py", "x" * 8191 + "\0").reason == "binary (NUL characters)"
    assert privacy.check_content("a.py", "x" * 8192 + "\0")
    assert not privacy.check_content("a.bin", b"\xff\xfe")
    assert privacy.check_content("a.bin", b"\xff\xfe").reason == "binary (not UTF-8)"
    key = b"K = 'AKIA" + b"Q7RZ2V4N8K3M5P1X'\n"
    assert (
        privacy.check_content("a.py", b"# one\n" + key).reason
        == "contains a credential (AWS Access Key, line 2, detect-secrets rule)"
    )
    assert privacy.check_content("a.py", "caf\u00e9 = 1\n".encode())


def test_a_tandemignore_beside_a_gitignore_has_the_last_word_whatever_the_order() -> None:
    files = {"src/.gitignore": "*.log\n", "src/.tandemignore": "!keep.log\n"}
    for order in (list(files), list(reversed(files))):
        privacy = PrivacyFilter(ignore_files={name: files[name] for name in order})
        assert privacy.check_path("src/keep.log") and not privacy.check_path("src/other.log")


def test_removing_one_ignore_file_leaves_the_others() -> None:
    files = {".gitignore": "a.py\n", "m/.gitignore": "b.py\n", "z/.gitignore": "c.py\n"}
    privacy = PrivacyFilter(ignore_files=files)
    privacy.remove_ignore_file("m/.gitignore")
    assert not privacy.check_path("a.py") and privacy.check_path("m/b.py") and not privacy.check_path("z/c.py")
    privacy.set_ignore_file("m/.gitignore", "b.py\n")
    privacy.set_ignore_file("m/.gitignore", "d.py\n")  # replaced, not added beside
    assert privacy.check_path("m/b.py") and not privacy.check_path("m/d.py") and not privacy.check_path("z/c.py")


# -- a directory whose ignore rules are unknown: nothing under it is sent (fail closed) --------------------------


@pytest.mark.parametrize("directory", ["deep/a", "/deep/a/", "deep/a/.", "./deep/a"])
def test_nothing_under_a_closed_directory_is_sent_and_its_neighbours_are(directory: str) -> None:
    privacy = PrivacyFilter()
    privacy.close_directory(directory, "was not listed (too deep)")
    verdict = privacy.check_path("deep/a/b/notes.py")
    assert not verdict
    assert verdict.reason == "unscanned: deep/a was not listed (too deep), so its ignore rules are unknown"
    assert not privacy.check_path("deep/a/notes.py")
    # A sibling whose name starts the same is not under it, nor is its parent.
    assert privacy.check_path("deep/ab/notes.py")
    assert privacy.check_path("deep/notes.py")
    assert privacy.closed_directories == {"deep/a": "was not listed (too deep)"}


@pytest.mark.parametrize("root", ["", ".", "/", "./", "a/.."])
def test_a_workspace_whose_scan_failed_sends_nothing(root: str) -> None:
    privacy = PrivacyFilter()
    privacy.close_directory(root, "could not be scanned")
    for path in ("notes.py", "a/b/c.py"):
        verdict = privacy.check_path(path)
        assert not verdict
        assert verdict.reason == "unscanned: the workspace could not be scanned, so its ignore rules are unknown"
    assert privacy.closed_directories == {"": "could not be scanned"}


def test_closed_directories_are_a_copy_that_cannot_reopen_one() -> None:
    privacy = PrivacyFilter()
    privacy.close_directory("vendor", "ignore file is a pipe")
    privacy.closed_directories.clear()
    assert not privacy.check_path("vendor/x.py")


@pytest.mark.parametrize("directory", ["-build", "+out", " tmp", "!x"])
def test_a_closed_directory_that_sorts_before_the_root_closes_only_itself(directory: str) -> None:
    privacy = PrivacyFilter()
    privacy.close_directory(directory, "ignore file is a pipe")
    assert not privacy.check_path(f"{directory}/x.py")
    assert privacy.check_path("src/x.py")
    assert privacy.closed_directories == {directory: "ignore file is a pipe"}
