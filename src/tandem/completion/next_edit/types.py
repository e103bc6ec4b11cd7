"""What a next-edit request is, what it answers, and its trace record (`completion.next_edit.suggest`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tandem.cache.edit_history import Lines
from tandem.cache.edit_region import CharEdit
from tandem.completion.inline.streams import Stream
from tandem.completion.observe.trace import TraceRecord


@dataclass(frozen=True, kw_only=True)
class NextEditRequest:
    """Where the user is: a position (server columns) in one version of one document."""

    uri: str
    version: int
    line: int
    character: int
    document: Lines
    language: str = ""
    path: str = ""
    client: str = ""
    received_ns: int = 0
    prefetch: bool = False


@dataclass(frozen=True, kw_only=True)
class Suggestion:
    """One edit (server positions) for document `uri` at `version`."""

    uri: str
    version: int
    edit: CharEdit
    trace_id: str


@dataclass(frozen=True, kw_only=True)
class NextEditResult:
    suggestion: Suggestion | None = None
    trace_id: str = ""
    # answered | empty | rejected | stale | superseded | skipped | refused | error | not-configured
    outcome: str = ""
    reason: str = ""


@dataclass(kw_only=True)
class NextEditRecord(TraceRecord):
    """A next-edit request's trace: region size, what was found, and the suggestion's fate."""

    region_lines: int = 0
    history_edits: int = 0
    hunks: int = 0
    # Why hunks were refused, in the order met: no-op | reversal | outside | parse.
    refused: list[str] = field(default_factory=list)
    shown: bool = False
    # accepted | dismissed | superseded | stale (accept refused: the document moved on) | "" (unknown)
    fate: str = ""
    # The model streams behind the record (not written; two when the region is split): the record is
    # written once they have ended.
    streams: list[Stream] = field(default_factory=list, repr=False, compare=False)
    # How many parts the region was asked in (1, or 2 with `[next_edit] split`).
    parts: int = 0
    # The request whose rewrite was carried over to this one's text: it answered (source "rebased"), or
    # it disagreed with the user's newer text and a request was made (source "model").
    rebased_from: str = ""
    # That rewrite had not yet streamed as far as the user's change, so a request was made at once beside
    # it; the source says which answered ("rebased": the earlier rewrite agreed and had a hunk first).
    hedged: bool = False

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        data["next_edit"] = {
            "region_lines": self.region_lines,
            "history_edits": self.history_edits,
            "hunks": self.hunks,
            "refused": self.refused,
            "shown": self.shown,
            "parts": self.parts,
            "fate": self.fate,
            "rebased_from": self.rebased_from,
            "hedged": self.hedged,
        }
        return data
