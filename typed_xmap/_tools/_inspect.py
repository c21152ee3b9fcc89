"""``typed-xmap inspect LOCATION``: ``dmypy inspect`` with NamedArray types in the annotation notation.

``dmypy inspect`` prints a type with mypy's ``format_type`` (mypy/inspections.py, ``expr_type``), which no plugin
hook reaches: a NamedArray reads as its encoding, ``NamedArray_[floating[_32Bit], Shape_[Literal['batch=8
mlp=cfg.mlp // 2']], tuple[()]]``. This command asks the same running daemon the same question (mypy's own
client, every ``dmypy inspect`` option passed through) and prints the answer through the formatter of the
plugin's messages: ``NamedArray[f32, "batch=8 mlp=cfg.mlp // 2"]``, symbolic sizes as written.
"""

from __future__ import annotations

import contextlib
import io

__all__ = ["run_inspect"]


def run_inspect(status_file: str, location: str, options: list[str]) -> int:
    """Print the types the daemon behind ``status_file`` infers at ``location``; dmypy's exit status."""
    from mypy.dmypy.client import main as dmypy

    from ..plugin._core._messages import readable

    answer = io.StringIO()
    status = 0
    with contextlib.redirect_stdout(answer):
        try:
            dmypy(["--status-file", status_file, "inspect", *options, location])
        except SystemExit as exit_:  # dmypy's client exits with the daemon's status
            status = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    for line in answer.getvalue().splitlines():
        print(readable(line))
    return status
