"""tandem's own state in its state directory ($XDG_STATE_HOME/tandem): the day's spend.

Several tandem processes run at once (one per editor window) and each adds to the same day's spend, so the
spend lives in one SQLite database in WAL mode (`spend.sqlite3`): every process adds its figures inside a
transaction, readers never wait for a writer, and the day's total is the sum of every process's adds.
`open_state_db` opens it: a link or anything but a regular file at that name is refused (the state
directory is the user's, but nothing there is followed blindly). A SQLite write waits for another process's
at most `BUSY_TIMEOUT_S`, so a stuck writer elsewhere cannot hold this server's event loop.

The JSON file of earlier versions (`spend.json`) is read through `files.read_file` like any other file
(bounded, regular files only) and removed once its day is in the database.

`is_state_file` names every file here that tandem keeps for itself: no trace or report may be written over
one of them (a trace rotating onto the spend database would reset the day's limit).
"""

from __future__ import annotations

import os
import pathlib
import sqlite3
import stat

from tandem.completion.machine.files import FileRead, read_file

# A state file is small; anything larger is not tandem's.
MAX_STATE_BYTES = 1024 * 1024
SPEND_DB = "spend.sqlite3"
LEGACY_SPEND_JSON = "spend.json"
# SQLite's own files beside a database in WAL mode.
_DB_COMPANIONS = ("", "-wal", "-shm", "-journal")
# How long one write may wait for another process's (a write takes microseconds; past this the figures
# stay in memory and go with the next write).
BUSY_TIMEOUT_S = 0.05
SETUP_TIMEOUT_S = 0.5


def state_dir() -> pathlib.Path:
    """tandem's state directory: $XDG_STATE_HOME/tandem (default ~/.local/state/tandem)."""
    state = os.environ.get("XDG_STATE_HOME") or str(pathlib.Path.home() / ".local" / "state")
    return pathlib.Path(state) / "tandem"


def state_files(directory: pathlib.Path | None = None) -> tuple[pathlib.Path, ...]:
    """Every file tandem keeps for itself in `directory` (default: the state directory)."""
    where = directory if directory is not None else state_dir()
    return (*(where / f"{SPEND_DB}{suffix}" for suffix in _DB_COMPANIONS), where / LEGACY_SPEND_JSON)


def is_state_file(path: pathlib.Path | str, directory: pathlib.Path | None = None, *, rotations: int = 0) -> bool:
    """True if `path` (after its links), or one of its first `rotations` rotated names (`path.1` ...), is or
    would be one of tandem's own state files."""
    own = {os.path.realpath(p) for p in state_files(directory)}
    names = [str(path), *(f"{path}.{n}" for n in range(1, rotations + 1))]
    return any(os.path.realpath(name) in own for name in names)


def read_state(path: pathlib.Path) -> FileRead:
    return read_file(path, max_bytes=MAX_STATE_BYTES)


def remove_state(path: pathlib.Path) -> None:
    """Remove one of tandem's state files (gone already is fine; a link is removed, not its target)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def open_state_db(path: pathlib.Path) -> sqlite3.Connection:
    """The SQLite database at `path` (created if missing), in WAL mode, in autocommit (each statement or
    explicit transaction commits on its own). OSError when something other than a regular file is there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for own in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            mode = os.lstat(own).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            raise OSError(f"{own} is not a regular file")
    try:
        # Setting up (WAL, the tables) may wait longer for a process starting at the same moment.
        db = sqlite3.connect(path, timeout=SETUP_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as error:
        raise OSError(f"{path}: {error}") from error
    try:
        db.execute("PRAGMA journal_mode=WAL")
        # WAL with synchronous=NORMAL: a commit is durable across a crash of the process (not of the
        # machine) and costs no fsync of its own.
        db.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.Error as error:
        db.close()
        raise OSError(f"{path}: {error}") from error
    return db


def settle_state_db(db: sqlite3.Connection) -> None:
    """After set-up: a write waits for another process's at most `BUSY_TIMEOUT_S`."""
    db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
