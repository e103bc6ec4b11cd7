"""Whether a file may be sent to a model, and if not, why.

Checks, in order, each with a reason string for the log:

    ignored       matched by the ignore rules handed in: every source git reads (the user's global excludes
                  file, the repository's info/exclude, each .gitignore) and tandem's .tandemignore files;
                  gitignore syntax, nested files apply below their own directory, deeper files win over
                  shallower ones and over info/exclude, which wins over the global file; `!pattern`
                  re-includes, but never below a directory that is itself excluded (as in git)
    secret name   .env*, *.pem, *.key, id_rsa* and other key/credential file names, unless the user
                  opted the path in (`PrivacyPolicy.opt_in`, gitignore syntax)
    too large     more than `max_file_bytes`
    binary        a NUL byte in the first 8 KiB, or bytes that are not UTF-8
    credentials   content that a credential rule matches (`cache.secrets`: detect-secrets' maintained
                  rules and tandem's own where they add); an opt-in does not override this

The caller hands in the ignore files' text and the file's content; nothing here reads the disk. Paths are
POSIX, relative to the workspace root.

Every pattern is matched by RE2 (pathspec's `re2` backend, `google-re2`): patterns come from a repository,
and a backtracking engine takes exponential time on a pattern of many stars; RE2's time is linear in the
path.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pathspec import GitIgnoreSpec

from tandem.cache.secrets import credential_in

# Linear-time matching for patterns a repository writes (see the module docstring); an import error here
# (google-re2 missing) is better than a silent fallback to backtracking.
_BACKEND = "re2"


def compile_patterns(lines: Iterable[str]) -> GitIgnoreSpec:
    """gitignore-syntax `lines` matched in linear time (RE2)."""
    return GitIgnoreSpec.from_lines(list(lines), backend=_BACKEND)


IGNORE_FILE_NAMES = (".gitignore", ".tandemignore")
# How strong a source of ignore rules is within its directory (git's order: the global excludes file, then
# the repository's info/exclude, then the directory's own ignore files).
RANK_GLOBAL, RANK_INFO_EXCLUDE, RANK_IGNORE_FILE = 0, 1, 2
DEFAULT_MAX_FILE_BYTES = 1_000_000
# git itself decides "binary" from the first 8,000 bytes; this is the same idea.
_BINARY_SNIFF_BYTES = 8192

_SECRET_NAMES = compile_patterns(
    [
        ".env",
        ".env.*",
        "*.env",
        ".envrc",
        "*.pem",
        "*.key",
        "*.p12",
        "*.pfx",
        "*.jks",
        "*.keystore",
        "*.kdbx",
        "*.ppk",
        "*.asc",
        "id_rsa*",
        "id_dsa*",
        "id_ecdsa*",
        "id_ed25519*",
        "credentials",
        "*credentials*.json",
        "credentials.yaml",
        "credentials.yml",
        "credentials.toml",
        "credentials.ini",
        "credentials.xml",
        "service-account*.json",
        "client_secret*.json",
        "credentials.yml.enc",
        "secrets.json",
        "secrets.yaml",
        "secrets.yml",
        "secrets.toml",
        "secrets.ini",
        "secrets.env",
        "*.secret",
        "*.secrets",
        ".netrc",
        "_netrc",
        ".pgpass",
        ".git-credentials",
        ".npmrc",
        ".pypirc",
        ".dockercfg",
        # At any depth (a pattern with a slash inside is anchored to the root): a dotfiles repository keeps
        # them under home/ or similar.
        "**/.docker/config.json",
        "**/.aws/credentials",
        ".ssh/",
        "*.tfstate",
        "*.tfstate.*",
        "*.tfvars",
        "*.tfvars.json",
        ".terraformrc",
        "terraform.rc",
        # Credentials by the tools' own file names (each tool's documentation names the file).
        "kubeconfig",
        "*.kubeconfig",
        "**/.kube/config",
        ".vault-token",
        ".my.cnf",
        ".mylogin.cnf",
        ".htpasswd",
        "htpasswd",
        "rclone.conf",
        "wp-config.php",
        ".s3cfg",
        ".boto",
        ".passwd-s3fs",
        "**/.config/gh/hosts.yml",
        "**/.azure/accessTokens.json",
        "**/.azure/msal_token_cache.json",
        "**/.config/gcloud/credentials.db",
        "**/.config/gcloud/access_tokens.db",
        "**/.gem/credentials",
        "**/.m2/settings.xml",
        "**/.m2/settings-security.xml",
        ".git-credentials*",
        ".yarnrc.yml",
        "*.p8",
        "*.gpg",
        "*.ovpn",
        ".password-store/",
        ".gnupg/",
        "keystore.properties",
        "local.properties",
        "*.mobileprovision",
        ".dockerconfigjson",
        "auth.json",
        ".env*.local",
    ]
)


@dataclass(frozen=True, kw_only=True)
class PrivacyPolicy:
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    # Paths (gitignore syntax) the user explicitly allows despite a secret-looking name.
    opt_in: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """`allowed`, or the reason it is not (for a log line; never contains file content)."""

    allowed: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.allowed


ALLOWED = Verdict(allowed=True)


def _ignore_spec(lines: list[str]) -> tuple[GitIgnoreSpec, list[str]]:
    """An ignore file's lines as a spec, and the lines that compile to no pattern (left out)."""
    try:
        return compile_patterns(lines), []
    except ValueError:
        kept, skipped = [], []
        for line in lines:
            try:
                compile_patterns([line])
            except ValueError:
                skipped.append(line)
            else:
                kept.append(line)
        return compile_patterns(kept), skipped


