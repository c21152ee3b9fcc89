"""The project checks its own code: ruff (lint and format), ``mypy --strict`` and pyright.

They run inside the test command, so ``.ci/run`` fails when any of them does. Each prints what it found.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600, check=False)


def _tool(name: str) -> str:
    path = BIN / name
    found = str(path) if path.exists() else shutil.which(name)
    assert found, f"{name} is not installed: install the test extra, pip install -e '.[test]'"
    return found


def test_ruff_lint():
    result = _run(_tool("ruff"), "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format():
    result = _run(_tool("ruff"), "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_mypy_strict():
    """``[tool.mypy]`` in pyproject.toml sets strict mode and the files (typed_xmap/)."""
    result = _run(sys.executable, "-m", "mypy", "--no-incremental")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_pyright():
    """``[tool.pyright]`` in pyproject.toml checks typed_xmap/ and the stubs."""
    result = _run(_tool("pyright"))
    assert result.returncode == 0, result.stdout + result.stderr
