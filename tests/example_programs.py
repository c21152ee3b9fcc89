"""Shared by the tests of the example programs: load one as a module, and check it (clean, or with one
planted mistake) the user's way, with ``typed-xmap check --strict``."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
from pathlib import Path
from types import ModuleType


def load(path: Path, name: str) -> ModuleType:
    """The example at ``path`` imported as module ``name`` (registered, so its dataclasses pickle)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def check_strict(
    tmp_path: Path, mypy_cache: Path, example: Path, bug: tuple[str, str] | None, code: str | None
) -> None:
    """Clean under ``typed-xmap check --strict``; with ``bug`` (text, replacement) planted, exactly one error,
    on the planted line, with ``code``. ``mypy_cache`` is the worker's (tests/conftest.py): every check here has
    the same flags and config, so all but a worker's first find jax and the stubs cached."""
    from typed_xmap._tools._check import run_check

    source = example.read_text()
    if bug is not None:
        assert bug[0] in source
        source = source.replace(bug[0], bug[1], 1)
    path = tmp_path / example.name
    path.write_text(source)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = run_check([str(path)], ["--strict", "--cache-dir", str(mypy_cache / "examples-strict")])
    text = out.getvalue()
    if bug is None:
        assert status == 0, text
        return
    line = next(i for i, row in enumerate(source.splitlines(), 1) if bug[1] in row)
    errors = [row for row in text.splitlines() if ": error:" in row]
    assert len(errors) == 1, text
    assert f"{example.name}:{line}: error:" in errors[0] and errors[0].endswith(f"[{code}]"), text
