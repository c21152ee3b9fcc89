"""``tx.named`` and ``tx.positional``: whether an xmap spec leaf fits the value it names or un-names.

The runtime (``typed_xmap._ops._convert``) calls these with a value's real shape, the mypy plugin with the
shape it inferred (sizes it does not know are ``None``): one rule, one wording.

Pure Python.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from ._axis_map import AxisMap, check_fits, format_axis_list
from ._errors import ErrorKind, NamedShapeError
from ._shapes import Size

__all__ = ["check_named", "check_new_names", "check_positional"]


def check_named(spec: AxisMap, shape: Sequence[Size], held: Collection[str], *, where: str) -> None:
    """Raise unless ``spec`` can name the dims of positional ``shape`` on a value already holding ``held``."""
    check_fits(spec, tuple(shape), where=where)
    check_new_names(spec, held, where=where)


def check_new_names(spec: AxisMap, held: Collection[str], *, where: str) -> None:
    """Raise if ``spec`` names an axis the value already holds (``held``)."""
    clash = [n for n in spec.names if n in held]
    if clash:
        raise NamedShapeError(
            f"{where} = {spec}: the value already has named axis {clash[0]!r}. Fix: pick a new name",
            kind=ErrorKind.INVALID_ARGUMENT,
        )


def check_positional(
    spec: AxisMap, axes: Sequence[str], positional_rank: int | None, *, where: str, value: str | Callable[[], str]
) -> None:
    """Raise unless ``spec`` lists exactly the named ``axes`` a value has, at dims its rank allows.

    ``positional_rank`` is the value's number of positional dims (``None``: unknown); ``value`` is how
    messages show the value, or a function that says it (called only when an error is raised, so the
    success path never formats a value).
    """
    listed = set(spec.names)
    unlisted = [a for a in axes if a not in listed]
    if unlisted:
        raise NamedShapeError(
            f"{where} = {spec} does not list axis {', '.join(repr(a) for a in unlisted)}, which the value "
            f"{_shown(value)} carries. "
            f"Fix: list every named axis, e.g. {format_axis_list(list(spec.names) + unlisted)}",
            kind=ErrorKind.AXIS_MISSING,
            axes=unlisted,
        )
    lacking = [n for n in spec.names if n not in axes]
    if lacking:
        raise NamedShapeError(
            f"{where} = {spec} lists axis {', '.join(repr(n) for n in lacking)}, but the value {_shown(value)} does "
            f"not carry it, so its size is unknown. Fix: drop it from the spec, or broadcast x first",
            kind=ErrorKind.AXIS_MISSING,
            axes=lacking,
        )
    if positional_rank is None:
        return
    rank = positional_rank + len(axes)
    needed = max((d for d, _ in spec.dims), default=-1) + 1 - len(spec.dims)
    if needed > positional_rank:
        raise NamedShapeError(
            f"{where} = {spec} requires the value to have at least {needed} positional dims, but "
            f"{_shown(value)} has {positional_rank}. Fix: put the named axes at lower dims",
            kind=ErrorKind.POSITIONAL,
        )
    if spec.rank is not None and spec.rank != rank:
        raise NamedShapeError(
            f"{where} = {spec}: a list spec without '...' asserts rank {spec.rank}, but the result has "
            f"rank {rank}. Fix: end the list with ... to allow more dims",
            kind=ErrorKind.POSITIONAL,
        )


def _shown(value: str | Callable[[], str]) -> str:
    return value if isinstance(value, str) else value()
