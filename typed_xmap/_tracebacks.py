"""Our frames out of the tracebacks users read, as JAX takes out its own.

JAX filters the traceback of an error raised under one of its API functions (``jit``, ``grad``, ...) down to
the frames outside the paths registered with it; registering this package's modules there hides our frames
too (and points JAX's own messages at the user's line). An error raised outside any JAX function is filtered
at our public entry points, which ``entry_point`` marks. ``JAX_TRACEBACK_FILTERING=off`` shows every frame.

Both hooks are private JAX (``jax._src.traceback_util``), reached only here; ``tests/test_tracebacks.py``
fails when they move. Without them nothing is filtered and nothing else changes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

from jax._src import traceback_util

F = TypeVar("F", bound=Callable[..., Any])

PACKAGE = os.path.dirname(os.path.abspath(__file__))
USER_CODE = frozenset({"examples"})
"""Folders of the package that hold user code (``typed-xmap demo``'s programs): their frames stay."""

_register_exclusion: Callable[[str], None] | None = getattr(traceback_util, "register_exclusion", None)
_api_boundary: Callable[[Any], Any] | None = getattr(traceback_util, "api_boundary", None)


def hidden_paths() -> list[str]:
    """Every module and folder of the package but the user code, as paths JAX's filter compares by prefix."""
    return sorted(
        os.path.join(PACKAGE, entry)
        for entry in os.listdir(PACKAGE)
        if entry not in USER_CODE and (entry.endswith(".py") or os.path.isdir(os.path.join(PACKAGE, entry)))
    )


def _hide_package_frames() -> None:
    if _register_exclusion is not None:
        for path in hidden_paths():
            _register_exclusion(path)


def entry_point(fn: F) -> F:
    """``fn`` as a public entry point: an error raised below it reaches the user with our frames removed."""
    if _api_boundary is None:
        return fn
    return _api_boundary(fn)  # type: ignore[no-any-return]  # functools.wraps of fn


_hide_package_frames()
