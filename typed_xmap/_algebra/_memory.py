"""What can be allocated: a named shape's bytes against the memory of the devices at hand.

JAX (XLA) aborts the whole process, with no Python exception, when asked for an array whose element count
overflows int64 or whose bytes no device can allocate. Every typed_xmap operation that makes an array of
sizes its arguments give (constructors, random draws, padding, broadcasts, one-hot tables) asks
``check_allocation`` first. The bound: the elements times the dtype's bytes must be at most ``limit``, the
runtime's figure for the memory of all the devices together (so a value split over a mesh may be as large as
the mesh holds); a count past ``2**63 - 1`` is refused whatever the limit. An empty value (a size 0) holds
nothing, yet XLA builds it from its other sizes: past ``2**63 - 1`` bytes it aborts, and below that it can
allocate for them (a ``bad_alloc`` abort, or minutes of swapping). An empty value whose other sizes multiply
past ``limit`` bytes is refused too.

Pure Python.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ._errors import ErrorKind, NamedShapeError
from ._shapes import Size, describe_named_shape

__all__ = ["INT64_MAX", "check_allocation"]

INT64_MAX = 2**63 - 1


def check_allocation(
    named: Mapping[str, Size], positional: tuple[int, ...], itemsize: int, limit: int, *, operation: str, where: str
) -> None:
    """A value of named shape ``named`` (and positional dims ``positional``) of ``itemsize`` bytes per element
    fits in ``limit`` bytes (``where`` says whose memory that is). Unknown sizes (``None``) pass."""
    if any(s is None for s in named.values()):
        return
    count = math.prod(s for s in named.values() if s is not None) * math.prod(positional)
    size = count * itemsize
    if count > INT64_MAX or size > limit:
        raise NamedShapeError(
            f"{operation}: a value of named shape {describe_named_shape(named)} is {_bytes(size)}, more than "
            f"{where} hold ({_bytes(limit)}); JAX would abort the process. Fix: check the sizes (a size in "
            f"bytes or a product of two sizes passed as one size?), or shard it over a larger mesh",
            kind=ErrorKind.AXIS_SIZE,
        )
    extent = math.prod(s for s in (*named.values(), *positional) if s) * itemsize
    if extent > limit:
        raise NamedShapeError(
            f"{operation}: a value of named shape {describe_named_shape(named)} is empty, but its other sizes "
            f"make {_bytes(extent)}, more than {where} hold ({_bytes(limit)}); XLA builds an empty value from "
            f"those sizes and can abort the process. Fix: check the sizes (a size in bytes or a product of two "
            f"sizes passed as one size?)",
            kind=ErrorKind.AXIS_SIZE,
        )


def _bytes(size: int) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size} bytes"
