"""Unit tests of the dangling-reference check: names an edit removes that other files still import."""

from __future__ import annotations

import pytest

from tandem.completion.edit.references import dangling_references, module_of, removed_names, still_refers

MODELS = "def compute_total(invoice):\n    return invoice.total\n\n\nTAX = 0.2\n\n\nclass Invoice:\n    pass\n"
RENAMED = MODELS.replace("compute_total", "invoice_total")
VIEWS = "from app.models import compute_total\n\n\ndef show(invoice):\n    return compute_total(invoice)\n"
VIEWS_FIXED = VIEWS.replace("compute_total", "invoice_total")


def test_removed_names_are_module_level_definitions_gone_after_the_edit() -> None:
    assert removed_names({"app/models.py": MODELS}, {"app/models.py": RENAMED}) == {
        "app/models.py": frozenset({"compute_total"})
    }
    # Nothing removed, a file that does not parse, a non-Python file: nothing to say.
    assert removed_names({"m.py": MODELS}, {"m.py": MODELS + "\nEXTRA = 1\n"}) == {}
    assert removed_names({"m.py": MODELS}, {"m.py": "def broken(:\n"}) == {}
    assert removed_names({"m.js": "function f() {}\n"}, {"m.js": "\n"}) == {}


@pytest.mark.parametrize(
    ("text", "refers"),
    [
        ("from app.models import compute_total\n", True),
        ("from models import Invoice, compute_total as total\n", True),
        ("from .models import (\n    Invoice,\n    compute_total,\n)\n", True),
        ("import app.models as models\nx = models.compute_total(1)\n", True),
        ("from app.models import compute_totals\n", False),
        ("from app.views import compute_total\n", False),
        ("compute_total = 3\n", False),
    ],
)
def test_still_refers(text: str, refers: bool) -> None:
    assert still_refers(text, "models", "compute_total") is refers


def test_module_of() -> None:
    assert module_of("app/models.py") == "models"
    assert module_of("app/__init__.py") == "app"


def test_a_rename_forgotten_in_another_file_is_a_dangling_reference() -> None:
    files = {"app/models.py": MODELS, "app/views.py": VIEWS, "app/other.py": "compute_total = 1\n"}

    def using(name: str) -> set[str]:
        return {p for p, t in files.items() if name in t}

    removed = {"app/models.py": frozenset({"compute_total"})}
    problems = dangling_references(removed, {"app/models.py": RENAMED}, files_using=using, read_text=files.get)
    assert problems == ["it removes 'compute_total' from models.py, which views.py still uses"]
    # The edit that also fixes views.py leaves nothing behind.
    fixed = {"app/models.py": RENAMED, "app/views.py": VIEWS_FIXED}
    assert dangling_references(removed, fixed, files_using=using, read_text=files.get) == []
    # An unreadable file is skipped; a bound on the files looked at is kept.
    assert dangling_references(removed, {}, files_using=using, read_text=lambda _: None) == []
    assert dangling_references(removed, {}, files_using=using, read_text=files.get, max_files=0) == []
