"""No silent unknowns: ``typed-xmap check --unknowns`` lists where named shapes became unknown and why, and
counts the NamedArray expressions whose named shape is known; the language server shows the same notes."""

from __future__ import annotations

from pathlib import Path

import pytest

PROGRAM = """\
from typing import Any

import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


def f(x: NamedArray[f32, "batch feat"], y: Any) -> NamedArray[f32, "batch"]:
    h = tnp.add(x, y)
    g = tnp.relu(h) + x
    return tnp.sum(x * 2.0, axis="feat")
"""


@pytest.fixture(autouse=True)
def _plugin_debug(monkeypatch):
    """A plugin hook that fails raises (mypy INTERNAL ERROR) instead of degrading quietly."""
    monkeypatch.setenv("TYPED_XMAP_PLUGIN_DEBUG", "1")


def test_unknowns_lists_causes_and_ends_with_the_count(tmp_path, capsys, monkeypatch):
    from typed_xmap._tools._check import run_check

    monkeypatch.chdir(tmp_path)
    program = tmp_path / "model.py"
    program.write_text(PROGRAM)
    flags = ["--strict", "--cache-dir", str(tmp_path / "cache")]
    for _ in range(2):  # the second run finds its dependencies cached and still checks the source afresh
        assert run_check([str(program)], flags, unknowns=True) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0] == "model.py:8: note: named shape unknown: tnp.add(...): its operand y is of type Any"
        assert len([line for line in lines if "named shape unknown" in line]) == 1  # relu(h) + x: carried on
        # x (3 times), tnp.add(x, y), h (bound, read), tnp.relu(h), tnp.relu(h) + x, g, x * 2.0, tnp.sum(...):
        # the six from tnp.add(x, y) to g are unknown
        assert lines[-1] == "named shapes known: 5 of 11 NamedArray expressions (45.5%)"
    assert run_check([str(program)], flags) == 0  # without --unknowns: no notes, no count
    out = capsys.readouterr().out
    assert "named shape" not in out and out.startswith("Success")


def test_the_language_server_shows_unknowns_as_information(tmp_path):
    from lsprotocol import types as lsp

    from typed_xmap._tools._lsp._diagnostics import diagnostics

    report = (
        "model.py:8:5:8:9: error: Incompatible types in assignment  [assignment]\n"
        "model.py:8:9:8:13: note: named shape unknown: x * y: its operand y is of type Any\n"
        "model.py:8:9:8:13: note: See https://mypy.rtfd.io\n"
    )
    found = diagnostics(report, Path(tmp_path))[(Path(tmp_path) / "model.py").resolve()]
    assert [(d.severity, d.code) for d in found] == [
        (lsp.DiagnosticSeverity.Error, "assignment"),
        (lsp.DiagnosticSeverity.Information, "named-shape-unknown"),
    ]
    assert found[1].message == "named shape unknown: x * y: its operand y is of type Any\nSee https://mypy.rtfd.io"


@pytest.mark.slow
def test_the_parallelism_example_with_bare_annotations_checks_clean(tmp_path, capsys):
    """examples/parallelism_styles.py annotates with a bare ``NamedArray`` (any dtype, any named shape)."""
    from typed_xmap._tools._check import run_check

    example = Path(__file__).resolve().parents[1] / "examples" / "parallelism_styles.py"
    assert "x: NamedArray, W: NamedArray" in example.read_text()
    assert run_check([str(example)], ["--strict", "--cache-dir", str(tmp_path / "cache")]) == 0, capsys.readouterr()
