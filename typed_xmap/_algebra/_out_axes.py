"""xmap's out_axes rule: an output must list every named axis it carries (a listed axis it lacks is broadcast).

Stated once here, for ``xmap`` (which sees the axes a traced output carries) and the mypy plugin (which sees
the axes a function's return annotation declares). Pure Python.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ._axis_map import format_axis_list
from ._errors import ErrorKind, NamedShapeError

__all__ = ["OUT_AXES_RULE", "unlisted_axes", "unlisted_axis_error", "unlisted_return_error"]

OUT_AXES_RULE = "an output must list every named axis it carries"


def unlisted_axes(carried: Iterable[str], listed: Iterable[str]) -> list[str]:
    """The axes an output carries that its out_axes leaf does not list, in the order carried."""
    listed = frozenset(listed)
    return [name for name in carried if name not in listed]


def unlisted_axis_error(output: str, fun_name: str, axis: str, listed: Sequence[str]) -> NamedShapeError:
    """At run time: ``output`` (``"the output (out_axes = [...])"``) of ``fun_name`` carries ``axis``."""
    fixed = [*listed, axis]
    return NamedShapeError(
        f"{output} of {fun_name} carries named axis {axis!r}, which its out_axes do not list; {OUT_AXES_RULE}. "
        f"Fix: list it, e.g. out_axes {format_axis_list(fixed)}, or reduce it in the body "
        f"(jax.lax.psum(y, {axis!r}) or jnp.sum(y, axis={axis!r}))",
        kind=ErrorKind.AXIS_MISSING,
    )


def unlisted_return_error(fun_name: str, returned: str, leaf: str, unlisted: Sequence[str]) -> NamedShapeError:
    """Statically: ``fun_name`` is annotated to return axes ``returned`` that out_axes ``leaf`` does not all list."""
    return NamedShapeError(
        f"xmap({fun_name}): {fun_name} returns named axes {returned} but out_axes {leaf} does not list "
        f"{', '.join(repr(n) for n in unlisted)}; {OUT_AXES_RULE}. Fix: add them to out_axes, or reduce them "
        f"in {fun_name}",
        kind=ErrorKind.AXIS_MISSING,
    )
