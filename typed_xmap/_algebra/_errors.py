"""The exceptions typed_xmap raises, and the kind of fault each one reports.

Every error is made with its ``ErrorKind`` where it is raised, so the mypy plugin chooses its error
code from the kind (``typed_xmap.plugin`` maps kinds to codes), never from the message's wording.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

__all__ = [
    "MAX_MESSAGE",
    "AxisResourceConflict",
    "ErrorKind",
    "NamedShapeError",
    "NamedShapeSyntaxError",
    "UnboundAxisError",
    "capped",
]


class ErrorKind(enum.Enum):
    """What is wrong, independent of how the message words it."""

    SYNTAX = "a spec string or axis argument does not parse"
    AXIS_SIZE = "one axis name has two different sizes"
    AXIS_MISSING = "an axis is missing, extra, or not listed where it must be"
    POSITIONAL = "positional dims do not broadcast or match"
    DTYPE = "a value's dtype does not fit its annotation"
    RESOURCE_CONFLICT = "two named axes on one mesh axis meet in one value"
    PLACEMENT = "a value's axes are split over other mesh axes than its annotation says"
    UNBOUND_AXIS = "an axis name that no enclosing map binds"
    INVALID_ARGUMENT = "an argument has the wrong type or value"


MAX_MESSAGE = 2000
"""The longest message an error keeps: one naming every axis of a 14,000-axis annotation would run to
300,000 characters, so the middle goes and the head (what is wrong) and the tail (the ``Fix:``) stay."""


def capped(message: str) -> str:
    """``message``, its middle elided when it is longer than ``MAX_MESSAGE``."""
    if len(message) <= MAX_MESSAGE:
        return message
    head, tail = MAX_MESSAGE * 2 // 3, MAX_MESSAGE // 4
    return f"{message[:head]} ... [{len(message) - head - tail} characters left out] ... {message[-tail:]}"


class NamedShapeError(TypeError, ValueError):
    """A value's named shape does not fit: a missing axis, a size clash, a wrong return shape.

    It subclasses both ``TypeError`` and ``ValueError`` (as numpy's ``AxisError`` does), because the
    original ``xmap`` raised one or the other for these conditions and code catching either keeps working.
    ``kind`` says what is wrong (an ``ErrorKind``); it is given where the error is raised. ``axes`` names the
    axes an ``AXIS_MISSING`` error is about (missing from an operand, carried where it must not be, clashing), or
    an ``AXIS_SIZE`` clash is on, where the rule knows them (empty otherwise): the mypy plugin reads it to tell
    which operand lacks an axis, and whether a clash is certain whatever a ``*rest`` group holds.
    """

    kind: ErrorKind
    axes: tuple[str, ...]

    def __init__(self, message: str, *, kind: ErrorKind, axes: Iterable[str] = ()) -> None:
        super().__init__(capped(message))
        self.kind = kind
        self.axes = tuple(axes)

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (type(self), str(self), self.kind, self.axes))


def _rebuild(cls: type[NamedShapeError], message: str, kind: ErrorKind, axes: tuple[str, ...] = ()) -> NamedShapeError:
    """Unpickle an error (multi-process runs send them between processes)."""
    error = cls.__new__(cls)
    NamedShapeError.__init__(error, message, kind=kind, axes=axes)
    return error


class NamedShapeSyntaxError(NamedShapeError):
    """A named-shape or einsum spec string does not parse; the message points at the bad token."""

    def __init__(self, message: str, *, kind: ErrorKind = ErrorKind.SYNTAX) -> None:
        super().__init__(message, kind=kind)


class AxisResourceConflict(NamedShapeError):
    """Two named axes assigned to the same mesh axis meet in one value."""

    def __init__(self, message: str, *, kind: ErrorKind = ErrorKind.RESOURCE_CONFLICT) -> None:
        super().__init__(message, kind=kind)


class UnboundAxisError(NamedShapeError, NameError):
    """An axis name that no enclosing ``xmap``/``vmap`` binds.

    Also a ``NameError``: JAX (and the original xmap) raise ``NameError`` here, and code catching it keeps working.
    """

    def __init__(self, message: str, *, kind: ErrorKind = ErrorKind.UNBOUND_AXIS) -> None:
        super().__init__(message, kind=kind)


for _error in (NamedShapeError, NamedShapeSyntaxError, AxisResourceConflict, UnboundAxisError):
    _error.__module__ = "typed_xmap"  # tracebacks print typed_xmap.NamedShapeError, the public name
