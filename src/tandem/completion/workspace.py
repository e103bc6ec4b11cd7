"""The workspace as the model side sees it: what may be sent, the symbols of every file, the open
documents' token indexes, and context windows built from them.

The LSP edge feeds it document events (`open`, `change`, `close`); `start()` loads the tokenizer and scans
the workspace in a worker thread (files read here, never in `cache/`), then swaps the finished index in, so
the event loop never waits for the disk. Until then completions use a plain character window.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import pathlib
import posixpath
import time
from dataclasses import dataclass, field

from tandem.cache.context import MIN_BUDGET_TOKENS, ContextBuilder, ContextOptions, ContextWindow
from tandem.cache.lines import Edit, LineBuffer
from tandem.cache.privacy import ALLOWED, IGNORE_FILE_NAMES, PrivacyFilter, PrivacyPolicy, Verdict
from tandem.cache.symbols import SymbolIndex
from tandem.cache.token_index import TokenIndex
from tandem.cache.tokens import EncodingUnavailable, TokenCounter, get_counter
from tandem.completion.config.tree import ContextConfig, PrivacyConfig
from tandem.completion.gate import Gate, link_verdict, relative_path
from tandem.completion.machine.containment import Folders
from tandem.completion.machine.files import is_directory, is_link, read_file, reader
from tandem.completion.machine.ignores import IgnoreRules, read_ignore_files
from tandem.completion.machine.scan import MAX_DEPTH, Walk, walk

log = logging.getLogger(__name__)

# Files the symbol index reads: source code, by extension.
SOURCE_SUFFIXES = frozenset(
    ".py .pyi .js .jsx .mjs .ts .tsx .go .rs .java .kt .c .h .cc .cpp .hpp .cs .rb .php .lua .el .swift .scala"
    " .sh .ex .exs .hs .ml .zig .dart .vue .svelte".split()
)
# Directories never worth walking (dependencies, build output, caches); ignore files prune the rest.
SKIP_DIRS = frozenset(
    ".git .hg .svn node_modules __pycache__ .venv venv .tox .mypy_cache .ruff_cache .pytest_cache dist build"
    " target .idea .vscode .cache site-packages".split()
)
# Re-index an edited document's symbols this long after its last change (not on every keystroke).
SYMBOLS_AFTER_EDIT_S = 2.0


@dataclass
class ScanProgress:
    """How far a running scan has got (written by the scan's thread, read on the event loop)."""

    files: int = 0


@dataclass
class ScanResult:
    symbols: SymbolIndex
    privacy: PrivacyFilter
    files: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def scan_workspace(
    root: pathlib.Path,
    *,
    policy: PrivacyPolicy,
    max_files: int,
    progress: ScanProgress | None = None,
) -> ScanResult:
    """Walk `root` (blocking: run it in a thread), honouring ignore files and the privacy rules. Linked
    directories are not walked; a linked file that leads out of the workspace is not read unless the user
    opted its path in. Files are read by `machine.files` (regular files only, bounded, non-blocking). A
    directory the walk could not finish, or whose ignore file could not be read, is closed: nothing under
    it may be sent; a scan that fails altogether closes the whole workspace (privacy fails closed)."""
    started = time.perf_counter()
    privacy = PrivacyFilter(policy=policy)
    # The index keeps a digest of each file, not its text: it reads the file again through the door when a
    # snippet needs it, and answers only while the bytes are the ones read (and judged) here.
    symbols = SymbolIndex(reader=reader(root, max_bytes=policy.max_file_bytes))
    result = ScanResult(symbols=symbols, privacy=privacy)
    try:
        _scan(root, policy=policy, max_files=max_files, progress=progress, result=result)
    except Exception as error:  # whatever broke it, nothing unscanned may be sent
        log.warning("the workspace scan failed (%s): nothing of the workspace will be sent", error)
        privacy.close_directory("", f"could not be scanned ({type(error).__name__})")
    result.seconds = time.perf_counter() - started
    return result


def _scan(
    root: pathlib.Path, *, policy: PrivacyPolicy, max_files: int, progress: ScanProgress | None, result: ScanResult
) -> None:
    folders = Folders([root])
    privacy, symbols = result.privacy, result.symbols
    record = Walk()
    # The repository-wide sources (the global excludes file, info/exclude) and the root's ignore files.
    IgnoreRules([root]).refresh("", privacy)

    def descend(relative: str) -> bool:
        return posixpath.basename(relative) not in SKIP_DIRS and bool(privacy.check_path(f"{relative}/x"))

    for relative_dir, files in walk(root, record, descend=descend):
        read_ignore_files(root, relative_dir, files, privacy)
        for name in files:
            if os.path.splitext(name)[1] not in SOURCE_SUFFIXES:
                continue
            if result.files >= max_files:
                result.refused["over max_files"] = result.refused.get("over max_files", 0) + 1
                continue
            relative = f"{relative_dir}/{name}" if relative_dir else name
            verdict = privacy.check_path(relative)
            path = root / relative
            data = b""
            if verdict and is_link(path):
                verdict = link_verdict(folders, privacy, path, relative)
            if verdict:
                read = read_file(path, max_bytes=policy.max_file_bytes)
                if read.data is None:
                    verdict = Verdict(allowed=False, reason=read.refusal)
                else:
                    data = read.data
                    verdict = privacy.check_content(relative, data)
            if not verdict:
                kind = verdict.reason.split(" (")[0]
                result.refused[kind] = result.refused.get(kind, 0) + 1
                continue
            symbols.update(relative, data.decode("utf-8"), disk=data)
            result.files += 1
            if progress is not None:
                progress.files = result.files
    for directory, why in record.unfinished.items():
        log.info("%s %s; nothing under it will be sent", directory or "the workspace", why)
        privacy.close_directory(directory, why)


@dataclass
class _Open:
    path: str
    buffer: LineBuffer
    index: TokenIndex | None = None
    # Edits that arrived while the index was being built in a thread: (start, end, new lines).
    pending: list[tuple[int, int, list[str]]] | None = None
    # Edits applied to the buffer but not yet to the index, which takes them when it is next read
    # (`WorkspaceIndex._catch_up`): (start, end, new lines).
    deferred: list[tuple[int, int, list[str]]] = field(default_factory=list)
    verdict: Verdict = field(default_factory=lambda: Verdict(allowed=True))
    symbols_timer: asyncio.TimerHandle | None = None
    # When the symbols are to be re-indexed (the event loop's clock): SYMBOLS_AFTER_EDIT_S after the last edit.
    symbols_due: float = 0.0


class WorkspaceIndex:
    """One per server. Not thread-safe: call it from the event loop (it uses threads itself)."""

    def __init__(
        self,
        *,
        root: pathlib.Path | None,
        context: ContextConfig,
        privacy: PrivacyConfig,
        folders: list[pathlib.Path] | None = None,
    ) -> None:
        self.root = root
        self.folders = Folders(folders if folders else [root] if root is not None else [])
        self.settings = context
        # What may be sent is the gate's to decide (completion.gate); the index asks it and keeps the answers.
        policy = PrivacyPolicy(opt_in=privacy.opt_in, max_file_bytes=privacy.max_file_bytes)
        self.gate = Gate(root=root, policy=policy, folders=self.folders)
        # The root's ignore files now, not after the scan: editors open documents at once, and a document
        # judged without them would be judged wrongly (two small reads; the scan brings nested ones).
        if root is not None:
            read_ignore_files(root, "", IGNORE_FILE_NAMES, self.gate.privacy)
        self.symbols = SymbolIndex()
        self.counter: TokenCounter | None = None
        self.scan: ScanResult | None = None
        self._builder: ContextBuilder | None = None
        self._docs: dict[str, _Open] = {}
        # Documents with edits their index has not taken yet.
        self._behind: set[str] = set()
        # The background scan: whether one is coming, how far it has got, and its end (set however it ends).
        self.will_scan = root is not None and context.scan_workspace and is_directory(root)
        # Directories whose ignore files were read for a document opened before the scan ended.
        self._ignores_read: set[str] = {""}
        self.scan_progress = ScanProgress()
        self._scanned = asyncio.Event()
        # The gate made ready for folders added later (kept: a task nobody holds may be collected).
        self._preparing: asyncio.Task[None] | None = None

    # -- start-up -------------------------------------------------------------------------------

    @property
    def scanning(self) -> bool:
        """True until the background scan has ended (False at once when there is none to run)."""
        return self.will_scan and not self._scanned.is_set()

    async def wait_for_scan(self, timeout_s: float) -> bool:
        """Wait at most `timeout_s` for the background scan to end; True if it has."""
        if not self.scanning:
            return True
        try:
            await asyncio.wait_for(self._scanned.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    async def start(self) -> list[str]:
        """Load the tokenizer and scan the workspace off the event loop; returns problems to show."""
        try:
            return await self._start()
        finally:
            self._scanned.set()

    async def _start(self) -> list[str]:
        problems: list[str] = []
        # git's facts and the rules' first match, beside the tokenizer's load: a document opened meanwhile
        # waits at most for what is left of them, never for all of them on the event loop.
        prepared = asyncio.ensure_future(self._prepare_gate())
        try:
            self.counter = await asyncio.to_thread(get_counter, self.settings.encoding)
        except EncodingUnavailable as error:
            problems.append(f"context.encoding: {error}; using cl100k_base")
            self.counter = await asyncio.to_thread(get_counter, "cl100k_base")
        await prepared
        self._builder = self._make_builder()
        for uri, doc in self._docs.items():
            if doc.verdict and doc.index is None and doc.pending is None:
                self._index_later(uri, doc)
        if self.root is not None and self.will_scan:
            policy = self.privacy.policy
            scan = await asyncio.to_thread(
                scan_workspace,
                self.root,
                policy=policy,
                max_files=self.settings.max_files,
                progress=self.scan_progress,
            )
            self.scan, self.symbols, self.gate.privacy = scan, scan.symbols, scan.privacy
            self._judge_again()
            self._builder = self._make_builder()
            log.info(
                "workspace indexed: %d files in %.1f s; not sent: %s", scan.files, scan.seconds, scan.refused or "none"
            )
        return problems

    async def _prepare_gate(self) -> None:
        try:
            await asyncio.to_thread(self.gate.prepare)
        except Exception:  # the first judgement asks again, and fails closed where it cannot tell
            log.exception("tandem: preparing the privacy rules failed")

    def _judge_again(self) -> None:
        """The gate knows every ignore file now: documents opened before are judged again under them."""
        for uri, doc in self._docs.items():
            verdict = self.gate.open(uri, doc.buffer.text())
            if not verdict:
                self._refuse(uri, doc, verdict)
                doc.index, doc.pending = None, None
            elif not doc.verdict:
                doc.verdict = verdict
                if doc.index is None and doc.pending is None:
                    self._index_later(uri, doc)

    def _make_builder(self) -> ContextBuilder:
        assert self.counter is not None
        options = ContextOptions(
            budget_tokens=self.settings.budget_tokens,
            suffix_share=self.settings.suffix_share,
            snippet_share=self.settings.snippet_share,
            order=self.settings.order,
        )
        builder = ContextBuilder(
            counter=self.counter, symbols=self.symbols, options=options, may_send=lambda p: bool(self.may_send(p))
        )
        for doc in self._docs.values():
            if doc.index is not None and doc.verdict:
                builder.open_document(doc.path, doc.index)
        return builder

    # -- documents ------------------------------------------------------------------------------

    @property
    def privacy(self) -> PrivacyFilter:
        return self.gate.privacy

    def set_folders(self, folders: list[pathlib.Path]) -> None:
        """The client's workspace folders changed: reads and writes follow the new set (the first folder,
        the root, stays what it was: paths are relative to it)."""
        self.folders = Folders(folders)
        self.gate.set_folders(self.folders)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (a test's direct call): the first judgement asks git itself
        self._preparing = loop.create_task(self._prepare_gate())

    def relative(self, uri: str) -> str:
        return relative_path(uri, self.root)

    def may_send(self, path: str) -> Verdict:
        """Whether text from `path` may go into a prompt (path rules; an open document's own verdict)."""
        return self.gate.source(path)

    def verdict(self, uri: str) -> Verdict:
        """Whether this open document may be sent to a model at all (the gate's verdict at open)."""
        return self.gate.document(uri)

    def open(self, uri: str, buffer: LineBuffer) -> Verdict:
        """A document opened (or replaced whole): the gate decides whether it may be sent; if so it is
        indexed in the background."""
        self.close(uri)
        self._read_ignore_files_above(self.relative(uri))
        verdict = self.gate.open(uri, buffer.text())
        doc = _Open(path=self.relative(uri), buffer=buffer, verdict=verdict)
        self._docs[uri] = doc
        if verdict and self.counter is not None:
            self._index_later(uri, doc)
        return verdict

    def ensure_rules_for(self, path: str) -> None:
        """Before the scan has read them, the ignore files of the directories above `path` (relative), so
        that a file read for an edit before the scan ends is judged with the rules that apply to it."""
        self._read_ignore_files_above(path)

    def _read_ignore_files_above(self, path: str) -> None:
        """Before the scan has read them, the ignore files of the directories above a document being opened
        (a few small bounded reads): a document is never judged without the rules that apply to it."""
        if self.root is None or self.scan is not None or path.startswith("/") or "://" in path:
            return
        parts = path.split("/")[:-1]
        if len(parts) > MAX_DEPTH:  # as the scan would: what lies deeper than it walks is closed
            self.gate.privacy.close_directory("/".join(parts[: MAX_DEPTH + 1]), f"deeper than {MAX_DEPTH} levels")
            parts = parts[:MAX_DEPTH]
        for depth in range(1, len(parts) + 1):
            directory = "/".join(parts[:depth])
            if directory not in self._ignores_read:
                self._ignores_read.add(directory)
                read_ignore_files(self.root, directory, IGNORE_FILE_NAMES, self.gate.privacy)

    def _index_later(self, uri: str, doc: _Open) -> None:
        """Build the token index in a thread (a 1 MB file takes ~0.2 s); edits meanwhile are queued."""
        counter = self.counter
        assert counter is not None
        snapshot = doc.buffer.lines(0, doc.buffer.line_count)
        doc.pending = []

        def done(task: asyncio.Future[TokenIndex]) -> None:
            if self._docs.get(uri) is not doc or task.cancelled() or task.exception() is not None:
                return
            index = task.result()
            for start, end, new_lines in doc.pending or ():
                index.replace_lines(start, end, new_lines)
            doc.index, doc.pending = index, None
            if self._builder is not None:
                self._builder.open_document(doc.path, index)
                self._catch_up()  # the other open documents' indexes, read for snippets
                # Pre-build a window once: resolving the file's imports and the definitions it uses is
                # memoised, so the first keystroke's window costs what every later one does.
                self._builder.build(path=doc.path, index=index, line=0, character=0)

        future = asyncio.ensure_future(asyncio.to_thread(TokenIndex, counter, snapshot))
        future.add_done_callback(done)

    def change(self, uri: str, edit: Edit) -> Verdict:
        """`edit` was just applied to the document's buffer. A change that brings in a credential refuses
        the document from now on (the refusal is returned, once, for the user to be told)."""
        doc = self._docs.get(uri)
        if doc is None or not doc.verdict:
            return ALLOWED
        verdict = self.gate.change(uri, doc.buffer, edit)
        if not verdict:
            self._refuse(uri, doc, verdict)
            return verdict
        end = edit.start_line + edit.old_line_count
        new_lines = doc.buffer.lines(edit.start_line, edit.start_line + edit.new_line_count)
        if doc.index is not None:
            self._defer(uri, doc, edit.start_line, end, new_lines)
        elif doc.pending is not None:
            doc.pending.append((edit.start_line, end, new_lines))
        if self._builder is not None:
            self._builder.note_edit(doc.path, edit.start_line, lines_added=edit.new_line_count - edit.old_line_count)
        # One timer per document, moved on lazily: a keystroke only pushes the due time back, where a new
        # timer per keystroke (and the cancelled ones it leaves in the loop's heap) would cost each key.
        loop = asyncio.get_running_loop()
        doc.symbols_due = loop.time() + SYMBOLS_AFTER_EDIT_S
        if doc.symbols_timer is None:
            doc.symbols_timer = loop.call_at(doc.symbols_due, self._reindex, uri)
        return ALLOWED

    def _defer(self, uri: str, doc: _Open, start: int, end: int, new_lines: list[str]) -> None:
        """Keep an edit for the index to take when it is next read. Keys typed within one line between two
        reads leave only the last state of the line: re-encoding that line once gives the counts that
        re-encoding it after each key would (the lines a patch re-encodes do not depend on the edited
        line's text, and no block changes size), so the window is the same."""
        deferred = doc.deferred
        if deferred and end == start + 1 and len(new_lines) == 1:
            last_start, last_end, last_lines = deferred[-1]
            if last_start == start and last_end == end and len(last_lines) == 1:
                deferred[-1] = (start, end, new_lines)
                return
        deferred.append((start, end, new_lines))
        self._behind.add(uri)

    def _catch_up(self) -> None:
        """Every deferred edit into its document's index: a window reads the current document's and may
        read the other open documents' (snippets)."""
        for uri in self._behind:
            doc = self._docs.get(uri)
            if doc is None:
                continue
            if doc.index is not None:
                for start, end, new_lines in doc.deferred:
                    doc.index.replace_lines(start, end, new_lines)
            doc.deferred.clear()
        self._behind.clear()

    def _refuse(self, uri: str, doc: _Open, verdict: Verdict) -> None:
        """Nothing of this document is sent from now on: its window, its snippets, its symbols."""
        log.info("%s will not be sent to a model: %s", doc.path, verdict.reason)
        doc.verdict = verdict
        if doc.symbols_timer is not None:
            doc.symbols_timer.cancel()
            doc.symbols_timer = None
        if self._builder is not None:
            self._builder.close_document(doc.path)
        if doc.path in self.symbols:
            self.symbols.remove(doc.path)

    def _reindex(self, uri: str) -> None:
        doc = self._docs.get(uri)
        if doc is not None and doc.verdict:
            loop = asyncio.get_running_loop()
            if loop.time() < doc.symbols_due:  # edited since the timer was set: wait until the last edit's due
                doc.symbols_timer = loop.call_at(doc.symbols_due, self._reindex, uri)
                return
            doc.symbols_timer = None
            self.symbols.update(doc.path, doc.buffer.text())

    def close(self, uri: str) -> None:
        self.gate.close(uri)
        doc = self._docs.pop(uri, None)
        if doc is not None:
            if doc.symbols_timer is not None:
                doc.symbols_timer.cancel()
            if self._builder is not None:
                self._builder.close_document(doc.path)

    # -- context --------------------------------------------------------------------------------

    def window(self, uri: str, line: int, character: int, *, inserted: str = "") -> ContextWindow | None:
        """The token-budgeted window at a cursor, or None while the document's index is not ready.
        `inserted`: the window as if that text were typed at the cursor (a suggestion not yet accepted),
        within the same budget."""
        doc = self._docs.get(uri)
        if doc is None or doc.index is None or self._builder is None or not doc.verdict:
            return None
        self._catch_up()
        if not inserted:
            return self._builder.build(path=doc.path, index=doc.index, line=line, character=character)
        assert self.counter is not None  # the builder is made with it
        extra = self.counter.count(inserted)
        options = self._builder.options
        smaller = dataclasses.replace(options, budget_tokens=max(MIN_BUDGET_TOKENS, options.budget_tokens - extra))
        window = self._builder.build(path=doc.path, index=doc.index, line=line, character=character, options=smaller)
        return dataclasses.replace(window, prefix=window.prefix + inserted, prefix_tokens=window.prefix_tokens + extra)
