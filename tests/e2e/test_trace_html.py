"""`tandem trace report --html`: the page is self-contained (plotly.js inlined, nothing fetched), each plot
is built from the records it claims, names from records cannot break out of the page, and headless
Chromium draws every plot area (its screenshot shows the plots' trace colours in every cell)."""

from __future__ import annotations

import json
import pathlib
import re
import shutil
import subprocess

import pytest

from tandem.cli import main
from tandem.completion.config.tree import ModelConfig
from tandem.completion.edit.types import EditTraceRecord
from tandem.completion.observe.trace import TraceRecord, estimate_cost_usd
from tandem.eval.trace_report import parse_records, summarise

plotly = pytest.importorskip("plotly", reason="the report extra (plotly) is not installed")

from tandem.eval import trace_html  # noqa: E402

MS = 1_000_000
PRICES = ModelConfig(price_input_per_mtok=0.25, price_output_per_mtok=0.69)


def _completion(index: int, source: str) -> TraceRecord:
    start = (1_000 + index * 50) * MS
    record = TraceRecord(kind="inline", received_ns=start, file=f"f{index % 3}.py", source=source, tier="fast")
    record.route_reasons = ["completion: inline completions use the fast model"]
    record.mark("cache_lookup", start + MS // 10)
    if source == "model":
        record.model = "sim-spark@127.0.0.1"
        record.waited_for_model = True
        for offset, phase in enumerate(("debounce_end", "context_built", "request_sent", "first_byte"), 1):
            record.mark(phase, start + offset * MS)
        record.mark("first_token", start + (30 + index % 20) * MS)
        record.mark("answered", start + (35 + index % 20) * MS)
        record.mark("done", start + (60 + index % 20) * MS)
        record.tokens_in, record.tokens_cached, record.tokens_out = 800, 300 * (index % 2), 40
        record.cost_usd = estimate_cost_usd(PRICES, tokens_in=800, tokens_out=40, tokens_cached=0)
    else:
        record.mark("answered", start + MS // 5 + (index % 7) * MS // 10)
    record.outcome = "shown" if index % 4 else "empty"
    return record


def _records() -> list[dict[str, object]]:
    records = [_completion(i, ("model", "stream", "cache")[i % 3]).to_json() for i in range(60)]
    records += [TraceRecord(kind="accept", received_ns=9 * MS, outcome="accepted", chars=5).to_json()] * 20
    edit = EditTraceRecord(kind="edit", received_ns=5_000 * MS, tier="accurate", model="sim-codex@127.0.0.1")
    edit.route_reasons = ["accurate: reaches 2 other files (a.py, b.py)"]
    edit.mark("request_sent", 5_002 * MS)
    edit.mark("first_token", 5_600 * MS)
    edit.mark("answered", 7_000 * MS)
    edit.tokens_in, edit.tokens_out, edit.outcome = 5_000, 900, "applied"
    return [*records, edit.to_json()]


def _page(records: list[dict[str, object]], files: list[str] | None = None) -> str:
    trace = parse_records(json.dumps(r) for r in records)
    return trace_html.render_html(summarise(trace), trace.records, files=files or ["trace.jsonl"])


def test_the_page_is_self_contained_and_holds_every_plot() -> None:
    page = _page(_records())
    assert not re.search(r"<script[^>]+src=", page), "a script is fetched from elsewhere"
    assert "<link" not in page and "<iframe" not in page
    assert page.count("Plotly.newPlot") == len(trace_html.PLOTS)
    for name in trace_html.PLOTS:
        assert f'id="plot-{name}"' in page


def test_the_cdf_has_one_curve_per_path_ending_at_every_request() -> None:
    figure = trace_html.latency_cdf(plotly.graph_objects, _records())
    curves = {trace.name: trace for trace in figure.data}
    assert set(curves) == {"model (20)", "stream reuse (20)", "cache (20)"}
    assert all(curve.y[-1] == 1.0 for curve in curves.values())
    assert min(curves["model (20)"].x) == 35.0 and max(curves["cache (20)"].x) < 1.0


def test_the_waterfall_shows_the_slowest_request_first_phase_by_phase() -> None:
    figure = trace_html.waterfall(plotly.graph_objects, _records())
    first_token = next(trace for trace in figure.data if trace.name == "→ first_token")
    top = first_token.y[-1]  # plotly draws the last category at the top
    assert top.endswith("edit ")  # the 2 s edit is the slowest
    # request_sent at 2 ms, first_token at 600 ms: the segment starts where the previous phase ended.
    assert (first_token.base[-1], first_token.x[-1]) == (2.0, 598.0)
    # The rows are drawn slowest at the top (plotly's last category) even though the edit, which has no
    # cache_lookup phase, is not in the first trace that names rows.
    rows = figure.layout.yaxis.categoryarray
    assert figure.layout.yaxis.categoryorder == "array" and rows[-1].endswith("edit ") and len(rows) == len(set(rows))


def test_tokens_and_cost_per_model_add_up_the_records() -> None:
    figure = trace_html.tokens_cost(plotly.graph_objects, plotly.subplots.make_subplots, _records())
    cost = next(trace for trace in figure.data if trace.name == "cost")
    by_model = dict(zip(cost.x, cost.y, strict=True))
    assert by_model["sim-spark@127.0.0.1"] == pytest.approx(20 * (800 * 0.25 + 40 * 0.69) / 1e6)
    output = next(trace for trace in figure.data if trace.name == "output")
    assert dict(zip(output.x, output.y, strict=True)) == {"sim-codex@127.0.0.1": 900, "sim-spark@127.0.0.1": 800}


def test_the_header_says_when_no_prices_are_configured() -> None:
    priced = _page(_records())
    assert "estimated cost $0.0046" in priced  # 20 priced model requests at 0.25/0.69 USD per million tokens
    unpriced = [{**r, "cost_usd": 0.0} for r in _records()]
    page = _page(unpriced)
    assert "estimated cost: no prices configured" in page and "$0.0000" not in page


def test_names_from_records_cannot_break_out_of_the_page() -> None:
    hostile = "</script><script>alert(1)</script>.py"
    records = _records()
    records[0] = {**records[0], "file": hostile}
    page = _page(records, files=[f"/tmp/{hostile}"])
    assert "<script>alert(1)" not in page


@pytest.mark.parametrize("field", ["file", "model", "kind", "outcome"])
def test_labels_from_records_are_drawn_as_text_not_markup(field: str) -> None:
    """plotly draws links, bold and styled spans from label text: a file or model name holding them is
    shown as the text it is."""
    link = '<a href="https://attacker.example/">click</a><span style="font-size:90px">X</span>'
    records = _records()
    records = [{**r, field: f"{link}{r.get(field, '')}"} for r in records]
    page = _page(records, files=["trace.jsonl"])
    # The figures' JSON spells `<` and `/` as \u003c and \u002f; markup would reach plotly as such.
    data = page.replace("\\u003c", "<").replace("\\u003e", ">").replace("\\u002f", "/")
    assert not re.search(r'<a href=\\?"https://attacker', data) and "<span style" not in data
    assert "&lt;a href=&quot;https://attacker.example/" in data


def test_without_plotly_the_command_says_which_extra_to_install(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in _records()), encoding="utf-8")
    monkeypatch.setitem(__import__("sys").modules, "plotly.graph_objects", None)
    assert main(["trace", "report", str(trace), "--html", str(tmp_path / "out.html")]) == 1
    assert "pip install 'tandem-lsp[report]'" in capsys.readouterr().err
    assert not (tmp_path / "out.html").exists()


# plotly's default colourway: the colours its traces are drawn in (axes, grids and text are greys).
_TRACE_COLOURS = [
    tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    for hex_colour in plotly.colors.qualitative.Plotly  # the plotly_white template's colourway
]


def _trace_pixels(image: object, box: tuple[int, int, int, int]) -> int:
    cell = image.crop(box).convert("RGB")  # type: ignore[attr-defined]
    colours = cell.getcolors(maxcolors=cell.width * cell.height)  # (count, colour) per distinct colour
    return sum(
        count
        for count, (r, g, b) in colours
        if any(abs(r - cr) + abs(g - cg) + abs(b - cb) < 60 for cr, cg, cb in _TRACE_COLOURS)
    )


@pytest.mark.e2e
def test_headless_chromium_draws_every_plot(tmp_path: pathlib.Path) -> None:
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not pathlib.Path(chromium).exists():
        pytest.skip("chromium is not installed")
    image_module = pytest.importorskip("PIL.Image", reason="Pillow (test extra) is not installed")
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in _records()), encoding="utf-8")
    page = tmp_path / "report.html"
    assert main(["trace", "report", str(trace), "--html", str(page)]) == 0
    rows = (len(trace_html.PLOTS) + 1) // 2
    gap, width, height = trace_html.CELL_GAP_PX, trace_html.CELL_WIDTH_PX, trace_html.CELL_HEIGHT_PX
    size = (2 * width + 3 * gap, trace_html.HEADER_HEIGHT_PX + rows * (height + gap))
    shot = tmp_path / "report.png"
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--window-size={size[0]},{size[1]}",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    image = image_module.open(shot)
    assert image.size == size
    for index, name in enumerate(trace_html.PLOTS):
        row, col = divmod(index, 2)
        left = gap + col * (width + gap)
        top = trace_html.HEADER_HEIGHT_PX + row * (height + gap)
        # The plot area: inside the cell's margins, below the title.
        drawn = _trace_pixels(image, (left + 60, top + 50, left + width - 20, top + height - 50))
        assert drawn > 300, f"plot {name} looks blank ({drawn} pixels in trace colours)"
