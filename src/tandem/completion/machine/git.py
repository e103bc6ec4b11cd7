"""git, run so that it cannot run a program the repository names.

A repository arrives with its `.git` (an archive, a shared folder, a checkout made by a tool), and git
obeys the repository's own `.git/config`, the files it includes (`include.path`, `includeIf`), its
`.gitattributes` and `.git/info/attributes`. Through them a repository names programs: clean/smudge
filters and process filters, diff drivers' `textconv` and `command`, `diff.external`, `core.fsmonitor`,
hooks (`core.hooksPath`), pagers, `gpg.program`, `core.sshCommand` and transports (a partial clone
fetches missing objects on demand), credential helpers. A deny-list of such keys was bypassed; so tandem
does not look at the config at all. It runs only the commands below, and each is one that has no
step at which git would start a program, whatever the config says:

- `rev-parse --show-toplevel --verify HEAD` (`toplevel`): reads config and refs only; no diff, no
  filter, no hook, no working tree.
- `ls-tree -r -z -l --full-tree HEAD` (`head_files`): lists HEAD's tree objects. It never reads the
  working tree (so no clean filter, no fsmonitor); a submodule is a gitlink entry, which git does not enter
  (no nested repository's config is read).
- `cat-file --batch`, object ids on stdin (`read_blobs`): prints objects as stored. Filters and textconv
  apply only with `--filters`/`--textconv`, never given. A missing object (a partial clone) is not fetched
  (`protocol.allow=never` refuses every transport, so no `core.sshCommand` or remote helper starts).
- `log --numstat -z --no-ext-diff --no-textconv --no-show-signature` and `log -L ... -s` (`log`): compares
  commits' blobs in-process; no working tree (no filter, no fsmonitor); `--no-ext-diff` switches off
  `diff.external` and drivers' `command`, `--no-textconv` drivers' `textconv`, `--no-show-signature` (and
  `log.showSignature=false`) gpg; no `%G` format (gpg) is ever asked; `--no-pager`.

The working diff (HEAD against the files on disk) is never asked of git (`git diff` and `git status` read
the working tree through filters and fsmonitor): `routing.working_diff` reads HEAD's blobs with
`ls-tree`/`cat-file` and the files through `machine.files`, and diffs them in-process.

Every command also gets `_GUARD` and `environment()`, a second wall in case a future git grows a new way:
no system or global config (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`), no system or global
attributes (`GIT_ATTR_NOSYSTEM`, `core.attributesFile=/dev/null`), `core.fsmonitor=false`,
`core.hooksPath=/dev/null`, `diff.external=` and `--no-ext-diff`, no pager (`--no-pager`, `core.pager=cat`),
no signature (`log.showSignature=false`), no mailmap, no transport at all (`protocol.allow=never`,
`GIT_NO_LAZY_FETCH=1`: a partial clone's missing object is not fetched), no optional locks or index refresh
(`--no-optional-locks`), no terminal prompt, no gc or maintenance, `safe.bareRepository=explicit` (a bare
repository planted in a workspace is not found by discovery); stdin is closed or ours, stderr dropped. The
process's own `GIT_*` environment is not passed on. The repository's `.git/config` and its includes still
load (git has no switch for that), which is why the commands themselves must be ones that reach no program.

Every call is bounded: `timeout_s` (killed after), `limit` bytes of output. No git, no repository, a
failure, a timeout: None, never an error.

One read needs no git at all: the commit HEAD names (`head_commit`, a cache key the router reads for every
edit) is read from the repository's files (`.git`, or the `gitdir:` file a worktree has, its `HEAD`, the
ref it names, `commondir`, `packed-refs`) through `machine.files`, bounded, no program run.
"""

from __future__ import annotations

import logging
import os
import pathlib
import shutil
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from tandem.completion.machine import files
from tandem.completion.machine.containment import real_path

_log = logging.getLogger(__name__)

# HEAD, a ref or packed-refs: read whole, and packed-refs can hold many refs.
_GIT_FILE_BYTES = 4 * 1024 * 1024

