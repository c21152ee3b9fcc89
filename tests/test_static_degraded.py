"""Without the mypy plugin, type checkers see NamedArray[...] as a plain array type: no false errors."""

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


def _mypy(tmp_path: Path, program: str) -> subprocess.CompletedProcess[str]:
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
