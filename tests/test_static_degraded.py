"""Without the mypy plugin, type checkers see NamedArray[...] as a plain array type: no false errors."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = textwrap.dedent(
    """
    import jax.numpy as jnp
    import typed_xmap as tx
    from typed_xmap import NamedArray, f32, i32

    Hidden = NamedArray[f32, "batch hidden"]

    @tx.typed
    def affine(x: NamedArray[f32, "batch in_features"], w: NamedArray[f32, "in_features out"],
               n: NamedArray[i32, "", "k 3"]) -> NamedArray[f32, "batch in_features out"]:
        y = x * w + 1.0
        return -y

    def use(h: Hidden) -> Hidden:
        return h

    x = tx.named(jnp.ones((8, 4)), ["batch", "in_features"])
    shape: dict[str, int] = x.named_shape
    """
)


def _mypy(tmp_path: Path, program: str, *, stubs: bool = False) -> subprocess.CompletedProcess[str]:
    source = tmp_path / "program.py"
    source.write_text(program)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",
            "--ignore-missing-imports",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(source),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "MYPYPATH": str(ROOT / "stubs")} if stubs else None,
        timeout=300,
        check=False,
    )


def test_plain_mypy_reports_no_false_errors_and_still_types_values(tmp_path):
    result = _mypy(tmp_path, PROGRAM)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout
    # the values are typed, not Any: a genuine mistake is still reported
    result = _mypy(tmp_path, PROGRAM + "wrong: str = x.named_shape\n")
    assert result.returncode == 1
    assert 'Incompatible types in assignment (expression has type "dict[str, int]"' in result.stdout


def test_plain_mypy_types_scalar_operands_as_arrays(tmp_path):
    """On the stubs (typed_xmap's ``stubs/``, as ``typed-xmap check`` and the documented config use them):
    ``tnp.where(m, 0.0, 1.0)`` is an array of the condition's shape and ``tnp.minimum(1.0, x)`` x's type, not
    ``float``; ``x * 2.0`` and ``-x`` keep x's type."""
    program = PROGRAM + textwrap.dedent(
        """
        import typed_xmap.numpy as tnp
        from typed_xmap import bool_

        def masks(m: NamedArray[bool_, "batch"], h: Hidden) -> None:
            reveal_type(tnp.where(m, 0.0, 1.0))
            reveal_type(tnp.minimum(1.0, h))
            reveal_type(tnp.where(m, h, 0.0))
            reveal_type(h * 2.0)
            reveal_type(-h)
        """
    )
    result = _mypy(tmp_path, program, stubs=True)
    revealed = [line.split("Revealed type is ", 1)[1] for line in result.stdout.splitlines() if "Revealed" in line]
    assert revealed == [
        '"typed_xmap._static.NamedArray_[Any, Any, Any]"',
        *['"typed_xmap._static.NamedArray_[numpy.floating[numpy._typing._nbit_base._32Bit], Any, Any]"'] * 4,
    ], result.stdout


def test_plain_mypy_types_indexing_by_name(tmp_path):
    """Without the plugin, ``x[{...}]``, ``x.at[{...}].set(v)`` and ``tnp.take`` are NamedArrays of x's dtype."""
    program = PROGRAM + textwrap.dedent(
        """
        import typed_xmap.numpy as tnp

        def index(h: Hidden, tokens: NamedArray[i32, "batch seq"], i: int) -> Hidden:
            reveal_type(h[{"batch": 0}])
            reveal_type(h.at[{"batch": i}].set(1.0))
            reveal_type(tnp.take(h, tokens, axis="hidden"))
            return h.at[{"batch": i}].add(h[{"batch": 0}])
        """
    )
    result = _mypy(tmp_path, program, stubs=True)
    assert result.returncode == 0, result.stdout + result.stderr
    revealed = [line.split("Revealed type is ", 1)[1] for line in result.stdout.splitlines() if "Revealed" in line]
    assert (
        revealed == ['"typed_xmap._static.NamedArray_[numpy.floating[numpy._typing._nbit_base._32Bit], Any, Any]"'] * 3
    ), result.stdout