TIMEOUT_S = 1.5
MAX_OUTPUT_BYTES = 2_000_000

_GUARD = (
    "--no-pager", "--no-optional-locks", "--literal-pathspecs",
    "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.attributesFile=/dev/null",
    "-c", "diff.external=", "-c", "core.pager=cat", "-c", "pager.log=false", "-c", "log.showSignature=false",
    "-c", "color.ui=never", "-c", "log.mailmap=false", "-c", "core.quotePath=false",
    "-c", "protocol.allow=never", "-c", "core.sshCommand=false", "-c", "credential.helper=",
    "-c", "safe.bareRepository=explicit", "-c", "gc.auto=0", "-c", "maintenance.auto=false",
    "-c", "core.untrackedCache=false", "-c", "core.splitIndex=false",
)  # fmt: skip


def search_path() -> str:
    """The user's `PATH` with only its absolute entries: an empty or relative entry means "the current
    directory" (or one under it) to a process that searches it, and tandem's current directory (or git's)
    may be a repository's, holding a `./git` or `node_modules/.bin/git` of its own."""
    value = os.environ.get("PATH", "")
    return os.pathsep.join(entry for entry in value.split(os.pathsep) if entry and os.path.isabs(entry)) or (
        "/usr/bin:/bin"
    )


_git_lock = threading.Lock()
_git_path: list[str | None] = []


def executable() -> str | None:
    """git's absolute path, found once in the absolute entries of `PATH` (never a repository's `./git` or
    `node_modules/.bin/git` reached through an empty or relative entry); None without one."""
    with _git_lock:
        if not _git_path:
            found = shutil.which("git", path=search_path())
            _git_path.append(os.path.abspath(found) if found else None)
        return _git_path[0]


def environment() -> dict[str, str]:
    """A fixed environment: the user's PATH (absolute entries only) and HOME, and git told to read no config
    or attributes but the repository's own, to fetch nothing and to ask nothing."""
    return {
        "PATH": search_path(),
        "HOME": os.environ.get("HOME", "/"),
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_NO_LAZY_FETCH": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_ASKPASS": "/bin/false",
        "SSH_ASKPASS": "/bin/false",
    }


# git runs here, never in the workspace: `-C` (or `--git-dir`/`--work-tree`) names the repository.
NEUTRAL_DIRECTORY = "/"


def command(top: pathlib.Path, args: Sequence[str]) -> list[str] | None:
    """The argument vector for git `args` on the repository at `top` (None: git is not installed)."""
    git = executable()
    return None if git is None else [git, *_GUARD, "-C", str(top), *args]


def _start(top: pathlib.Path, args: Sequence[str], *, stdin: bool) -> subprocess.Popen[bytes] | None:
    """git `args` started with the guard, the fixed environment and a directory outside the workspace;
    None if it cannot start."""
    argv = command(top, args)
    if argv is None:
        return None
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=environment(),
            cwd=NEUTRAL_DIRECTORY,
            close_fds=True,
        )
    except OSError as error:
        _log.debug("git %s: %s", args[0] if args else "", error)
        return None


def _run(
    top: pathlib.Path, args: Sequence[str], *, stdin: bytes = b"", timeout_s: float, limit: int
) -> tuple[bytes, bool] | None:
    """(stdout up to `limit` bytes, whether it ended by itself), or None (no git, failed, timed out)."""
    proc = _start(top, args, stdin=bool(stdin))
    if proc is None:
        return None
    timer = threading.Timer(timeout_s, proc.kill)
    timer.start()
    writer: threading.Thread | None = None
    try:
        if stdin:
            assert proc.stdin is not None
            pipe = proc.stdin

            def feed() -> None:
                try:
                    pipe.write(stdin)
                    pipe.close()
                except OSError:
                    pass  # git ended (or was killed) first

            writer = threading.Thread(target=feed, daemon=True)
            writer.start()
        assert proc.stdout is not None
        out = proc.stdout.read(limit + 1)
        cut = len(out) > limit
        if cut:
            proc.kill()
        code = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        if writer is not None:
            writer.join(timeout=timeout_s)
    if cut:
        return out[:limit], False
    if code != 0:
        return None  # failed, or killed by the timer
    return out, True


