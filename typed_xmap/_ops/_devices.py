"""``tx.fitting_mesh``: a mesh of the shape a program asks for, shrunk to the devices the machine has.

A program written for a 4x2 mesh should still run on a laptop (one CPU device), on one GPU or on two: every
mesh axis keeps a size that divides the one asked for (so arrays that divide over the asked-for mesh divide
over this one), and the mesh is as large as the devices allow.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import jax
from jax.sharding import AxisType, Mesh

from .._algebra import ErrorKind, NamedShapeError, is_size

__all__ = ["describe_mesh", "fitting_mesh", "fitting_shape"]


def fitting_shape(shape: Sequence[int], count: int) -> tuple[int, ...]:
    """The largest mesh shape of at most ``count`` devices whose every size divides ``shape``'s.

    Ties go to the shape whose earlier axes are larger: ``(4, 2)`` on 2 devices is ``(2, 1)``. The products
    the later axes can reach (each at most ``count``) are listed once per axis, and the sizes are then picked
    from the first axis on, each the largest that still reaches the best product: time grows with the number
    of axes times ``count``, never with the number of combinations (16 axes of 4 would be 4**16).
    """
    divisors = [[d for d in range(min(size, count), 0, -1) if size % d == 0] for size in shape]
    reach: list[set[int]] = [{1}]  # reach[j]: the products of the last j axes' divisors, at most count
    for options in reversed(divisors):
        reach.append({p * d for p in reach[-1] for d in options if p * d <= count})
    reach.reverse()  # reach[i]: the products of axes i..n-1
    product = max(reach[0])
    fitted = []
    for i, options in enumerate(divisors):
        size = next(d for d in options if product % d == 0 and product // d in reach[i + 1])
        fitted.append(size)
        product //= size
    return tuple(fitted)


def fitting_mesh(
    shape: Sequence[int],
    names: Sequence[str],
    *,
    axis_types: tuple[AxisType, ...] | None = None,
    emulate: bool = False,
) -> Mesh:
    """``jax.make_mesh(shape, names)`` on the devices at hand, each axis shrunk to fit them.

    The mesh is on the default backend's devices (one GPU gives a 1x1 mesh, two a 2x1), each axis a divisor
    of the size asked for. With ``emulate=True``, when the default backend has fewer devices than ``shape``
    asks for and the host CPU has more (emulated by setting
    ``XLA_FLAGS=--xla_force_host_platform_device_count=8`` before JAX starts), the mesh is on the CPU devices:
    for a program whose point is the sharding, not the speed. ``mesh.devices.flat[0].platform`` and
    ``mesh.shape`` say what it got.

    ``tx.fitting_mesh((4, 2), ("x", "y"))`` is 4x2 on 8 devices, 2x1 on 2 and 1x1 on one. Sizes are ints of any
    integer type (``np.int64`` too); names are strings, each once.

    Args:
        shape: the mesh shape the program asks for.
        names: the mesh axes' names.
        axis_types: ``jax.make_mesh``'s axis types (Explicit, Auto).
        emulate: use the host's emulated CPU devices when the default backend has fewer.

    Returns:
        A ``jax.sharding.Mesh`` of at most ``shape``, each axis a divisor of the size asked for.

    Raises:
        NamedShapeError: shape and names of different lengths, a size that is not a positive int, or a
            name that is not a string or appears twice.

    Examples:
        >>> dict(tx.fitting_mesh((4, 2), ("x", "y")).shape)
        {'x': 4, 'y': 2}
    """
    shape, names = _checked(shape, names)
    devices = jax.devices()
    wanted = math.prod(shape)
    if emulate and len(devices) < wanted and jax.default_backend() != "cpu":
        cpu = jax.devices("cpu")
        if len(cpu) > len(devices):
            devices = cpu
    fitted = fitting_shape(shape, len(devices))
    return jax.make_mesh(fitted, tuple(names), axis_types, devices=devices[: math.prod(fitted)])


def _checked(shape: object, names: object) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """``shape`` as ints (``np.int64`` sizes included) and ``names`` as a tuple: one size of at least 1 per
    name, each name a string given once."""
    sizes = _sizes(shape)
    listed = tuple(names) if isinstance(names, Sequence) and not isinstance(names, str | bytes) else None
    if sizes is None or listed is None or len(sizes) != len(listed):
        raise NamedShapeError(
            f"tx.fitting_mesh takes one size of at least 1 per mesh axis name, got shape {shape!r} for names "
            f"{names!r}. Fix: tx.fitting_mesh((4, 2), ('x', 'y')): as many sizes as names",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    bad = [n for n in listed if not isinstance(n, str) or not n]  # the annotation says str; a caller may not
    twice = sorted({n for n in listed if listed.count(n) > 1}, key=str)
    if bad or twice:
        raise NamedShapeError(
            f"tx.fitting_mesh: mesh axis names {listed!r} have "
            f"{f'{bad[0]!r}, not a non-empty string' if bad else f'{twice[0]!r} twice'}; each mesh axis has a "
            f"name of its own. Fix: name every axis once with a string, e.g. ('data', 'model')",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    return sizes, listed


def _sizes(shape: object) -> tuple[int, ...] | None:
    """``shape``'s sizes as ints (any integer type but bool), each at least 1; None if it is not such."""
    if not isinstance(shape, Sequence) or isinstance(shape, str | bytes):
        return None
    sizes = []
    for size in shape:
        if isinstance(size, bool) or not isinstance(size, numbers.Integral) or not is_size(int(size)) or size < 1:
            return None
        sizes.append(int(size))
    return tuple(sizes)


def describe_mesh(mesh: Any) -> str:
    """What a mesh runs on, for a program to print: ``cpu, 8 devices, mesh x=4 y=2``."""
    platform = mesh.devices.flat[0].platform
    axes = " ".join(f"{name}={size}" for name, size in mesh.shape.items())
    count = mesh.devices.size
    return f"{platform}, {count} device{'s' if count != 1 else ''}, mesh {axes}"