class PrivacyFilter:
    """Decides per path (and content) whether a file may leave the machine."""

    def __init__(
        self,
        *,
        policy: PrivacyPolicy | None = None,
        ignore_files: Mapping[str, str] | None = None,
    ) -> None:
        """`ignore_files` maps each ignore file's path (e.g. `.gitignore`, `src/.tandemignore`) to its text."""
        self.policy = policy or PrivacyPolicy()
        self._opt_in = compile_patterns(self.policy.opt_in)
        # (directory, file name, spec, rank, outer), shallowest first and, in one directory, weakest first: a
        # later entry's verdict overrides. `directory` is relative to the root, or for an `outer` entry (above
        # the root, or anchored at the repository's top) to the repository's top.
        self._ignores: list[tuple[str, str, GitIgnoreSpec, int, bool]] = []
        # Where the root is inside its repository ("" at the top): git's rules are relative to the top.
        self._base = ""
        # The ignore rules' verdicts by path, dropped whenever a rule changes (a path is asked on every
        # keystroke that shows a snippet of it; matching is the same until an ignore file changes).
        self._ignored_cache: dict[str, str] = {}
        for path, text in (ignore_files or {}).items():
            self.set_ignore_file(path, text)
        # Directories whose ignore files could not be read (or that were never listed): {directory: why}.
        # Nothing under one may be sent ("" is the whole workspace).
        self._closed: dict[str, str] = {}

    def close_directory(self, directory: str, why: str) -> None:
        """Nothing under `directory` may be sent: its ignore rules are unknown (fail closed)."""
        directory = posixpath.normpath(directory.strip("/") or ".")
        self._closed["" if directory == "." else directory] = why

    @property
    def closed_directories(self) -> dict[str, str]:
        return dict(self._closed)

    def set_ignore_file(self, path: str, text: str, *, rank: int = RANK_IGNORE_FILE, outer: bool = False) -> list[str]:
        """Add or replace one ignore file (`dir/.gitignore` applies to paths under `dir/`). Returns the
        lines that are no pattern (a lone `!` or `\\`): they are skipped, as git skips them, and the
        file's other lines apply (a repository's bad line must not switch its ignore rules off). A
        repository-wide source (`RANK_GLOBAL`, `RANK_INFO_EXCLUDE`) is named `dir/<label>`: it applies below
        `dir`, weaker than the ignore files there. `outer`: `path` is relative to the repository's top
        (`set_repository_base`), for ignore files above the root and sources anchored at the top."""
        path = posixpath.normpath(path.lstrip("/"))
        directory = "" if posixpath.dirname(path) == "." else posixpath.dirname(path)
        spec, skipped = _ignore_spec(text.splitlines())
        self._drop(path, outer)
        self._ignores.append((directory, posixpath.basename(path), spec, rank, outer))
        self._sort()
        return skipped

    def _changed(self) -> None:
        self._ignored_cache.clear()

    @property
    def repository_base(self) -> str:
        return self._base

    def set_repository_base(self, base: str) -> None:
        """The root's place inside its repository (`a/b`; "" when the root is the repository's top)."""
        base = posixpath.normpath(base.strip("/") or ".")
        self._base = "" if base == "." else base
        self._sort()

    def _top(self, directory: str, outer: bool) -> str:
        """An entry's directory relative to the repository's top."""
        if outer or not self._base:
            return directory
        return posixpath.join(self._base, directory) if directory else self._base

    def _sort(self) -> None:
        def key(entry: tuple[str, str, GitIgnoreSpec, int, bool]) -> tuple[int, str, int, str]:
            top = self._top(entry[0], entry[4])
            return (top.count("/") + (top != ""), top, entry[3], entry[1])

        self._ignores.sort(key=key)
        self._changed()

    def _drop(self, path: str, outer: bool) -> None:
        kept = [e for e in self._ignores if (posixpath.join(e[0], e[1]), e[4]) != (path, outer)]
        if len(kept) != len(self._ignores):
            self._ignores = kept
            self._changed()

    def remove_ignore_file(self, path: str, *, outer: bool = False) -> None:
        self._drop(posixpath.normpath(path.lstrip("/")), outer)

    @staticmethod
    def warm_up() -> None:
        """Match once with every rule set, in a worker thread at start: RE2 builds its automata at the first
        match, which on the event loop held it for 100 ms and more at the first document opened."""
        _SECRET_NAMES.check_file("tandem-warm-up")
        credential_in("tandem warm-up\n")

    def check_path(self, path: str) -> Verdict:
        """The checks that need only the path: ignore files and secret-looking names."""
        path = _relative(path)
        parts = path.split("/")
        if ".git" in parts[:-1] or parts[-1] == ".git":
            return Verdict(allowed=False, reason="inside .git")
        for directory, why in self._closed.items():
            if not directory or path.startswith(directory + "/"):
                where = directory or "the workspace"
                return Verdict(allowed=False, reason=f"unscanned: {where} {why}, so its ignore rules are unknown")
        ignored_by = self._ignored_cache.get(path)
        if ignored_by is None:
            ignored_by = self._ignored_path(path)
            if len(self._ignored_cache) > 200_000:
                self._ignored_cache.clear()
            self._ignored_cache[path] = ignored_by
        if ignored_by:
            return Verdict(allowed=False, reason=ignored_by)
        # By name whatever the case: `.ENV` is `.env` on the file systems of macOS and Windows, and a
        # `Credentials.JSON` holds what a `credentials.json` does.
        secret = _SECRET_NAMES.check_file(path)
        if not secret.include:
            secret = _SECRET_NAMES.check_file(path.lower())
        if secret.include and secret.index is not None and not self._opt_in.match_file(path):
            pattern = _SECRET_NAMES.patterns[secret.index].pattern
            return Verdict(allowed=False, reason=f"looks like a secret by its name ({pattern!r}); opt it in to send it")
        return ALLOWED

    def _ignored_path(self, path: str) -> str:
        """Why the ignore rules exclude `path` (relative to the root), "" if they do not. A directory that is
        excluded excludes everything under it: no deeper ignore file can re-include (git does not even read
        the ignore files below an excluded directory). From the repository's top: a directory above the
        root may be the one excluded."""
        full = posixpath.join(self._base, path) if self._base else path
        full_parts = full.split("/")
        for depth in range(1, len(full_parts)):
            ignored_by = self._ignored_by("/".join(full_parts[:depth]) + "/")
            if ignored_by:
                return ignored_by
        return self._ignored_by(full)

    def _ignored_by(self, path: str) -> str:
        """Which of the ignore files handed in excludes `path` (relative to the repository's top; a directory
        ends in "/"), "" if none: the last matching pattern of the deepest file above it decides."""
        ignored_by = ""
        for directory, name, spec, _rank, outer in self._ignores:
            top = self._top(directory, outer)
            if top and not path.startswith(top + "/"):
                continue
            relative = path[len(top) + 1 :] if top else path
            if not relative or relative == "/":
                continue
            result = spec.check_file(relative)
            if result.include is not None and result.index is not None:
                pattern = spec.patterns[result.index].pattern
                where = posixpath.join(directory, name)
                ignored_by = f"ignored by {where} (pattern {pattern!r})" if result.include else ""
        return ignored_by

    def opted_in(self, path: str) -> bool:
        """True if the user's opt-in list names `path`."""
        return bool(self._opt_in.match_file(posixpath.normpath(path.lstrip("/"))))

    def check_content(self, path: str, content: str | bytes) -> Verdict:
        """The checks that need the content: size, binary, credential patterns."""
        size = len(content) if isinstance(content, bytes) else len(content.encode("utf-8", "surrogatepass"))
        if size > self.policy.max_file_bytes:
            return Verdict(allowed=False, reason=f"too large ({size} bytes > {self.policy.max_file_bytes})")
        if isinstance(content, bytes):
            if b"\0" in content[:_BINARY_SNIFF_BYTES]:
                return Verdict(allowed=False, reason="binary (NUL bytes)")
            try:
                text = content.decode("utf-8")
            except UnicodeDecodeError:
                return Verdict(allowed=False, reason="binary (not UTF-8)")
        else:
            text = content
            if "\0" in text[:_BINARY_SNIFF_BYTES]:
                return Verdict(allowed=False, reason="binary (NUL characters)")
        found = credential_in(text)
        return Verdict(allowed=False, reason=f"contains a credential ({found})") if found else ALLOWED

    def check(self, path: str, content: str | bytes | None = None) -> Verdict:
        """Every check that applies (content checks only when content is given)."""
        verdict = self.check_path(path)
        if not verdict or content is None:
            return verdict
        return self.check_content(path, content)


def _relative(path: str) -> str:
    """`path` without leading slashes, normalized; the string passed in when it already is (the memo of
    ignore verdicts keeps a key per path checked, for the workspace scan every file's path, which the
    index holds already: normpath's copy of each was 0.5 MB of a 5,000-file workspace)."""
    stripped = path.lstrip("/")
    normalized = posixpath.normpath(stripped)
    return stripped if normalized == stripped else normalized
