"""Repositories that name a program through every place git reads configuration, each program leaving a
marker file if it ever runs. Shared by the unit tests of `machine.git` and the end-to-end attack tests.

    .git/config               filters (clean, smudge, process), a diff driver's textconv and command,
                              diff.external, core.fsmonitor, pagers, gpg.program with log.showSignature,
                              core.sshCommand and a promisor remote (a partial clone fetches on demand),
                              credential and askpass helpers, core.hooksPath to a directory of every hook
    include.path              a file in the work tree naming the same (under other driver names)
    includeIf "gitdir:..."     the same through a conditional include
    .gitattributes            every file through the filter and the diff drivers
    .git/info/attributes      likewise
    sub/ (a nested repository, its own .git/config naming its own programs), vendored/ (a submodule entry)

`arm(root, out, places)` plants it all in the repository `root` (which must have a commit): the programs
go in the config files named by `places` (the repository's own, the included file, the conditionally
included one; a single-valued key is won by the last file git reads, so each place is also tried alone),
after a signed commit of a submodule entry and `.gitmodules` (`log --show-signature` would run gpg).
`ran(out)` lists the markers; `trap_springs(root)` runs git's own ordinary commands to show that the trap
is real.
"""

from __future__ import annotations

import pathlib
import subprocess

IDENTITY = ["-c", "user.email=a@example.com", "-c", "user.name=a", "-c", "commit.gpgSign=false"]
HOOKS = (
    "pre-commit", "post-checkout", "post-index-change", "reference-transaction", "fsmonitor-watchman",
    "post-merge", "pre-push", "post-rewrite", "pre-auto-gc",
)  # fmt: skip


def git(root: pathlib.Path, *args: str, stdin: bytes | None = None, check: bool = True) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *IDENTITY, *args], input=stdin or b"", capture_output=True, check=check, timeout=30
    )
    return done.stdout.decode()


def _script(out: pathlib.Path, name: str) -> str:
    script = out / f"{name.lower()}.sh"
    script.write_text(f"#!/bin/sh\ntouch '{out / ('RAN_' + name)}'\nexit 0\n")
    script.chmod(0o755)
    return str(script)


def _config_lines(out: pathlib.Path, tag: str) -> str:
    """Config text naming a program (each its own marker, tagged by where it was written) for every key."""
    s = lambda name: _script(out, f"{tag}_{name}")  # noqa: E731
    return (
        f"[core]\n\tfsmonitor = {s('FSMONITOR')}\n\tpager = {s('PAGER')}\n\tsshCommand = {s('SSH')}\n"
        f"\taskPass = {s('ASKPASS')}\n\thooksPath = {out / 'hooks'}\n\talternateRefsCommand = {s('ALTREFS')}\n"
        f"[diff]\n\texternal = {s('EXTERNAL_DIFF')}\n"
        f'[diff "evil"]\n\ttextconv = {s("TEXTCONV")}\n\tcommand = {s("DIFF_COMMAND")}\n'
        f'[diff "{tag.lower()}"]\n\ttextconv = {s("TEXTCONV2")}\n\tcommand = {s("DIFF_COMMAND2")}\n'
        f'[filter "evil"]\n\tclean = {s("CLEAN")}\n\tsmudge = {s("SMUDGE")}\n\trequired = true\n'
        f'[filter "{tag.lower()}"]\n\tprocess = {s("PROCESS_FILTER")}\n'
        f"[pager]\n\tlog = {s('PAGER_LOG')}\n\tdiff = {s('PAGER_DIFF')}\n"
        f"[gpg]\n\tprogram = {s('GPG')}\n[log]\n\tshowSignature = true\n"
        f"[credential]\n\thelper = !{s('CREDENTIAL')}\n"
        f"[sequence]\n\teditor = {s('SEQ_EDITOR')}\n[core]\n\teditor = {s('EDITOR')}\n"
    )


PLACES = ("config", "include", "includeif")