def toplevel(root: pathlib.Path, *, timeout_s: float = TIMEOUT_S) -> pathlib.Path | None:
    """The top of the work tree holding `root` if it is in a git repository with a HEAD commit, else None."""
    done = _run(root, ["rev-parse", "--show-toplevel", "--verify", "HEAD"], timeout_s=timeout_s, limit=65536)
    if done is None:
        return None
    lines = done[0].decode("utf-8", "surrogateescape").splitlines()
    return pathlib.Path(lines[0]) if lines and lines[0] else None


def git_directories(root: pathlib.Path, *, timeout_s: float = TIMEOUT_S) -> tuple[pathlib.Path, ...] | None:
    """The repository's own directories for the work tree holding `root`, as git finds them: its git
    directory and its common directory (`.git` may be a file naming another place, a worktree's git
    directory lives under the main one's). None if `root` is in no repository git will open."""
    done = _run(root, ["rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir"],
                timeout_s=timeout_s, limit=65536)  # fmt: skip
    if done is None:
        return None
    lines = [line for line in done[0].decode("utf-8", "surrogateescape").splitlines() if line]
    return tuple(dict.fromkeys(pathlib.Path(line) for line in lines)) or None


def work_tree_top(root: pathlib.Path, *, timeout_s: float = TIMEOUT_S) -> pathlib.Path | None:
    """The top of the work tree holding `root` (with or without a commit), or None outside one."""
    done = _run(root, ["rev-parse", "--path-format=absolute", "--show-toplevel"], timeout_s=timeout_s, limit=65536)
    if done is None:
        return None
    lines = done[0].decode("utf-8", "surrogateescape").splitlines()
    return pathlib.Path(lines[0]) if lines and lines[0] else None


def excludes_file(root: pathlib.Path, *, timeout_s: float = TIMEOUT_S) -> pathlib.Path | None:
    """The repository's own `core.excludesFile` (its config, which git reads before the user's global
    one), absolute (a relative value is taken from the work tree's top), or None where it sets none."""
    done = _run(root, ["config", "--path", "--get", "core.excludesFile"], timeout_s=timeout_s, limit=65536)
    if done is None:
        return None
    value = done[0].decode("utf-8", "surrogateescape").strip()
    if not value:
        return None
    path = pathlib.Path(value)
    if path.is_absolute():
        return path
    top = work_tree_top(root, timeout_s=timeout_s)
    return top / path if top is not None else None


@dataclass(frozen=True)
class TreeFile:
    """A regular file in HEAD's tree: its blob's id and size."""

    oid: str
    size: int


def head_files(
    top: pathlib.Path, *, timeout_s: float = TIMEOUT_S, limit: int = 8_000_000
) -> dict[str, TreeFile] | None:
    """{path relative to `top`: its blob} of every regular file in HEAD (links and submodules left out:
    a gitlink is an entry in the tree, and git does not enter it)."""
    done = _run(top, ["ls-tree", "-r", "-z", "-l", "--full-tree", "HEAD"], timeout_s=timeout_s, limit=limit)
    if done is None or not done[1]:
        return None
    files: dict[str, TreeFile] = {}
    for entry in done[0].split(b"\0"):
        meta, _, path = entry.partition(b"\t")
        fields = meta.split()
        if len(fields) != 4 or fields[1] != b"blob" or fields[0] not in (b"100644", b"100755"):
            continue
        size = fields[3].decode("ascii", "replace")
        files[path.decode("utf-8", "surrogateescape")] = TreeFile(
            oid=fields[2].decode("ascii"), size=int(size) if size.isdigit() else -1
        )
    return files


