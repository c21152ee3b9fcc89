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


def test_unknowns_lists_causes_and_ends_with_the_count(tmp_path, capsys, monkeypatch, mypy_cache):
    from typed_xmap._tools._check import run_check

    monkeypatch.chdir(tmp_path)
    program = tmp_path / "model.py"
    program.write_text(PROGRAM)
    flags = ["--strict", "--cache-dir", str(mypy_cache / "check-strict")]
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


BARE = """\
import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

RESOURCES = {"in": "x", "out": "y"}


def layer(x: NamedArray[f32, "in"], W: NamedArray[f32, "in out"], b: NamedArray[f32, "out"]) -> NamedArray[f32, "out"]:
    return tnp.sigmoid(tnp.einsum("{in},{in,out}->{out}", x, W) + b)


def automatic(x: NamedArray, W: NamedArray, b: NamedArray) -> NamedArray:
    return jax.jit(layer)(tx.shard(x, RESOURCES), tx.shard(W, RESOURCES), tx.shard(b, RESOURCES))


@jax.jit
def semi_automatic(x: NamedArray, W: NamedArray, b: NamedArray) -> NamedArray:
    W = tx.constrain(W, RESOURCES)
    return tx.constrain(layer(x, W, b), {"out": "y"})
"""


@pytest.mark.slow
def test_bare_annotations_check_clean_and_are_noted_as_unknown(tmp_path, capsys, monkeypatch, mypy_cache):
    """A bare ``NamedArray`` (any dtype, any named shape) passed to typed functions, ``jit``, ``tx.shard`` and
    ``tx.constrain`` checks clean under ``--strict``; ``--unknowns`` says where the unknowns come from."""
    from typed_xmap._tools._check import run_check

    monkeypatch.chdir(tmp_path)
    program = tmp_path / "styles.py"
    program.write_text(BARE)
    flags = ["--strict", "--cache-dir", str(mypy_cache / "check-strict")]
    assert run_check([str(program)], flags) == 0, capsys.readouterr()
    capsys.readouterr()
    assert run_check([str(program)], flags, unknowns=True) == 0
    lines = capsys.readouterr().out.splitlines()
    bare = "styles.py:{}: note: named shape unknown: a bare NamedArray annotation (any dtype, any named shape)"
    assert [line for line in lines if "named shape unknown" in line] == [bare.format(14), bare.format(19)]


def test_every_function_of_the_stubs_returning_a_named_array_has_a_rule():
    """No silent unknowns by omission: each ``tx``/``tnp``/``tx.random`` function whose stub returns a NamedArray
    is typed by a hook of the plugin (its result's named shape), not left to the stub's ``NamedArray_[_D, Any,
    _PS]`` (an unknown named shape no note would point at)."""
    import ast

    from mypy.options import Options

    from typed_xmap.plugin import TypedXmapPlugin

    plugin = TypedXmapPlugin(Options())
    plugin.set_modules({})
    stubs = Path(__file__).resolve().parents[1] / "stubs" / "typed_xmap"
    checked = []
    for module, stub in [
        ("typed_xmap", stubs / "__init__.pyi"),
        ("typed_xmap.numpy", stubs / "numpy" / "__init__.pyi"),
        ("typed_xmap.random", stubs / "random.pyi"),
    ]:
        for node in ast.parse(stub.read_text()).body:
            returns = ast.unparse(node.returns) if isinstance(node, ast.FunctionDef) and node.returns else ""
            if "NamedArray" in returns:
                checked.append(f"{module}.{getattr(node, 'name', '')}")
    assert len(set(checked)) > 40, checked  # the stubs were read
    assert [name for name in checked if plugin.get_function_hook(name) is None] == []
