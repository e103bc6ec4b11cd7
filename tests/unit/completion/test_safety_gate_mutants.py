"""The gate (`completion.gate`) where mutation testing found it thin: links and the answers kept about them,
the overlap of the pieces a long document is checked in, the lines a change touched, every field of a
prompt, NUL characters and the exact limits. Each test states an input that the gate decides one way and
a plausible slip in it would decide the other (`python tools/mutation.py --module tandem.completion.gate`)."""

from __future__ import annotations

import dataclasses
import os
import pathlib

import pytest

from tandem.cache.lines import Edit, LineBuffer
from tandem.cache.privacy import PrivacyFilter, PrivacyPolicy
from tandem.completion.gate import (
    MAX_DOCUMENT_CHARS,
    Gate,
    Outbound,
    check_in_pieces,
    outbound_text,
    relative_path,
    skip_reason,
    uri_path,
)
from tandem.completion.machine.containment import Folders
from tandem.completion.providers.backends.base import ModelRequest

KEY = "AKIA" + "Q7RZ2V4N8K3M5P1X"  # the shape of an AWS access key id (not a real one)
ROOT = pathlib.Path("/work/space")
OVERLAP = 256  # the overlap the gate promises between the pieces of a long document


def _pem_header(length: int) -> str:
    """A private-key header of exactly `length` characters (the pattern allows any number of words)."""
    head, tail = "-----BEGIN ", "PRIVATE KEY-----"
    words = length - len(head) - len(tail)
    assert words >= 0 and words % 2 == 0
    return head + "A " * (words // 2) + tail


def _request(**fields: object) -> ModelRequest:
    return ModelRequest(**{"prefix": "", "suffix": "", **fields})  # type: ignore[arg-type]


@pytest.fixture
def workspace(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "ws"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("private = 1\n")
    (root / "real.py").write_text("x = 1\n")
    (root / ".env").write_text("A=1\n")
    os.symlink(outside / "notes.txt", root / "out.py")
    os.symlink(root / ".env", root / "config.py")
    os.symlink(root / "real.py", root / "alias.py")
    return root


# -- paths -----------------------------------------------------------------------------------------


def test_uris_become_the_paths_the_rules_see() -> None:
    assert uri_path("untitled:Untitled-1") is None and uri_path("about:blank") is None
    assert uri_path("file:///work/space/a%20b.py") == pathlib.Path("/work/space/a b.py")
    assert relative_path("file:///work/space/pkg/a.py", ROOT) == "pkg/a.py"
    assert relative_path("file:///elsewhere/a.py", ROOT) == "/elsewhere/a.py"
    assert relative_path("file:///elsewhere/a.py", None) == "/elsewhere/a.py"
    assert relative_path("untitled:Untitled-1", ROOT) == "untitled:Untitled-1"


def test_a_link_is_held_to_where_it_leads(workspace: pathlib.Path) -> None:
    gate = Gate(root=workspace)
    assert gate.path("real.py") and gate.path("alias.py")
    assert gate.path("out.py").reason == "links outside the workspace"
    # A link inside the workspace is judged as its target: config.py -> .env is .env.
    assert ".env" in gate.path("config.py").reason
    # Asked again (the answer is kept), the same.
    assert not gate.path("out.py") and not gate.path("config.py") and gate.path("alias.py")
    # The path rules come first: a secret-looking name is refused whatever it is.
    assert "secret by its name" in gate.path(".env").reason


def test_a_link_out_is_sent_only_when_the_user_opted_its_path_in(workspace: pathlib.Path) -> None:
    assert Gate(root=workspace, policy=PrivacyPolicy(opt_in=("out.py",))).path("out.py")
    gate = Gate(root=workspace)
    assert not gate.path("out.py")
    # New rules (the workspace scan replaces the filter) forget every answer kept under the old ones.
    gate.privacy = PrivacyFilter(policy=PrivacyPolicy(opt_in=("out.py",)))
    assert gate.path("out.py")


def test_a_link_to_a_secret_is_refused_whatever_the_names_order(workspace: pathlib.Path) -> None:
    (workspace / "zz").mkdir()
    (workspace / "zz" / "server.pem").write_text("x\n")
    os.symlink(workspace / "zz" / "server.pem", workspace / "a_link.py")
    os.symlink(workspace / ".env", workspace / "zzz_link.py")
    gate = Gate(root=workspace)
    assert "'*.pem'" in gate.path("a_link.py").reason
    assert "env'" in gate.path("zzz_link.py").reason


def test_without_a_root_an_open_document_is_still_held_to_the_workspace_folders(workspace: pathlib.Path) -> None:
    gate = Gate(folders=Folders([workspace]))
    assert gate.path("out.py")  # no root: a bare path names no file to follow
    assert gate.open((workspace / "out.py").as_uri(), "private = 1\n").reason == "links outside the workspace"
    assert gate.open((workspace / "real.py").as_uri(), "x = 1\n")


def test_an_answer_kept_before_a_path_became_a_link_out_does_not_let_it_through(workspace: pathlib.Path) -> None:
    gate = Gate(root=workspace)
    assert gate.path("later.py")  # nothing there yet: the rules on its name allow it
    os.symlink(workspace.parent / "outside" / "notes.txt", workspace / "later.py")
    assert gate.path("later.py").reason == "links outside the workspace"
    assert not gate.file("later.py", "private = 1\n")
    # And a regular file replaced by a link out is judged again as well.
    assert gate.path("real.py")
    (workspace / "real.py").unlink()
    os.symlink(workspace.parent / "outside" / "notes.txt", workspace / "real.py")
    assert not gate.path("real.py")


def test_an_open_document_that_is_a_link_out_is_refused_and_so_are_snippets_of_it(workspace: pathlib.Path) -> None:
    gate = Gate(root=workspace)
    uri = (workspace / "out.py").as_uri()
    verdict = gate.open(uri, "private = 1\n")
    assert verdict.reason == "links outside the workspace" and not gate.document(uri)
    assert not gate.source("out.py")
    # Opened by the user from outside every workspace folder: not this check's business.
    elsewhere = workspace.parent / "outside" / "notes.txt"
    assert gate.open(elsewhere.as_uri(), "private = 1\n")
    # Without workspace folders there are no links to judge (and no root to be relative to).
    assert Gate(root=workspace, folders=Folders([])).path("out.py")
    assert Gate().open(uri, "private = 1\n")


def test_an_open_document_judged_by_path_content_and_then_recorded() -> None:
    gate = Gate(root=ROOT)
    uri = (ROOT / "a.py").as_uri()
    assert not gate.open(uri, f"K = '{KEY}'\n") and not gate.source("a.py")
    # Replaced whole by clean text: allowed again, snippets too.
    assert gate.open(uri, "K = 1\n") and gate.source("a.py") and gate.document(uri)
    gate.open(uri, f"K = '{KEY}'\n")
    gate.close(uri)
    # Closed: the path rules alone again.
    assert gate.source("a.py") and gate.document(uri)
    # A refused path is refused before its content is looked at: no content check on a `.env`.
    assert "secret by its name" in gate.open((ROOT / ".env").as_uri(), "clean = 1\n").reason


def test_a_file_shown_whole_needs_its_path_and_its_content() -> None:
    gate = Gate(root=ROOT)
    assert gate.file("a.py", "x = 1\n")
    assert "secret by its name" in gate.file(".env", "x = 1\n").reason
    assert "AWS Access Key" in gate.file("a.py", f"K = '{KEY}'\n").reason
    assert "binary" in gate.content("a.py", "\x00").reason


# -- skip reasons and the pieces of a long document ------------------------------------------------


def test_skip_reasons_at_their_exact_limits() -> None:
    assert skip_reason("x" * 8191 + "\x00") == "binary content"
    assert skip_reason("x" * 8192 + "\x00") == ""  # past the sniffed start: the content checks decide
    assert MAX_DOCUMENT_CHARS == 8_000_000
    assert skip_reason("x" * 8_000_000) == ""
    assert skip_reason("x" * 8_000_001) == "too large (8.0 M characters; the limit is 8 M)"
    # The size is in millions of characters, rounded.
    assert skip_reason("x" * 8_049_999).startswith("too large (8.0 M characters")
    assert skip_reason("x" * 8_050_000).startswith("too large (8.1 M characters")


def test_a_credential_across_a_piece_boundary_is_found_wherever_it_falls() -> None:
    """Pieces overlap by 256 characters, so a credential of up to 257 characters lies whole in one of them
    wherever it starts; the longest is placed at every start around a boundary."""
    privacy = PrivacyFilter(policy=PrivacyPolicy(max_file_bytes=40_000))
    piece = 40_000 // 4 - OVERLAP
    header = _pem_header(OVERLAP + 1)
    for boundary in (piece, 2 * piece):
        for start in range(boundary - len(header) - 2, boundary + 2):
            text = "x" * start + header + "\n" + "y" * (3 * piece - start)
            verdict = check_in_pieces(privacy, "a.py", text)
            assert "private key" in verdict.reason.lower(), (boundary, start)


def test_each_piece_fits_the_byte_cap_even_in_four_byte_characters() -> None:
    # A text of 4-byte characters longer than a piece, at the smallest cap whose pieces are not the floor.
    for cap in (80_000, (4096 + OVERLAP) * 4):
        privacy = PrivacyFilter(policy=PrivacyPolicy(max_file_bytes=cap))
        assert check_in_pieces(privacy, "a.py", "\U0001f600" * (cap // 2)), cap


def test_an_empty_or_one_character_text_is_still_checked() -> None:
    privacy = PrivacyFilter()
    assert check_in_pieces(privacy, "a.py", "")
    assert "binary" in check_in_pieces(privacy, "a.py", "\x00").reason


def test_a_credential_at_the_very_start_of_a_document_is_found() -> None:
    assert "AWS Access Key, line 1," in check_in_pieces(PrivacyFilter(), "a.py", KEY + "\nx = 1\n").reason
    assert not Gate(root=ROOT).open((ROOT / "a.py").as_uri(), f"{KEY} = 1\n")


# -- changes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("at_line", [0, 1, 2, 5])
@pytest.mark.parametrize("pasted_lines", [1, 2, 3, 4])
def test_a_paste_with_a_key_on_its_last_line_refuses_the_document(at_line: int, pasted_lines: int) -> None:
    gate = Gate(root=ROOT)
    uri = (ROOT / "a.py").as_uri()
    buffer = LineBuffer("".join(f"line{i} = {i}\n" for i in range(8)))
    assert gate.open(uri, buffer.text())
    # The key lands on the paste's last line, joined to the rest of the line the paste went into.
    paste = "".join(f"p{i} = {i}\n" for i in range(pasted_lines - 1)) + f"K = '{KEY}'  # "
    edit = buffer.replace((at_line, 0), (at_line, 0), paste)
    assert edit.start_line == at_line and edit.new_line_count == pasted_lines
    verdict = gate.change(uri, buffer, edit)
    assert f"AWS Access Key, line {pasted_lines}," in verdict.reason
    assert not gate.document(uri) and not gate.source("a.py")
    # Once refused, later changes return the refusal without looking again.
    assert gate.change(uri, buffer, buffer.replace((7, 0), (7, 0), "#")) == verdict


def test_a_change_is_checked_on_the_lines_it_touched_only() -> None:
    gate = Gate(root=ROOT)
    uri = (ROOT / "a.py").as_uri()
    buffer = LineBuffer("a = 1\nb = 2\n")
    gate.open(uri, buffer.text())
    assert gate.change(uri, buffer, buffer.replace((0, 5), (0, 5), "0"))
    assert gate.document(uri)
    # An edit that reports no new lines still checks the line now at its start.
    for line in (0, 1):
        key_buffer = LineBuffer("a = 1\n" * line + f"K = '{KEY}'\nb = 2\n")
        assert not Gate(root=ROOT).change(uri, key_buffer, Edit(start_line=line, old_line_count=1, new_line_count=0))
    # A NUL typed into a document is binary content, even as the only character.
    other = (ROOT / "b.py").as_uri()
    empty = LineBuffer("")
    gate.open(other, "")
    assert "binary" in gate.change(other, empty, empty.replace((0, 0), (0, 0), "\x00")).reason


# -- the door --------------------------------------------------------------------------------------

_FIELDS = ("prefix", "suffix", "instruction", "raw_prompt", "follow_up")


@pytest.mark.parametrize("field", [*_FIELDS, "messages"])
def test_a_credential_in_any_field_of_the_prompt_is_refused(field: str) -> None:
    text = f"# line 1\nK = '{KEY}'\n"
    request = _request(messages=(("user", text),)) if field == "messages" else _request(**{field: text})
    assert text in outbound_text(request)
    verdict = Gate().admit(Outbound(request=request))
    assert not verdict
    assert "the prompt holds a credential (AWS Access Key" in verdict.reason and KEY not in verdict.reason
    nul = _request(messages=(("user", "a\x00"),)) if field == "messages" else _request(**{field: "a\x00"})
    refused = Gate().admit(Outbound(request=nul))
    assert not refused and refused.reason == "the prompt holds binary content (NUL characters)"


def test_every_field_of_the_prompt_is_in_the_text_checked() -> None:
    request = _request(
        prefix="P",
        suffix="S",
        instruction="I",
        raw_prompt="R",
        follow_up="F",
        messages=(("system", "M1"), ("user", "M2")),
    )
    assert outbound_text(request) == "P\nS\nI\nR\nF\nM1\nM2"
    # Every field of text a backend may send is one of them (where it goes, path and language are not sent).
    texts = {f.name for f in dataclasses.fields(ModelRequest) if f.type in ("str", str)}
    assert texts - {"path", "language"} == set(_FIELDS)


def test_an_outbound_cannot_be_changed_once_made() -> None:
    outbound = Outbound(request=_request(prefix="x"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        outbound.document = "file:///w/.env"  # type: ignore[misc]


def test_the_prompt_size_limit_is_exact() -> None:
    gate = Gate(policy=PrivacyPolicy(max_file_bytes=1000))
    assert gate.max_prompt_chars == 4000
    assert gate.admit(Outbound(request=_request(prefix="y" * 4000)))
    refused = gate.admit(Outbound(request=_request(prefix="y" * 4001)))
    assert not refused and refused.reason == "prompt too large (4001 characters > 4000)"


def test_admit_names_the_source_it_refused() -> None:
    gate = Gate(root=ROOT)
    gate.open((ROOT / "secret.py").as_uri(), f"K = '{KEY}'\n")
    clean = _request(prefix="x = ")
    refused_document = gate.admit(Outbound(request=clean, document=(ROOT / "secret.py").as_uri()))
    assert "AWS Access Key" in refused_document.reason
    assert gate.admit(Outbound(request=clean, files={"a.py": "x = 1\n"}, snippet_paths=("b.py",)))
    refused_file = gate.admit(Outbound(request=clean, files={"a.py": "x = 1\n", ".env": "A=1\n"}))
    assert refused_file.reason.startswith(".env: looks like a secret by its name")
    refused_snippet = gate.admit(Outbound(request=clean, snippet_paths=("b.py", "secret.py")))
    assert refused_snippet.reason.startswith("a snippet from secret.py: contains a credential (AWS Access Key")