def arm(root: pathlib.Path, out: pathlib.Path, places: tuple[str, ...] = PLACES) -> None:
    # A nested repository with its own config, and a submodule entry (a gitlink) in HEAD.
    nested = root / "sub"
    nested.mkdir(exist_ok=True)
    git(nested, "init", "-q")
    (nested / "n.py").write_text("n = 1\n")
    git(nested, "add", "n.py")
    git(nested, "commit", "-qm", "nested")
    sha = git(nested, "rev-parse", "HEAD").strip()
    git(root, "update-index", "--add", "--cacheinfo", f"160000,{sha},vendored")
    (root / ".gitmodules").write_text(f'[submodule "vendored"]\n\tpath = vendored\n\turl = {nested}\n')
    git(root, "add", ".gitmodules")
    signed_commit(root)  # the last commit: signed, with the submodule entry
    (nested / ".git" / "config").write_text((nested / ".git" / "config").read_text() + _config_lines(out, "NESTED"))
    (nested / "n.py").write_text("n = 2\n")
    hooks = out / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    for hook in HOOKS:
        (hooks / hook).write_text(f"#!/bin/sh\ntouch '{out / ('RAN_HOOK_' + hook)}'\n")
        (hooks / hook).chmod(0o755)
    # The repository's own config, and two files it includes (one in the work tree, as a repository can
    # carry it: `include.path = ../settings.gitconfig`).
    (root / "settings.gitconfig").write_text(_config_lines(out, "INCLUDED"))
    (out / "conditional.gitconfig").write_text(_config_lines(out, "INCLUDEIF"))
    config = root / ".git" / "config"
    config.write_text(
        config.read_text()
        + (_config_lines(out, "CONFIG") if "config" in places else "")
        + ("[include]\n\tpath = ../settings.gitconfig\n" if "include" in places else "")
        + (f'[includeIf "gitdir:{root}/"]\n\tpath = {out / "conditional.gitconfig"}\n' if "includeif" in places else "")
        + '[remote "origin"]\n\turl = ssh://attacker.invalid/x\n\tpromisor = true\n'
        + "\tpartialclonefilter = blob:none\n[extensions]\n\tpartialClone = origin\n"
    )
    git(root, "config", "core.repositoryformatversion", "1")
    attributes = "* filter=evil diff=evil\n*.py filter=included diff=included\n*.txt diff=includeif\n"
    (root / ".gitattributes").write_text(attributes)
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "attributes").write_text(attributes)


def signed_commit(root: pathlib.Path, message: str = "signed") -> str:
    """Commit the index as a commit carrying a (fake) signature (`log --show-signature` would run gpg)."""
    tree = git(root, "write-tree").strip()
    head = git(root, "rev-parse", "HEAD").strip()
    body = (
        f"tree {tree}\nparent {head}\nauthor a <a@example.com> 1700000000 +0000\n"
        "committer a <a@example.com> 1700000000 +0000\n"
        f"gpgsig -----BEGIN PGP SIGNATURE-----\n \n AAAA\n -----END PGP SIGNATURE-----\n\n{message}\n"
    )
    sha = git(root, "hash-object", "-t", "commit", "-w", "--stdin", stdin=body.encode()).strip()
    git(root, "update-ref", "HEAD", sha)
    return sha


def drop_blob(root: pathlib.Path, path: str) -> str:
    """Delete HEAD's blob of `path` from the object store, as a partial clone lacks it; its id."""
    oid = git(root, "rev-parse", f"HEAD:{path}").strip()
    (root / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    return oid


def ran(out: pathlib.Path) -> list[str]:
    return sorted(p.name for p in out.glob("RAN_*"))


def clear(out: pathlib.Path) -> None:
    for marker in out.glob("RAN_*"):
        marker.unlink()


def trap_springs(root: pathlib.Path) -> None:
    """git's ordinary reading commands on `root` (the ones a tool would run)."""
    for args in (["status"], ["diff", "HEAD"], ["log", "-p", "-n2"], ["diff", "HEAD~1", "HEAD"]):
        subprocess.run(["git", "-C", str(root), *args], input=b"", capture_output=True, check=False, timeout=30)
