"""A shape error's traceback in IPython and Jupyter: the user's frames and the message, none of ours.

Outside IPython our entry points remove our frames from the traceback (``_value/_tracebacks.py``). Under IPython
JAX's filter marks the frames instead (``__tracebackhide__``), and IPython still prints the frame that raised,
with its source: the last frame of a shape error is then a line of ``_algebra/``. A handler for
``NamedShapeError`` (``InteractiveShell.set_custom_exc``) shows the traceback without the frames of this package
or marked hidden. It is installed when typed_xmap's runtime loads inside a running IPython, unless the shell
already has a handler of the user's; ``JAX_TRACEBACK_FILTERING=off`` shows every frame.
"""

from __future__ import annotations

import os
import sys
from types import TracebackType
from typing import Any

from .._algebra import NamedShapeError
from .._value._tracebacks import hidden_paths

__all__ = ["install", "user_frames"]


def _ours(frame: Any, hidden: tuple[str, ...]) -> bool:
    return bool(frame.f_locals.get("__tracebackhide__")) or os.path.abspath(frame.f_code.co_filename).startswith(hidden)


def user_frames(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` without the frames of this package (but its user code) or those marked ``__tracebackhide__``."""
    hidden = tuple(hidden_paths())
    kept: list[TracebackType] = []
    while tb is not None:
        if not _ours(tb.tb_frame, hidden):
            kept.append(tb)
        tb = tb.tb_next
    rebuilt: TracebackType | None = None
    for entry in reversed(kept):
        rebuilt = TracebackType(rebuilt, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return rebuilt


def _show(shell: Any, etype: type[BaseException], value: BaseException, tb: Any, tb_offset: Any = None) -> None:
    import jax

    if getattr(jax.config, "jax_traceback_filtering", None) == "off":
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    else:
        shell.showtraceback((etype, value, user_frames(tb)), tb_offset=tb_offset)


def install() -> None:
    """Show ``NamedShapeError``'s traceback without our frames in the running IPython shell, if there is one."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or getattr(shell, "custom_exceptions", ()) not in ((), (NamedShapeError,)):
        return  # not in IPython, or the user set a handler of their own: leave it
    shell.set_custom_exc((NamedShapeError,), _show)
