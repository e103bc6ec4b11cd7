"""The trace schema: every field a record writes is documented in docs/trace.md, every record says its
schema version, the file rotates at its size cap, and cost follows the configured prices."""

from __future__ import annotations

import json
import pathlib
import re

from tandem.completion.config.tree import ModelConfig
from tandem.completion.edit.types import EditTraceRecord
from tandem.completion.observe.trace import KINDS, PHASES, SCHEMA_VERSION, Tracer, TraceRecord, estimate_cost_usd

DOC = pathlib.Path(__file__).resolve().parents[3] / "docs" / "trace.md"


def _table_keys(section: str) -> set[str]:
    """The backquoted first cells of the table rows under the `## section` heading of docs/trace.md."""
    text = DOC.read_text(encoding="utf-8")
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([a-z_]+)` \|", body, flags=re.MULTILINE))


def test_every_written_field_kind_and_phase_is_documented() -> None:
    edit = EditTraceRecord(kind="edit", received_ns=1)
    written = set(TraceRecord(kind="inline", received_ns=1).to_json()) | set(edit.to_json())
    assert written - _table_keys("Fields") == set()
    assert set(KINDS) == _table_keys("Kinds")
    assert set(PHASES) == _table_keys("Phases")


def test_every_record_carries_the_schema_version_and_its_wall_clock_start() -> None:
    data = TraceRecord(kind="prefetch", received_ns=5).to_json()
    assert data["schema"] == SCHEMA_VERSION == 1
    assert isinstance(data["received_at"], float) and data["received_at"] > 1.6e9


def test_the_file_rotates_at_its_size_cap_and_keeps_only_complete_lines(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state" / "trace.jsonl"
    tracer = Tracer(path, max_bytes=4_000, keep=2)
    for _ in range(100):
        tracer.write(TraceRecord(kind="inline", received_ns=1, outcome="shown"))
    tracer.close()
    files = sorted(p.name for p in path.parent.iterdir())
    assert files == ["trace.jsonl", "trace.jsonl.1", "trace.jsonl.2"]
    for name in files:
        data = (path.parent / name).read_bytes()
        assert len(data) <= 4_000
        assert all(json.loads(line)["schema"] == 1 for line in data.decode().splitlines())
    assert tracer.written == 100


def test_sinks_see_every_record_even_without_a_file() -> None:
    seen: list[str] = []
    tracer = Tracer(None)
    tracer.sinks.append(lambda record: seen.append(record.id))
    record = TraceRecord(kind="accept", received_ns=1)
    tracer.write(record)
    assert seen == [record.id]


def test_cost_follows_the_configured_prices_with_cached_input_at_its_own_price() -> None:
    model = ModelConfig(price_input_per_mtok=2.0, price_output_per_mtok=10.0, price_cached_input_per_mtok=0.5)
    cost = estimate_cost_usd(model, tokens_in=1_000_000, tokens_out=100_000, tokens_cached=400_000)
    assert cost == 600_000 * 2.0 / 1e6 + 400_000 * 0.5 / 1e6 + 100_000 * 10.0 / 1e6
    unpriced_cache = ModelConfig(price_input_per_mtok=2.0)
    assert estimate_cost_usd(unpriced_cache, tokens_in=10, tokens_out=0, tokens_cached=10) == 20 / 1e6
    assert estimate_cost_usd(None, tokens_in=10, tokens_out=10, tokens_cached=0) == 0.0
