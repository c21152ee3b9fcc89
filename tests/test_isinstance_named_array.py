"""``isinstance(v, tx.NamedArray)`` and ``is_leaf=lambda v: isinstance(v, tx.NamedArray)`` over a params pytree:
accepted by pyright, basedpyright and mypy with the plugin, on a realistic program (an Adam optimizer with
clipping and per-leaf norms, tests/programs/tree_optimizer.py) that also runs; pyright narrows the leaf to a
NamedArray it still checks. mypy without the plugin cannot accept it (``NamedArray`` is ``typing.Annotated``
there): ``tx.AnyNamedArray`` is the spelling every checker takes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import pytest
from example_programs import check_strict, load
from mypy import api

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PROGRAM = ROOT / "tests" / "programs" / "tree_optimizer.py"

# planted after the program: errors pyright reports only if the narrowed leaf is a NamedArray to it, not Any
NARROWED_MISUSE = """

def misuse(leaf: Any) -> None:
    if isinstance(leaf, tx.NamedArray):
        print(leaf.named_shap)  # planted: a misspelt attribute
        print(jnp.sum(leaf))  # planted: a NamedArray where jax wants an array
    if isinstance(leaf, (tx.NamedArray, jax.Array)):
        print(leaf.ndim)
"""


def _pyright(checker: str, tmp_path: Path, source: str) -> list[str]:
    (tmp_path / "program.py").write_text(source)
    (tmp_path / "pyrightconfig.json").write_text(json.dumps({"typeCheckingMode": "standard"}))
    result = subprocess.run(
        [str(BIN / checker), "--outputjson", "--pythonpath", sys.executable, "program.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"},
        timeout=600,
        check=False,
    )
    report = json.loads(result.stdout)
    assert report["summary"]["filesAnalyzed"] == 1, result.stdout[-2000:]
    return [
        f"{d['range']['start']['line'] + 1}: {d['message']}"
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    ]


@pytest.mark.slow
@pytest.mark.parametrize("checker", ["pyright", "basedpyright"])
def test_pyright_accepts_the_is_leaf_program_and_checks_the_narrowed_leaf(tmp_path: Path, checker: str) -> None:
    source = PROGRAM.read_text()
    assert source.count("isinstance(v, tx.NamedArray)") >= 4 and "if isinstance(leaf, tx.NamedArray):" in source
    assert _pyright(checker, tmp_path, source) == []
    planted = source + NARROWED_MISUSE
    lines = planted.splitlines()
    errors = _pyright(checker, tmp_path, planted)
    expected = [i for i, text in enumerate(lines, 1) if "# planted" in text]
    assert [int(e.split(":")[0]) for e in errors] == expected, errors
    assert 'Cannot access attribute "named_shap" for class "NamedArray_"' in errors[0], errors
    assert '"NamedArray_" is not assignable to type "ArrayLike"' in errors[1], errors


@pytest.mark.slow
def test_mypy_with_the_plugin_accepts_the_is_leaf_program(tmp_path: Path, mypy_cache: Path) -> None:
    check_strict(tmp_path, mypy_cache, PROGRAM, None, None)


def test_the_is_leaf_program_trains() -> None:
    """The optimizer walks the NamedArray leaves: Adam with clipping lowers the loss, the norms are right."""
    program = load(PROGRAM, "tree_optimizer_program")
    losses, params = program.train(program.Config(), 20)
    assert losses[-1] < losses[0] / 10, losses
    norms = program.leaf_norms(params)
    assert norms["w_in"] == pytest.approx(float(jnp.linalg.norm(params["w_in"].data)), rel=1e-5)
    mixed = {**params, "plain": jnp.ones(2)}
    squares = sum(float(jnp.sum(leaf.data**2)) for leaf in params.values()) + 2.0
    assert program.global_norm(mixed) == pytest.approx(squares**0.5, rel=1e-5)
    shapes = program.describe(mixed)
    assert shapes == {
        "['b_in']": "hidden=8",
        "['plain']": "(2,)",
        "['w_in']": "embed=4 hidden=8",
        "['w_out']": "classes=3 hidden=8",
    }, shapes


@pytest.mark.slow
def test_mypy_without_the_plugin_takes_any_named_array_not_named_array(tmp_path: Path) -> None:
    """Without the plugin ``NamedArray`` can only be ``typing.Annotated`` (the one form whose arguments may be
    free strings), which mypy's ``isinstance`` rejects; ``tx.AnyNamedArray`` is a runtime-checkable protocol."""
    program = tmp_path / "leaves.py"
    program.write_text(
        "import jax\nimport typed_xmap as tx\n\n\n"
        "def count(tree: object) -> int:\n"
        "    named = jax.tree.leaves(tree, is_leaf=lambda v: isinstance(v, tx.AnyNamedArray))\n"
        "    return sum(isinstance(v, tx.AnyNamedArray) for v in named)\n\n\n"
        "def count_named(tree: object) -> int:\n"
        "    named = jax.tree.leaves(tree, is_leaf=lambda v: isinstance(v, tx.NamedArray))\n"
        "    return len(named)\n"
    )
    (tmp_path / "mypy.ini").write_text("[mypy]\n")  # no plugin: the installed stubs alone
    config = ["--config-file", str(tmp_path / "mypy.ini"), "--cache-dir", str(tmp_path / "cache")]
    stdout, stderr, status = api.run([*config, "--strict", str(program)])
    errors = [row for row in stdout.splitlines() if ": error:" in row]
    assert status == 1 and len(errors) == 1, stdout + stderr
    lines = program.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "isinstance(v, tx.NamedArray)" in text)
    assert errors[0].startswith(f'{program}:{line}: error: Argument 2 to "isinstance"'), errors
    assert "<typing special form>" in errors[0] and errors[0].endswith("[arg-type]"), errors
