"""The only door to the user's machine: reading workspace files and ignore files, listing directories,
running git, and deciding where an edit may write. Nothing else in the product opens a file, lists a
directory or starts a process (`tests/unit/test_machine_door.py` checks it); `docs/machine.md` lists every
door and every git command with the reason it cannot run a repository's programs.

- `files`        one file read: regular files only (after links), O_NONBLOCK and fstat, bounded, inside
- `ignores`      every source of ignore rules git reads (and .tandemignore), kept current
- `scan`         listing the workspace: iterative, bounded in depth and entries, naming what it did not see
- `git`          the only process: rev-parse, ls-tree, cat-file, log, none of which can reach a program
- `worktree`     which of HEAD's files differ on disk, hashed in-process (no `git diff`)
- `containment`  where a path really is (inside the workspace folders or not)
- `writes`       `write_decision`: allowed, with the user's confirmation, or never
"""
