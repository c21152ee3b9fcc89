"""Contractions by axis name for ``typed_xmap.numpy``: brace ``einsum`` and ``dot``.

A contraction over a named axis must be a matmul: ``psum(x * w, 'in')`` under ``vmap`` builds the whole
product and was measured ~180x slower with gradients. So every named axis the spec reduces is first made a
dim of the data (held there already, or gathered from its ``vmap`` level: ``_mapped_axes.gather``, free
under ``vmap``), and the contraction is positional: one ``dot_general`` per pair of operands (emitted directly
for two operands, which traces ~15x faster than ``jnp.einsum``; through ``jnp.einsum`` otherwise).
Named axes the result keeps stay where they are: ``vmap`` levels stay levels (batch dims of the dot), dims
stay dims. When the mesh has Explicit axes each ``dot_general`` gets an ``out_sharding`` (a contraction over a
sharded dim is otherwise ambiguous to JAX): the free dims keep their operands' mesh axes.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import opt_einsum
from jax.core import Tracer
from jax.sharding import AxisType

from ..._algebra import dot_operation, dot_spec, einsum_result, parse_einsum, positional_einsum
from ..._value._flat import SORTED_AUX, canonical_order
from ..._value._layout import apply_elementwise, index_mapped
from ..._value._named_array import NamedArray, wrap
from ._contract_sharding import Named, contraction_sharding
from ._mapped_axes import as_mapped, gather

__all__ = ["dot", "einsum"]


def einsum(spec: str, *operands: Any, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Einsum with named axes in braces: ``einsum('n{b,k},{k,m}->n{b,m}', x, w)``.

    Letters are positional dims; ``{...}`` lists named axes (any order). A name in one operand and not in
    the output is summed; in several and not in the output, contracted (one ``dot_general``); named axes
    the spec never mentions are carried (broadcast by name). Plain arrays (per element, inside ``xmap``)
    have exactly the named axes their braces list, held by the enclosing ``xmap``/``vmap`` levels.

    Args:
        spec: a brace spec, ``"{in},{in,out}->{out}"``: each operand's named axes in braces (positional dims as
            letters outside them), the result's after ``->``.
        operands: the NamedArrays (or per-element arrays inside ``xmap``), one per operand of the spec.
        precision: ``lax.dot_general``'s precision.
        preferred_element_type: ``lax.dot_general``'s accumulation dtype.

    Returns:
        The contraction, one ``dot_general``: named axes not contracted broadcast by name.

    Raises:
        NamedShapeSyntaxError: a spec that does not parse.
        NamedShapeError: an operand without an axis its braces name, or one axis of two sizes.

    Examples:
        >>> x = tx.named(jnp.ones((2, 4)), ["batch", "in"])
        >>> w = tx.named(jnp.ones((4, 3)), ["in", "out"])
        >>> tnp.einsum("{in},{in,out}->{out}", x, w).named_shape == {"batch": 2, "out": 3}
        True
    """
    return _einsum(spec, operands, precision, preferred_element_type)


def _einsum(
    spec: str,
    operands: Sequence[Any],
    precision: Any,
    preferred_element_type: Any,
    labels: Sequence[str] | None = None,
    where: str | None = None,
) -> Any:
    """``einsum``; ``labels`` and ``where`` name the operands and the call in messages (``tnp.dot``)."""
    key = _layout_key(spec, operands)
    planned = _PLANS.get(key) if key is not None else None
    if planned is not None:  # checked before for these layouts: the subscripts and the result's axes
        subscripts, out_axes, named = planned
        arrays = [v.data for v in operands]
        if SORTED_AUX.get(out_axes) is None and not any(isinstance(a, Tracer) for a in arrays):
            subscripts, out_axes = _name_ordered(subscripts, out_axes)  # a concrete result: in name order
        return wrap(_contract(subscripts, arrays, precision, preferred_element_type, named, spec, where), out_axes)
    parsed = parse_einsum(spec)
    operation = where or f"tnp.einsum({spec!r})"
    labels = list(labels) if labels is not None else [f"operand {i}" for i in range(len(operands))]
    if len(operands) != len(parsed.inputs):
        einsum_result(parsed, [{}] * len(operands), [()] * len(operands), operation=where)  # the count error
    values = [
        v if isinstance(v, NamedArray) else as_mapped(v, op.names, operation=operation)
        for v, op in zip(operands, parsed.inputs, strict=True)
    ]
    result = einsum_result(
        parsed, [v.named_shape for v in values], [v.shape for v in values], operands=labels, operation=where
    )
    reduced = set(result.contracted) | set(result.summed)
    mapped = {n for v in values for n, _ in v.mapped}
    # A kept axis mapped in one operand is mapped in the result: index it where another holds it as a dim.
    kept_mapped = {n for n in result.named_shape if n in mapped}
    values = [index_mapped(v, kept_mapped) for v in values]
    # A reduced axis must be a dim of every operand that has it, so the dot_general contracts it.
    values = [gather(v, [n for n, _ in v.mapped if n in reduced], operation=operation) for v in values]
    # The result's dims: the axes every operand holds (in the first operand's order), then the others in
    # first-seen order; for two operands that is the order ``lax.dot_general`` produces (no transpose).
    every = [n for n in values[0].axes if all(n in v.axes for v in values[1:])] if values else []
    first_seen = every + [n for n in dict.fromkeys(n for v in values for n in v.axes) if n not in every]
    in_data = dataclasses.replace(
        result, named_shape={n: result.named_shape[n] for n in first_seen if n in result.named_shape}
    )
    subscripts, out_axes = positional_einsum(parsed, [v.axes for v in values], in_data)
    named = (tuple(v.axes for v in values), tuple(result.named_shape))
    if key is not None:
        if len(_PLANS) > _CACHE_SIZE:
            _PLANS.clear()
        _PLANS[key] = (subscripts, out_axes, named)
    arrays = [v.data for v in values]
    if any(isinstance(v, NamedArray) for v in operands) and not any(isinstance(a, Tracer) for a in arrays):
        subscripts, out_axes = _name_ordered(subscripts, out_axes)  # a concrete result: in name order
    data = _contract(subscripts, arrays, precision, preferred_element_type, named, spec, where)
    if not any(isinstance(v, NamedArray) for v in operands):
        return data
    sizes = {n: s for v in values for n, s in v.mapped}
    return wrap(data, out_axes, tuple((n, sizes[n]) for n in result.named_shape if n in kept_mapped))


