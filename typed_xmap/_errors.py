"""The exceptions typed_xmap raises.

Pure Python: the runtime checker, ``xmap`` and the mypy plugin all share these classes.
"""

from __future__ import annotations

__all__ = ["NamedShapeError", "NamedShapeSyntaxError", "AxisResourceConflict", "UnboundAxisError"]


class NamedShapeError(TypeError, ValueError):
    """A value's named shape does not fit: a missing axis, a size clash, a wrong return shape.

    It subclasses both ``TypeError`` and ``ValueError`` (as numpy's ``AxisError`` does), because the
    original ``xmap`` raised one or the other for these conditions and code catching either keeps working.
    """


class NamedShapeSyntaxError(NamedShapeError):
    """A named-shape or einsum spec string does not parse; the message points at the bad token."""


class AxisResourceConflict(NamedShapeError):
    """Two named axes assigned to the same mesh axis meet in one value."""


class UnboundAxisError(NamedShapeError, NameError):
    """An axis name that no enclosing ``xmap``/``vmap`` binds.

    Also a ``NameError``: JAX (and the original xmap) raise ``NameError`` here, and code catching it keeps working.
    """


for _error in (NamedShapeError, NamedShapeSyntaxError, AxisResourceConflict, UnboundAxisError):
    _error.__module__ = "typed_xmap"  # tracebacks print typed_xmap.NamedShapeError, the public name