def read_blobs(
    top: pathlib.Path, oids: Sequence[str], *, timeout_s: float = TIMEOUT_S, limit: int = MAX_OUTPUT_BYTES
) -> dict[str, bytes]:
    """{oid: content as stored} of the blobs asked for (those git cannot give, or past `limit`, absent)."""
    wanted = [oid for oid in dict.fromkeys(oids) if oid and all(c in "0123456789abcdef" for c in oid)]
    if not wanted:
        return {}
    done = _run(top, ["cat-file", "--batch"], stdin="".join(f"{oid}\n" for oid in wanted).encode(),
                timeout_s=timeout_s, limit=limit)  # fmt: skip
    if done is None:
        return {}
    out, blobs, at = done[0], {}, 0
    while at < len(out):
        end = out.find(b"\n", at)
        if end < 0:
            break
        header = out[at:end].split()
        if len(header) != 3 or header[1] != b"blob" or not header[2].isdigit():
            at = end + 1  # "<oid> missing", or another kind of object
            continue
        size = int(header[2])
        body = out[end + 1 : end + 1 + size]
        if len(body) < size:
            break  # cut by the limit
        blobs[header[0].decode("ascii")] = body
        at = end + 1 + size + 1
    return blobs


@dataclass(frozen=True, kw_only=True)
class LogQuery:
    """One `git log`: which commits (`rev`, or exactly `commits`), of which path (and lines), in which form."""

    rev: str = "HEAD"
    commits: tuple[str, ...] = ()
    path: str = ""
    # The lines [first_line, end_line) (0-based) of `path`: `-L`, commits only (no file list).
    lines: tuple[int, int] | None = None
    max_count: int = 50
    numstat: bool = True
    no_merges: bool = True
    full_diff: bool = False
    # %x01%H, and with `subject` also %x02%s.
    subject: bool = False


def log(query: LogQuery, top: pathlib.Path, *, timeout_s: float = TIMEOUT_S, limit: int = MAX_OUTPUT_BYTES
        ) -> tuple[bytes, bool] | None:  # fmt: skip
    """The output of the `git log` `query` describes (see the table above), and whether it is whole."""
    if query.rev.startswith("-") or any(not c or c.startswith("-") for c in query.commits):
        return None
    args = ["log", "--no-ext-diff", "--no-textconv", "--no-show-signature", "--no-color", "--no-renames"]
    if query.no_merges:
        args.append("--no-merges")
    if query.full_diff:
        args.append("--full-diff")
    if query.lines is not None:
        first, end = query.lines
        args += ["-L", f"{first + 1},{end}:{query.path}", "-s"]
    elif query.numstat:
        args += ["--numstat", "-z"]
    args.append("--format=%x01%H%x02%s" if query.subject else "--format=%x01%H")
    if query.commits:
        args += ["--no-walk=unsorted", *query.commits]
    else:
        args += [f"--max-count={max(1, query.max_count)}", query.rev]
    if query.lines is None:
        args += ["--", *([query.path] if query.path else [])]
    return _run(top, args, timeout_s=timeout_s, limit=limit)


def _read_git_file(path: pathlib.Path) -> str | None:
    text = files.read_file(path, max_bytes=_GIT_FILE_BYTES).text()
    return text.strip() if text is not None else None


def head_commit(root: pathlib.Path) -> str | None:
    """The commit HEAD names in the repository holding `root`, read from its files (no git run), or None
    (no repository, a HEAD or ref that cannot be read)."""
    for folder in (root, *root.parents):
        dot_git = folder / ".git"
        if files.is_directory(dot_git):
            git_dir = dot_git
        elif os.path.isfile(dot_git):
            pointer = _read_git_file(dot_git) or ""
            if not pointer.startswith("gitdir:"):
                return None
            git_dir = real_path(folder / pointer.removeprefix("gitdir:").strip())
        else:
            continue
        head = _read_git_file(git_dir / "HEAD")
        if head is None:
            return None
        if not head.startswith("ref:"):
            return head
        ref = head.removeprefix("ref:").strip()
        common = _read_git_file(git_dir / "commondir")
        common_dir = real_path(git_dir / common) if common else git_dir
        for base in (git_dir, common_dir):
            sha = _read_git_file(base / ref)
            if sha:
                return sha
        packed = _read_git_file(common_dir / "packed-refs") or ""
        for line in packed.splitlines():
            sha, _, name = line.partition(" ")
            if name == ref:
                return sha
        return None
    return None
