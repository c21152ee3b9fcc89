"""The stubs match the runtime surface, the plugin never imports jax, and ``typed-xmap check`` runs mypy with it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STUBS = ROOT / "stubs" / "typed_xmap"


@pytest.fixture(autouse=True)
def _plugin_debug(monkeypatch):
    """A plugin hook that fails raises (mypy INTERNAL ERROR) instead of degrading quietly."""
    monkeypatch.setenv("TYPED_XMAP_PLUGIN_DEBUG", "1")


def _stub_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return (
        {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        | {
            target.id
            for node in tree.body
            if isinstance(node, ast.AnnAssign)
            for target in [node.target]
            if isinstance(target, ast.Name)
        }
        | {alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom) for alias in node.names}
    )


def test_numpy_stub_lists_every_runtime_function():
    import typed_xmap.numpy as tnp

    stubbed = _stub_names(STUBS / "numpy" / "__init__.pyi")
    missing = sorted(set(tnp.__all__) - stubbed)
    assert not missing, f"typed_xmap.numpy names without a stub: {missing}"


def test_init_stub_lists_the_public_names():
    import typed_xmap as tx

    tree = ast.parse((STUBS / "__init__.pyi").read_text())
    exported = next(node for node in tree.body if isinstance(node, ast.Assign) and node.targets[0].id == "__all__")
    names = set(ast.literal_eval(exported.value))
    assert set(tx.__all__) <= names, sorted(set(tx.__all__) - names)


def test_static_stub_is_the_static_module():
    # one NamedArray_ for the stubs and the package (a symlink in the repository, a copy in a wheel)
    assert (STUBS / "_static.pyi").read_text() == (ROOT / "typed_xmap" / "_static.py").read_text()


def test_importing_the_plugin_does_not_import_jax():
    code = "import sys, typed_xmap.plugin; print('jax' in sys.modules, 'numpy' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert result.stdout.split() == ["False", "False"]


def test_check_command_runs_mypy_with_the_plugin(tmp_path, capsys, monkeypatch, mypy_cache):
    from typed_xmap._tools._check import run_check

    monkeypatch.chdir(tmp_path)  # no mypy config here: the check supplies the plugin itself
    program = tmp_path / "model.py"
    program.write_text(
        "import typed_xmap.numpy as tnp\nfrom typed_xmap import NamedArray, f32\n"
        'def f(x: NamedArray[f32, "batch"]) -> None:\n    tnp.sum(x, "hidden")\n'
    )
    assert run_check([str(program)], ["--strict", "--cache-dir", str(mypy_cache / "check-strict")]) == 1
    out = capsys.readouterr().out
    assert "model.py:4: error: tnp.sum(x, axis='hidden') reduces over axis 'hidden'" in out
    assert "[named-axis-missing]" in out and "Found 1 error in 1 file" in out
    program.write_text(program.read_text().replace('"hidden"', '"batch"'))
    assert run_check([str(program)], ["--strict", "--cache-dir", str(mypy_cache / "check-strict")]) == 0
    assert "Success: no issues found in 1 source file" in capsys.readouterr().out


def test_check_command_honours_the_users_config(tmp_path, capsys, monkeypatch, mypy_cache):
    from typed_xmap._tools._check import run_check

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mypy.ini").write_text("[mypy]\ndisable_error_code = named-axis-missing\n")
    program = tmp_path / "model.py"
    program.write_text(
        "import typed_xmap.numpy as tnp\nfrom typed_xmap import NamedArray, f32\n"
        'def f(x: NamedArray[f32, "batch=2"], y: NamedArray[f32, "batch=3"]) -> None:\n'
        '    tnp.sum(x, "hidden")\n    x + y\n'
    )
    assert run_check([str(program)], ["--cache-dir", str(mypy_cache / "check")]) == 1
    out = capsys.readouterr().out
    assert "named-axis-missing" not in out and "model.py:5: error: axis 'batch' has size 2" in out


REBIND_BUGS = """
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

def mlp(x: NamedArray[f32, "batch embed"], w: NamedArray[f32, "embed mlp"]) -> NamedArray[f32, "batch mlp"]:
    h = tnp.relu(x)
    h = tnp.einsum("{embed},{embed,mlp}->{mlp}", h, w)
    return h

def layers(x: NamedArray[f32, "batch embed"], ws: list[NamedArray[f32, "embed e2"]]) -> NamedArray[f32, "batch embed"]:
    h = x
    for w in ws:
        h = tnp.einsum("{embed},{embed,e2}->{e2}", h, w)
        h = tnp.einsum("{e2},{embed,e2}->{embed}", h, w)
    return h

def bad(x: NamedArray[f32, "batch embed"], w: NamedArray[f32, "embed mlp"]) -> NamedArray[f32, "batch"]:
    h = tnp.relu(x)
    h = tnp.einsum("{embed},{embed,mlp}->{mlp}", h, w)
    return h  # bug: rebound

def accumulate(losses: list[NamedArray[f32, "batch"]], init: NamedArray[f32, ""]) -> NamedArray[f32, ""]:
    total = init
    for per_example_loss in losses:
        total = total + per_example_loss
    return total  # bug: batch not reduced
"""


def test_check_allows_rebinding_and_keeps_the_bugs(tmp_path, capsys, mypy_cache):
    """typed-xmap check turns on --allow-redefinition: rebinding (also in loops) is clean; a bug flowing
    through the rebound value or a loop accumulator is still reported."""
    from typed_xmap._tools._check import run_check

    program = tmp_path / "rebind.py"
    program.write_text(REBIND_BUGS)
    flags = ["--strict", "--cache-dir", str(mypy_cache / "check-strict")]
    assert run_check([str(program)], flags, fast_exit=False) == 1
    errors = [row for row in capsys.readouterr().out.splitlines() if ": error:" in row]
    lines = REBIND_BUGS.splitlines()
    expected = {i for i, text in enumerate(lines, 1) if "# bug" in text}
    assert {int(row.split(":")[1]) for row in errors} == expected, errors
    assert all(row.endswith("[return-value]") for row in errors), errors


def test_isinstance_of_named_array_passes_with_the_plugin(tmp_path, capsys, mypy_cache):
    """``is_leaf=lambda v: isinstance(v, tx.NamedArray)`` (a tree map over params) checks clean with the plugin;
    ``isinstance`` of another special form is still mypy's error."""
    from typed_xmap._tools._check import run_check

    program = tmp_path / "tree.py"
    program.write_text(
        "import jax\nimport jax.numpy as jnp\nimport typed_xmap as tx\nfrom typing import Annotated\n"
        "from typed_xmap import NamedArray\n\n"
        "params = {'w': tx.named(jnp.ones((2,)), ['a'])}\n"
        "doubled = jax.tree.map(lambda v: v * 2, params, is_leaf=lambda v: isinstance(v, tx.NamedArray))\n"
        "either = isinstance(params['w'], (NamedArray, jax.Array))\n"
        "wrong = isinstance(params['w'], Annotated)\n"
    )
    assert run_check([str(program)], ["--strict", "--cache-dir", str(mypy_cache / "check-strict")]) == 1
    errors = [row for row in capsys.readouterr().out.splitlines() if ": error:" in row]
    assert len(errors) == 1 and errors[0].startswith(f'{program}:10: error: Argument 2 to "isinstance"'), errors
