"""The private JAX hooks the NamedArray value uses, each behind one function here.

JAX has no public API for them: its traceback filter (``jax._src.traceback_util``) and how it takes a Python
object for an array (``jax._src.core.pytype_aval_mappings``, ``jax._src.dtypes``' canonicalize handlers). Each
function does nothing when the hook is gone, so a JAX release that moves one loses a nicer traceback or
message, never a result; tests/test_jax_hooks.py fails loudly when that happens.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

from jax._src import core, dtypes, traceback_util

F = TypeVar("F", bound=Callable[..., Any])

_ABSTRACTIFIERS = frozenset({"typeof", "shaped_abstractify", "get_aval"})
"""JAX's functions that look up ``pytype_aval_mappings``: the frames between the hook and the JAX caller."""


def hide_frames_under(path: str) -> None:
    """Let JAX's traceback filter drop the frames of the files under ``path``, as it drops its own."""
    register = getattr(traceback_util, "register_exclusion", None)
    if register is not None:
        register(path)


def traceback_boundary(fn: F) -> F:
    """``fn`` filtering the traceback of an error raised below it, as JAX's API functions do."""
    boundary = getattr(traceback_util, "api_boundary", None)
    return fn if boundary is None else boundary(fn)


def on_abstractify(cls: type, abstractify: Callable[[Any, str], Any]) -> None:
    """Where JAX takes an instance of ``cls`` for an array (``jax.grad``'s output, a lax function's operand), call
    ``abstractify(value, caller)``, ``caller`` naming the JAX function asking: it returns the abstract value
    JAX gets or raises our error, instead of JAX's about ``__jax_array__``, which names neither the value's
    type nor the fix."""
    mappings = getattr(core, "pytype_aval_mappings", None)
    if isinstance(mappings, dict):
        mappings[cls] = lambda value: abstractify(value, _jax_caller())
    register = getattr(dtypes, "register_canonicalize_value_handler", None)
    if register is not None:  # a lax function's operand
        register(cls, lambda value: abstractify(value, ""))


def _jax_caller() -> str:
    frame = sys._getframe(3)  # above _jax_caller, the lambda and abstractify: JAX's abstractifier
    while frame.f_back is not None and frame.f_code.co_name in _ABSTRACTIFIERS:
        frame = frame.f_back
    return frame.f_code.co_name
