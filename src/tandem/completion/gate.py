"""The one door to a provider: what may leave the machine is decided here, and only here.

Contract
--------
No text reaches a backend (`Backend.stream`) unless `Gate.admit` said yes to the `Outbound` that carries it,
immediately before it is sent. The three senders on the model side call it: `Engine._start` (completions of
either kind, speculation after a suggestion is shown or accepted, the new-line prefetch), `attempt.ask_model`
(edits, whichever command or code action started them) and `NextEdits._plan` (next edits, asked or
prefetched after an accepted one). Handlers in `tandem.lsp` never
decide; they hand documents to the workspace index (which asks `Gate.open`) and requests to the engine.

An `Outbound` names every source of its text, and `admit` checks each, then the text as sent:

    document      the open document the request is about: its verdict from `Gate.open` (path rules, skip
                  reasons, credentials anywhere in it when it was opened), or the path rules alone for a
                  document the gate never saw opened
    files         other files shown whole (an edit's own file, its context files): path rules and content
                  checks (size, binary, credentials) on exactly the text that goes out
    snippet_paths files that snippets and recent edits come from: path rules, and the verdict of the open
                  document at that path (their text was checked when it was indexed: by the workspace
                  scan, with the same `PrivacyFilter`, or by `Gate.open`)
    the request   the final prompt text (prefix, suffix, snippets, instruction, messages): no credential
                  pattern, and no more than `max_prompt_chars`; this catches what a label above missed

The checks themselves are `cache.privacy.PrivacyFilter` (ignore files, secret-looking names, opt-in,
credential patterns) plus the skip reasons below (binary, huge). A refusal is a `Verdict` whose reason is
fit for a log line or a trace: it names a rule or a line number, never content.

Extending it: a check on paths goes in `Gate.path`, which every other path check goes through; a check
on content in `Gate.content`; a check on an open document in `Gate.open` (which follows links out of the
workspace folders) and, as it is typed, in `Gate.change` (which refuses a document a change brings a
credential into, so every later `admit` sees the refusal).

Who calls what:

    Gate.open / close      the workspace index, on didOpen / didChange (whole text) / didClose
    Gate.change            the workspace index, on every incremental change
    Gate.document          the engine and next edits before any work; code actions (offered or not); which
                           documents' recent edits next edits may show
    Gate.source            the context builder (which files' snippets and recent edits may be used)
    Gate.file              the edit flow, for its own file and each context file (path rules, links and
                           content: what an edit shows whole)
    Gate.admit             the engine and the edit flow, just before the backend is called
"""

from __future__ import annotations

import functools
import logging
import pathlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

from tandem.cache.lines import Edit, LineBuffer
from tandem.cache.privacy import PrivacyFilter, PrivacyPolicy, Verdict
from tandem.cache.secrets import credential_in
from tandem.completion.machine.containment import Folders
from tandem.completion.machine.files import identity as file_identity
from tandem.completion.machine.ignores import IgnoreRules
from tandem.completion.providers.backends.base import ModelRequest

log = logging.getLogger(__name__)

# Larger open documents are tracked by the editor's copy but never sent (the window around the cursor of a
# file this size says little, and checking it for credentials on open would stall the event loop).
MAX_DOCUMENT_CHARS = 8_000_000
# The longest legitimate prompt is an edit of a file at the file-size cap with its context files; far past
# that, a prompt is a bug in its assembly, and megabytes must not leave the machine by accident.
PROMPT_CHARS_PER_FILE_CAP = 4
# Open documents are checked for credentials in overlapping pieces (see `check_in_pieces`).
_PIECE_OVERLAP = 256


def uri_path(uri: str) -> pathlib.Path | None:
    parsed = urlparse(uri)
    return pathlib.Path(unquote(parsed.path)) if parsed.scheme == "file" else None


@functools.lru_cache(maxsize=4096)  # asked several times per keystroke; parsing the uri is most of a hit's gate
def relative_path(uri: str, root: pathlib.Path | None) -> str:
    """The path the rules (and the symbol index) use: POSIX, relative to `root` when inside it (a pure function
    of its arguments: no file is looked at)."""
    path = uri_path(uri)
    if path is None:
        return uri
    if root is not None:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    return path.as_posix()


def skip_reason(text: str) -> str:
    """Why a document is never sent whatever its path ("" if none): binary content, or too large."""
    if "\x00" in text[:8192]:
        return "binary content"
    if len(text) > MAX_DOCUMENT_CHARS:
        return f"too large ({len(text) / 1e6:.1f} M characters; the limit is {MAX_DOCUMENT_CHARS / 1e6:g} M)"
    return ""


