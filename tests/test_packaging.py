"""The public surface and the command line (import boundaries: tests/test_architecture.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import typed_xmap as tx

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )


def test_public_names_resolve():
    for name in tx.__all__:
        assert getattr(tx, name) is not None, name
    assert issubclass(tx.NamedShapeError, TypeError) and issubclass(tx.NamedShapeError, ValueError)
    assert issubclass(tx.AxisResourceConflict, tx.NamedShapeError)


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        tx.nope


def test_demo_runs():
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    result = subprocess.run(
        [sys.executable, "-m", "typed_xmap._tools._cli", "demo"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "8 cpu devices" in result.stdout
    assert "NamedShapeError" in result.stdout and "AxisResourceConflict" in result.stdout
    assert "equals a @ b: True" in result.stdout and "split: left -> x, right -> y" in result.stdout
    assert "[named-axis-missing]" in result.stdout and "Success: no issues found" in result.stdout
    assert "demo finished" in result.stdout


def test_every_package_folder_is_shipped():
    """A package folder missing from pyproject's list works in an editable install and is absent from a wheel."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "typed_xmap").rglob("__init__.py")}
    assert on_disk - listed == set(), f"add these to [tool.setuptools] packages in pyproject.toml: {on_disk - listed}"
