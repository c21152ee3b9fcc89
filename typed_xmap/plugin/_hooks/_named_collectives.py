"""``jax.lax.psum(x, "block")``, ``ppermute``, ``pmax``, ... inside an xmapped body (a positional one too): the
collectives they run over the mesh axes the body's ``axis_resources`` place the named axis on, noted as
``named-comm`` (the algebra's ``named_collectives``). The call's type is mypy's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mypy.types import Type

from ..._algebra import NAMED_COLLECTIVES, Placed, named_collectives
from .._core._constants import constant_value
from .._core._support import arg_expr
from ._placement import note_collectives

if TYPE_CHECKING:
    from ._protocols import TypedXmapPlugin

__all__ = ["LAX_COLLECTIVES", "named_collective_hook"]

LAX_COLLECTIVES = {
    f"{module}.{name}": name for module in ("jax._src.lax.parallel", "jax.lax") for name in NAMED_COLLECTIVES
}
"""The full names of the ``jax.lax`` collectives with a rule -> their names."""


def named_collective_hook(plugin: TypedXmapPlugin, name: str, ctx: Any) -> Type:
    """Note the collectives of ``jax.lax.<name>(x, axis_name, ...)`` in an xmapped body, a literal or constant
    ``axis_name`` (a name or a tuple of names); mypy's type of the call."""
    body = plugin.resources.body_placement(ctx.api)
    if body:
        value = constant_value(ctx.api, arg_expr(ctx, "axis_name", 1))
        axes = (value,) if isinstance(value, str) else value if isinstance(value, (tuple, list)) else ()
        if axes and all(isinstance(a, str) for a in axes):
            found = named_collectives(name, axes, body, f"jax.lax.{name}")
            note_collectives(ctx, Placed({}, found))
    return ctx.default_return_type  # type: ignore[no-any-return]