def link_verdict(folders: Folders, privacy: PrivacyFilter, path: pathlib.Path, relative: str) -> Verdict:
    """Whether `path` may be read for context as far as links go: not if it leads out of the workspace,
    unless the user opted `relative` in (`privacy.opt_in`; a workspace's own config cannot); and a link
    inside it is held to the rules of what it leads to (`config.py -> .env` is `.env`)."""
    refusal = folders.read_refusal(path, relative)
    if refusal and not privacy.opted_in(relative):
        return Verdict(allowed=False, reason="links outside the workspace")
    target = folders.real_relative(path) if folders else None
    if target is not None and target != relative:
        return privacy.check_path(target)
    return Verdict(allowed=True)


def check_in_pieces(privacy: PrivacyFilter, path: str, text: str) -> Verdict:
    """Binary and credential checks over `text` of any size. The size cap governs what is read from disk
    and sent whole, not an open file, of which only the window around the cursor is sent: large texts
    are checked piece by piece (overlapping, so no credential hides on a boundary)."""
    # Characters per piece such that a piece never exceeds the byte cap, even in 4-byte characters.
    piece = max(4096, privacy.policy.max_file_bytes // 4 - _PIECE_OVERLAP)
    for start in range(0, max(len(text), 1), piece):
        verdict = privacy.check_content(path, text[max(0, start - _PIECE_OVERLAP) : start + piece])
        if not verdict:
            return verdict
    return Verdict(allowed=True)


@dataclass(frozen=True, kw_only=True)
class Outbound:
    """One request bound for a provider, and where its text came from (see the module docstring)."""

    request: ModelRequest
    # The open document's uri (completions), or "" when the request is about files named in `files`.
    document: str = ""
    # {workspace-relative path: the text of it that is in the request}.
    files: Mapping[str, str] = field(default_factory=dict)
    snippet_paths: tuple[str, ...] = ()


def outbound_text(request: ModelRequest) -> str:
    """Every text of `request` that a backend may put on the wire."""
    parts = [request.prefix, request.suffix, request.instruction, request.raw_prompt, request.follow_up]
    parts += [content for _, content in request.messages]
    return "\n".join(part for part in parts if part)


class Gate:
    """One per workspace (the workspace index holds it); the engine and the edit flow share it."""

    def __init__(
        self, *, root: pathlib.Path | None = None, policy: PrivacyPolicy | None = None, folders: Folders | None = None
    ) -> None:
        self.root = root
        # The workspace folders: an open document that is a link out of them is refused (unless opted in).
        self.folders = folders if folders is not None else Folders([root] if root is not None else [])
        # Every source of ignore rules git reads, and .tandemignore, for every folder, kept current.
        self._ignore_rules = self._rules_for(self.folders)
        self._privacy = PrivacyFilter(policy=policy)
        # Where links in the workspace lead, by path (a few system calls each: asked again only when the file
        # at that path is another one), with the identity of the file it was asked for.
        self._links: dict[str, tuple[tuple[int, int, int] | None, Verdict]] = {}
        self._open: dict[str, Verdict] = {}
        # Open documents the gate refused, by path: no snippet may come from them.
        self._refused_paths: dict[str, Verdict] = {}

    @property
    def privacy(self) -> PrivacyFilter:
        """The rules; replaced by the workspace scan with a filter that knows every ignore file."""
        return self._privacy

    @privacy.setter
    def privacy(self, privacy: PrivacyFilter) -> None:
        self._privacy = privacy
        self._links.clear()
        self._ignore_rules.forget()

    def _rules_for(self, folders: Folders) -> IgnoreRules:
        roots = [self.root] if self.root is not None else []
        return IgnoreRules([*roots, *(r for r in folders.roots if r not in roots)])

    def prepare(self) -> None:
        """What the first judgement would otherwise do on the event loop, done now (call it in a worker
        thread): git's facts about every folder, and the rule sets' first match."""
        self._ignore_rules.prepare()
        PrivacyFilter.warm_up()

    def set_folders(self, folders: Folders) -> None:
        """The workspace folders changed (added or removed by the client)."""
        self.folders = folders
        self._ignore_rules = self._rules_for(folders)
        self._links.clear()

    @property
    def max_prompt_chars(self) -> int:
        return PROMPT_CHARS_PER_FILE_CAP * self.privacy.policy.max_file_bytes

    def relative(self, uri: str) -> str:
        """The path the rules see: POSIX, relative to the workspace root when inside it."""
        return relative_path(uri, self.root)

    # -- the checks --------------------------------------------------------------------------------

    def path(self, path: str) -> Verdict:
        """The rules that need only a workspace-relative path: ignore files, secret-looking names, and for a
        link in the workspace, where it leads (out of the workspace: refused unless opted in; inside it: the
        rules of its target)."""
        self._ignore_rules.refresh(path, self.privacy)
        verdict = self.privacy.check_path(path)
        if not verdict or self.root is None or not self.folders:
            return verdict
        file = self.root / path
        # The answer is kept for the file as it is now: a path that did not exist, or a file since replaced
        # by a link (another inode or type), is judged again (one lstat instead of resolving every link).
        identity = file_identity(file)
        kept = self._links.get(path)
        if kept is not None and kept[0] == identity:
            return kept[1]
        linked = link_verdict(self.folders, self.privacy, file, path) if identity is not None else verdict
        self._links[path] = (identity, linked)
        return linked

    def content(self, path: str, text: str) -> Verdict:
        """The rules on a file's text sent whole: size, binary, credential patterns."""
        return self.privacy.check_content(path, text)

    def file(self, path: str, text: str) -> Verdict:
        """May `text`, the content of `path`, be shown to a model whole?"""
        verdict = self.path(path)
        return self.content(path, text) if verdict else verdict

    # -- open documents ----------------------------------------------------------------------------

    def open(self, uri: str, text: str) -> Verdict:
        """A document was opened (or replaced whole): decide, once, whether anything of it may be sent."""
        self._ignore_rules.new_epoch()
        path = self.relative(uri)
        verdict = self.path(path)
        file = uri_path(uri)
        if verdict and file is not None and self.folders:
            verdict = link_verdict(self.folders, self.privacy, file, path)
        if verdict:
            reason = skip_reason(text)
            verdict = Verdict(allowed=False, reason=reason) if reason else check_in_pieces(self.privacy, path, text)
        self._record(uri, path, verdict)
        return verdict

    def change(self, uri: str, buffer: LineBuffer, edit: Edit) -> Verdict:
        """`edit` was just applied to an open document's `buffer`: the credential check over the lines it
        touched (every pattern fits on one line, so a keystroke costs the length of its line). A document
        that starts to hold a credential is refused from then on; the refusal is returned."""
        verdict = self.document(uri)
        if not verdict:
            return verdict
        end = edit.start_line + edit.new_line_count
        lines = buffer.lines(edit.start_line, max(end, edit.start_line + 1))
        path = self.relative(uri)
        verdict = check_in_pieces(self.privacy, path, "".join(lines))
        if not verdict:
            self._record(uri, path, verdict)
        return verdict

    def _record(self, uri: str, path: str, verdict: Verdict) -> None:
        if not verdict:
            log.info("%s will not be sent to a model: %s", path, verdict.reason)
            self._refused_paths[path] = verdict
        else:
            self._refused_paths.pop(path, None)
        self._open[uri] = verdict

    def close(self, uri: str) -> None:
        self._open.pop(uri, None)
        self._refused_paths.pop(self.relative(uri), None)

    def source(self, path: str) -> Verdict:
        """May text from `path` (a snippet, a recent edit) be sent: its path rules, and its open document's
        verdict if it is open."""
        refused = self._refused_paths.get(path)
        return refused if refused is not None else self.path(path)

    def document(self, uri: str) -> Verdict:
        """The verdict on an open document (path rules alone for one the gate never saw opened)."""
        self._ignore_rules.new_epoch()  # a request: ignore files are looked at again
        verdict = self._open.get(uri)
        if verdict is not None and not verdict:
            return verdict
        # The path rules again (cheap: kept per path and file state): an ignore file saved since the document
        # was opened applies to it now.
        return self.path(self.relative(uri))

    # -- the door ----------------------------------------------------------------------------------

    def admit(self, outbound: Outbound) -> Verdict:
        """The last word before a backend is called: every source of the text, then the text itself."""
        self._ignore_rules.new_epoch()
        if outbound.document:
            verdict = self.document(outbound.document)
            if not verdict:
                return verdict
        for path, text in outbound.files.items():
            verdict = self.file(path, text)
            if not verdict:
                return Verdict(allowed=False, reason=f"{path}: {verdict.reason}")
        for path in outbound.snippet_paths:
            verdict = self.source(path)
            if not verdict:
                return Verdict(allowed=False, reason=f"a snippet from {path}: {verdict.reason}")
        text = outbound_text(outbound.request)
        if len(text) > self.max_prompt_chars:
            return Verdict(allowed=False, reason=f"prompt too large ({len(text)} characters > {self.max_prompt_chars})")
        if "\x00" in text:
            return Verdict(allowed=False, reason="the prompt holds binary content (NUL characters)")
        found = credential_in(text)
        if found:
            return Verdict(allowed=False, reason=f"the prompt holds a credential ({found})")
        return Verdict(allowed=True)
