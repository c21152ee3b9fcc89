"""``typed-xmap check`` leaves nothing behind in the temp directory but one reused folder of its own."""

import os
import subprocess
import sys
from pathlib import Path


def test_a_check_leaves_only_its_one_reused_temp_folder(tmp_path: Path) -> None:
    temp, project = tmp_path / "temp", tmp_path / "project"
    temp.mkdir()
    project.mkdir()
    (project / "prog.py").write_text("import typed_xmap as tx\n\nx: int = 1\n")
    env = {**os.environ, "TMPDIR": str(temp)}
    command = [sys.executable, "-m", "typed_xmap._tools._cli", "check", "--cache-dir", str(tmp_path / "cache")]
    done = subprocess.run([*command, "prog.py"], cwd=project, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [p.name for p in temp.iterdir()] == [f"typed-xmap-check-{os.getuid()}"]
    assert [p.name for p in (temp / f"typed-xmap-check-{os.getuid()}").iterdir()] == ["mypy.ini"]
