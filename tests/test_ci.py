"""``.ci/run``'s logic, without running what it runs (``CI_DRY_RUN=1`` prints each command instead)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASH = shutil.which("bash") or "/bin/bash"
SUITE = '.venv/bin/pip install -e ".[test]" && .venv/bin/python -m pytest -n 2'


def _dry_run(root: Path, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CI_DRY_RUN": "1"}
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [BASH, str(root / ".ci" / "run")], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def _readme_commands(root: Path) -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", (root / "README.md").read_text(), re.S)]


def test_ci_runs_readme_command_2_then_the_newest_jax_on_a_second_python():
    result = _dry_run(ROOT)
    assert result.returncode == 0, result.stderr
    lines = [line.removeprefix("+ ") for line in result.stdout.splitlines()]
    assert lines[0] == _readme_commands(ROOT)[1] == f"python3 -m venv .venv && {SUITE}"
    pyenv = subprocess.run([BASH, "-c", "PYENV_VERSION=3.12.1 python3.12 -c ''"], capture_output=True, check=False)
    if pyenv.returncode != 0:
        assert lines[1].startswith("no Python 3.12.1 or 3.13.0 from pyenv here"), lines
        return
    second = lines[1]
    assert second.startswith('PYENV_VERSION=3.12.1 python3.12 -m venv .venv && .venv/bin/pip install -e ".[test]" && ')
    assert "&& .venv/bin/typed-xmap demo && .venv/bin/python -m pytest -n 2 -m 'not slow' tests/" in second
    files = second.split("-m 'not slow' ", 1)[1].split()
    assert len(files) >= 5 and all((ROOT / f).is_file() for f in files), files


def test_ci_without_pyenv_runs_the_suite_once_and_says_so(tmp_path):
    bin_dir = tmp_path / "bin"  # python3 and the tools .ci/run needs, without pyenv's shims
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(Path(sys.executable).resolve())  # a real python, not pyenv's shim
    for tool in ("git", "mktemp", "cp", "xargs", "rm", "dirname"):
        (bin_dir / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    result = _dry_run(ROOT, str(bin_dir))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1:] == [
        "+ no Python 3.12.1 or 3.13.0 from pyenv here: the run on the newest JAX is skipped"
    ]


def test_ci_stops_when_readme_command_2_changes_its_form(tmp_path):
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    (tmp_path / "README.md").write_text("```bash\na\n```\n\n```bash\ntox -e py\n```\n")
    result = _dry_run(tmp_path)
    pyenv = subprocess.run([BASH, "-c", "PYENV_VERSION=3.12.1 python3.12 -c ''"], capture_output=True, check=False)
    if pyenv.returncode == 0:
        assert result.returncode == 1 and "update .ci/run" in result.stderr, result.stdout + result.stderr
    assert result.stdout.splitlines()[0] == "+ tox -e py"
