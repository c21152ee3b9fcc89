"""The plugin's memos of a check (the first column of a line's note, the first site computing a reduction, a
module's scans) last that check alone: a second check of the module in the same process (the language server's
daemon re-checking an edit) starts anew, so a site that moved to another column is not said to repeat one."""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = """\
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


def f(x: NamedArray[f32, "batch embed@model"]) -> None:
{indent}tnp.sum(x, "embed")
"""


def _check(program: Path, indent: str) -> list[str]:
    program.write_text(PROGRAM.format(indent=indent))
    config = program.parent / "mypy.ini"
    config.write_text(
        f"[mypy]\nplugins = typed_xmap.plugin\nmypy_path = {ROOT / 'stubs'}\nenable_error_code = named-comm\n"
    )
    out, _, _ = api.run(
        ["--config-file", str(config), "--no-incremental", "--no-error-summary", "--hide-error-context", str(program)]
    )
    return [line for line in out.splitlines() if "collective:" in line]


def test_a_note_moved_to_another_column_in_a_second_check_names_no_column(tmp_path: Path) -> None:
    program = tmp_path / "model.py"
    first = _check(program, "    ")
    assert len(first) == 1 and first[0].startswith(f"{program}:6:") and "(column" not in first[0], first
    moved = _check(program, "    _ = ")  # the same line, its only site four columns to the right
    assert len(moved) == 1 and moved[0].startswith(f"{program}:6:"), moved
    assert moved[0].split(": note: ")[1] == first[0].split(": note: ")[1], (first, moved)
