"""The only door to the user's machine: reading workspace files and ignore files, listing directories,
looking at what a path is, running git, deciding where an edit may write, and tandem's own files. Nothing
else in the product opens, lists or looks at a file or starts a process (`tests/unit/test_machine_door.py`
checks it); `docs/machine.md` lists every door and every git command with the reason it cannot run a
repository's programs.

- `files`            one file read: regular files only (after links), O_NONBLOCK and fstat, bounded, inside;
                     and the looks that open nothing (exists, is a directory, is a link, identity)
- `ignores`          every source of ignore rules git reads (and .tandemignore), kept current
- `scan`             listing the workspace: iterative, bounded in depth and entries, naming what it did not see
- `git`              the only process: rev-parse, ls-tree, cat-file, log, none of which can reach a program
- `worktree`         which of HEAD's files differ on disk, hashed in-process (no `git diff`)
- `containment`      where a path really is (inside the workspace folders or not, below a directory or not)
- `writes`           `write_decision`: allowed, with the user's confirmation, or never
- `state`            tandem's own state directory: the day's spend database, and which files are tandem's
- `trace_files`      tandem's trace file: opened for appending, rotated
- `tokenizer_files`  tiktoken's cache file, read through `files` and handed to tiktoken in a private copy
- `own_process`      the server's own descriptors and memory, from `/proc/self` (for `tandem/health`)
"""
