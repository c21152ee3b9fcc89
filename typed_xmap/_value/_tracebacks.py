"""Our frames out of the tracebacks users read, as JAX takes out its own.

JAX filters the traceback of an error raised under one of its API functions (``jit``, ``grad``, ...) down to
the frames outside the paths registered with it; registering this package's modules there hides our frames
too (and points JAX's own messages at the user's line). An error raised outside any JAX function is filtered
at our public entry points, which ``entry_point`` marks. ``JAX_TRACEBACK_FILTERING=off`` shows every frame.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

from ._compat import hide_frames_under, traceback_boundary

F = TypeVar("F", bound=Callable[..., Any])

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER_CODE = frozenset({"examples"})
"""Folders of the package that hold user code (``typed-xmap demo``'s programs): their frames stay."""


def hidden_paths() -> list[str]:
    """Every module and folder of the package but the user code, as paths JAX's filter compares by prefix."""
    return sorted(
        os.path.join(PACKAGE, entry)
        for entry in os.listdir(PACKAGE)
        if entry not in USER_CODE and (entry.endswith(".py") or os.path.isdir(os.path.join(PACKAGE, entry)))
    )


def entry_point(fn: F) -> F:
    """``fn`` as a public entry point: an error raised below it reaches the user with our frames removed."""
    return traceback_boundary(fn)


for _path in hidden_paths():
    hide_frames_under(_path)
