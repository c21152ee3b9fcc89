"""A placement an annotation declares (``"batch@data"``) against one a value has or the checker knows.

``placement_mismatch`` is whether a value placed one way fits an annotation's ``"batch@data"`` (``@tx.typed``);
``declared_placement_error`` is its static half (the plugin: a placement the checker knows against a declared one).

Pure Python, shared by the mypy plugin and the runtime checker.
"""

from __future__ import annotations

from ._errors import ErrorKind, NamedShapeError
from ._placement import Placement
from ._resources import resource_conflicts
from ._shapes import Mismatch
from ._spec import format_mesh_axes, format_placed_name, is_whole, partition_entry

__all__ = [
    "declared_placement_error",
    "placement_mismatch",
]


def placement_mismatch(declared: Placement, actual: Placement | None) -> Mismatch | None:
    """Whether a value placed ``actual`` fits an annotation's ``declared`` placements (``"batch@data"``); a
    value whose placement is not known (``None``: no ``NamedSharding``, Auto mesh axes inside ``jit``) fits."""
    if actual is None:
        return None
    for name, wanted in declared.items():
        found = actual.get(name, ())
        if found != wanted:
            return Mismatch(_misplaced(name, found, wanted), ErrorKind.PLACEMENT, name, placement_fix(declared))
    return None


def placement_fix(declared: Placement) -> str:
    """How a value placed other than an annotation's ``declared`` placements is made to fit (the checker's
    message and the runtime's name the same move)."""
    wanted = {n: partition_entry(m) for n, m in declared.items()}
    return f"move the value with tx.constrain(..., {wanted!r}), or correct the annotation"


def _misplaced(name: str, found: tuple[str, ...], wanted: tuple[str, ...]) -> str:
    """Why ``name`` placed ``found`` does not fit the annotation's ``wanted``; a whole one (``()``) says so."""
    declared = format_placed_name(name, wanted)
    if not found:  # known whole
        return f"axis {name!r} is whole (replicated) here, but the annotation declares {declared!r}"
    where = f"mesh axis {found[0]!r}" if len(found) == 1 else f"mesh axes {found}"
    if is_whole(wanted):
        return f"axis {name!r} is split over {where}, but the annotation declares it whole ({declared!r})"
    return f"axis {name!r} is split over {where} but the annotation says {declared}"


def declared_placement_error(where: str, declared: Placement, known: Placement) -> NamedShapeError | None:
    """The error for a value whose placement the checker knows (``known``) put where an annotation declares
    another (``declared``: a return, a parameter, an annotated variable), or ``None``. Gradual: an axis the
    checker does not know, or that the annotation writes without ``@``, fits; but a mesh axis the value is
    known to split along one axis cannot split another that the annotation places on it."""
    mismatch = placement_mismatch({n: m for n, m in declared.items() if n in known}, known)
    mismatch = mismatch or _mesh_axis_taken(declared, known)
    if mismatch is None or mismatch.axis is None:
        return None
    return NamedShapeError(
        f"{where} is placed other than its annotation says: {mismatch.reason}. Fix: {placement_fix(declared)}",
        kind=ErrorKind.PLACEMENT,
    )


def _mesh_axis_taken(declared: Placement, known: Placement) -> Mismatch | None:
    """An axis the annotation places on a mesh axis that the value is known to split along another of its axes
    (``seq@model`` known, ``embed@model`` declared): one mesh axis cannot split a value along two axes (the
    conflict rule, ``resource_conflicts``, over the known placement with the declared one over it)."""
    merged = {**{n: m for n, m in known.items() if n not in declared}, **declared}
    for conflict in resource_conflicts(merged, merged):
        if (conflict.first in declared) != (conflict.second in declared):
            declared_first = conflict.first in declared
            name, other = (conflict.first, conflict.second) if declared_first else (conflict.second, conflict.first)
            return Mismatch(
                f"axis {other!r} is split over mesh axis {conflict.resource!r}, which the annotation gives to "
                f"{name!r} ({name}@{format_mesh_axes(declared[name])})",
                ErrorKind.PLACEMENT,
                other,
            )
    return None