_PLANS: dict[Any, tuple[str, tuple[str, ...], Named]] = {}
_CACHE_SIZE = 4096


@functools.lru_cache(maxsize=4096)
def _name_ordered(subscripts: str, out_axes: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """The subscripts with the result's named dims in name order (the contraction lays them out so, as one
    program), and those axes: a concrete result's layout (``wrap``)."""
    order = canonical_order(out_axes) if len(out_axes) > 1 else None
    if order is None:
        return subscripts, out_axes
    inputs, out = subscripts.split("->")
    lead = len(out) - len(out_axes)
    return f"{inputs}->{out[:lead]}{''.join(out[lead + p] for p in order[1])}", order[0]


def _layout_key(spec: str, operands: Sequence[Any]) -> tuple[Any, ...] | None:
    """What an einsum's checks and plan depend on when every operand is a NamedArray with no mapped axes: the
    spec and each operand's axes and shape (its messages name the operands, but a cached plan passed them);
    ``None`` otherwise (planned per call)."""
    key: list[Any] = [spec]
    for v in operands:
        if type(v) is not NamedArray or v.mapped:
            return None
        key.append((v.axes, v.data.shape))
    return tuple(key)


def _contract(
    subscripts: str,
    arrays: Sequence[Any],
    precision: Any,
    preferred_element_type: Any,
    named: Named,
    spec: str,
    where: str | None,
) -> Any:
    """Two operands off an Explicit mesh: ``_pair`` under one cached jit; else ``jnp.einsum``, pair by pair
    along opt_einsum's path, each step with its own Explicit-mesh sharding. On an Explicit mesh the whole
    contraction's result is checked first (``contraction_sharding``: two of its named axes on one mesh axis
    raise ``AxisResourceConflict``, as the checker does for the call); ``named``: the operands' named axes and
    the result's, ``spec`` and ``where`` name the call."""
    arrays = [a if isinstance(a, jax.Array) else jnp.asarray(a) for a in arrays]
    explicit = explicit_mesh(arrays)
    if not explicit and len(arrays) == 2:
        try:
            pair = _pair_jit(subscripts, precision, preferred_element_type)
        except TypeError:  # an unhashable precision: traced in place
            return _pair(subscripts, precision, preferred_element_type, *arrays)
        return pair(*arrays)
    operation = where or f"tnp.einsum({spec!r})"
    out_sharding = contraction_sharding(subscripts, arrays, named, operation) if explicit else None
    if out_sharding is None or len(arrays) <= 2:
        return jnp.einsum(
            subscripts,
            *arrays,
            precision=precision,
            preferred_element_type=preferred_element_type,
            out_sharding=out_sharding,
        )
    _, info = opt_einsum.contract_path(subscripts, *[a.shape for a in arrays], shapes=True)
    for indices, _, step, *_ in info.contraction_list:
        picked = [arrays.pop(i) for i in indices]  # opt_einsum's order: `step` names them in pop order
        arrays.append(
            jnp.einsum(
                step,
                *picked,
                precision=precision,
                preferred_element_type=preferred_element_type,
                out_sharding=contraction_sharding(step, picked),
            )
        )
    return arrays[0]


@functools.lru_cache(maxsize=4096)
def _pair_jit(subscripts: str, precision: Any, preferred_element_type: Any) -> Any:
    """``_pair`` as one cached ``jax.jit`` per spec (not inlined, as ``jnp.einsum``'s): under ``jax.grad``
    JAX differentiates and transposes its jaxpr once per spec and shapes, not each contraction anew (a
    transformer step's ``value_and_grad`` traced in 1.33x jnp's time with each ``dot_general`` emitted in
    place, 0.81x so); the compiled program is the same (XLA inlines the call)."""
    return jax.jit(functools.partial(_pair, subscripts, precision, preferred_element_type))


def _pair(subscripts: str, precision: Any, preferred_element_type: Any, lhs: Any, rhs: Any) -> Any:
    """Two operands: one ``lax.dot_general`` (``_pair_plan``) and a transpose when needed, else ``jnp.einsum``."""
    plan = _pair_plan(subscripts)
    if plan is not None and lhs.dtype == rhs.dtype and jnp.issubdtype(lhs.dtype, jnp.number):
        dimensions, perm = plan
        out = jax.lax.dot_general(
            lhs, rhs, dimensions, precision=precision, preferred_element_type=preferred_element_type
        )
        return out if perm is None else jax.lax.transpose(out, perm)
    return jnp.einsum(subscripts, lhs, rhs, precision=precision, preferred_element_type=preferred_element_type)


@functools.lru_cache(maxsize=4096)
def _pair_plan(subscripts: str) -> Any:
    """``jnp.einsum(subscripts, lhs, rhs)`` as one ``dot_general`` and a transpose, when it is one.

    Returns (``dot_general``'s dimension numbers, the transpose to the output order or ``None``), or ``None``
    when a letter only one operand has is not in the output (``jnp.einsum`` sums it first). The algebra has
    already checked the spec (no diagonals, one size per letter). Tracing ``jnp.einsum`` (its path search
    and an inner ``jit``) costs ~15x the ``dot_general`` it emits.
    """
    terms, out = subscripts.split("->")
    lhs, rhs = terms.split(",")
    if (set(lhs) ^ set(rhs)) - set(out):
        return None
    batch = [c for c in lhs if c in rhs and c in out]
    contract = [c for c in lhs if c in rhs and c not in out]
    dimensions = (
        (tuple(lhs.index(c) for c in contract), tuple(rhs.index(c) for c in contract)),
        (tuple(lhs.index(c) for c in batch), tuple(rhs.index(c) for c in batch)),
    )
    produced = batch + [c for c in lhs if c not in rhs] + [c for c in rhs if c not in lhs]
    perm = tuple(produced.index(c) for c in out)
    return dimensions, (None if perm == tuple(range(len(perm))) else perm)


def explicit_mesh(arrays: Sequence[Any]) -> bool:
    """Whether an operand lives on a mesh with Explicit axes (its type says so, under ``jax.set_mesh`` or not),
    or the current mesh has them."""
    meshes = [getattr(getattr(jax.typeof(a), "sharding", None), "mesh", None) for a in arrays]
    meshes.append(jax.sharding.get_abstract_mesh())
    return any(m is not None and not m.empty and AxisType.Explicit in m.axis_types for m in meshes)


def dot(
    x: Any,
    y: Any,
    *,
    axis: str | Sequence[str] | None = None,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """``axis=None``: ``jnp.dot`` of the positional dims, per element of the named axes (broadcast by name).

    ``axis=name`` or a tuple of names: contract those named axes (one ``dot_general``); the positional dims
    of ``x`` then ``y`` are kept, as ``lax.pdot`` did without positional contraction.

    Args:
        x: a NamedArray.
        y: a NamedArray.
        axis: the axis (or axes) to contract; ``None``: every axis the two share.
        precision: ``lax.dot_general``'s precision.
        preferred_element_type: ``lax.dot_general``'s accumulation dtype.

    Returns:
        The contraction over ``axis``; the other axes broadcast by name.

    Raises:
        NamedShapeError: an axis to contract that one operand lacks, or one axis of two sizes.

    Examples:
        >>> x = tx.named(jnp.ones((2, 4)), ["batch", "in"])
        >>> w = tx.named(jnp.ones((4, 3)), ["in", "out"])
        >>> tnp.dot(x, w, axis="in").named_shape == {"batch": 2, "out": 3}
        True
    """
    if axis is None and not isinstance(x, NamedArray) and not isinstance(y, NamedArray):
        return jnp.dot(x, y, precision=precision, preferred_element_type=preferred_element_type)
    nx, ny = (v.ndim if isinstance(v, NamedArray) else jnp.ndim(v) for v in (x, y))
    where = dot_operation("x", "y", axis)
    spec = dot_spec(nx, ny, axis)
    if spec is None:  # axis=None and a scalar positional part: the elementwise product
        return apply_elementwise(jnp.multiply, (x, y), operation=where, operands=("x", "y"))
    return _einsum(spec, (x, y), precision, preferred_element_type, labels=("x", "y"), where=where)
