"""The traced body: the user's function per element, wrapped in one ``vmap`` level per named axis.

For every named axis, outermost first, one ``vmap(axis_name=name, spmd_axis_name=its mesh axes)``;
``in_axes``/``out_axes`` of each level come from the plan (a listed axis an output lacks is broadcast by
``vmap``; an unlisted axis it carries is our error, raised at the level that sees it). What the levels see
(which axes each output leaf carries) is recorded in an ``Observed`` for the output conflict check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
from jax.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten

from .._algebra import ErrorKind, NamedShapeError, contraction_kernel, unlisted_axis_error
from .._value._frames import Frame, active_frames, carries, current_trace
from .._value._named_array import NamedArray, wrap
from ._jax_errors import unbound_axis_error
from ._loop_level import loop_level
from ._plan import Plan
from ._specs import flatten_prefix

__all__ = ["Observed", "element_function", "nest"]


@dataclass
class Observed:
    """What tracing saw: the xmap axes each output leaf ``(output j, leaf i)`` carries, and its label."""

    carried: dict[tuple[int, int], set[str]] = field(default_factory=dict)
    labels: dict[tuple[int, int], str] = field(default_factory=dict)
    placed: dict[tuple[int, int], tuple[Any, ...]] = field(default_factory=dict)  # by an inner xmap

    def placement(self, j: int, i: int) -> tuple[Any, ...] | None:
        """Where an inner xmap put the per-element value of leaf ``i`` of output ``j`` (its spec entries)."""
        return self.placed.get((j, i))

    def axes(self, j: int, i: int) -> set[str]:
        return self.carried.get((j, i), set())

    def label(self, plan: Plan, j: int, i: int) -> str:
        return self.labels.get((j, i), plan.config.out_spec.paths[j])


def _is_named(obj: Any) -> bool:
    return isinstance(obj, NamedArray)


def _named_leaves(plan: Plan, arguments: tuple[Any, ...]) -> list[bool]:
    """Per flattened argument value: does its parameter take NamedArrays (others get plain arrays)?"""
    flags = plan.config.typed or ()
    per_argument = [flags[min(i, len(flags) - 1)] if flags else False for i in range(len(arguments))]
    return [
        flag
        for argument, flag in zip(arguments, per_argument, strict=False)
        for _ in tree_flatten(argument, is_leaf=_is_named)[0]
    ]


def element_function(
    plan: Plan, body: Callable[..., Any], arguments: tuple[Any, ...], observed: Observed
) -> Callable[..., tuple[Any, ...]]:
    """The function of one element: per-element arrays in, one checked per-element subtree per out_axes leaf."""
    config = plan.config
    named = _named_leaves(plan, arguments) if config.typed is not None else None
    body = streamed_inner_product(plan, body) or body
    wholes = any(leaf.whole for leaf in plan.leaves)

    def element(*values: Any) -> tuple[Any, ...]:
        if wholes:
            values = tuple(
                wrap(v, leaf.named_axes) if leaf.whole else v for v, leaf in zip(values, plan.leaves, strict=False)
            )
        if named is not None:
            values = tuple(
                wrap(v, (), tuple((n, plan.sizes[n]) for n in leaf.names)) if wrap_it and not leaf.whole else v
                for v, leaf, wrap_it in zip(values, plan.leaves, named, strict=False)
            )
        try:
            out = body(*tree_unflatten(plan.treedef, list(values)))
        except NameError as error:
            raise unbound_axis_error(error, plan.scope, config.name) from error
        spec = config.out_spec
        subtrees = flatten_prefix(
            spec, out, f"what {config.name} returns", "give one spec per output, or one spec for all outputs"
        )
        return tuple(_output(plan, observed, j, sub) for j, sub in enumerate(subtrees))

    return element


_INNER_PRODUCTS: dict[Any, bool] = {jnp.dot: False, jnp.inner: False, jnp.vdot: True}  # -> conjugates x


def streamed_inner_product(plan: Plan, body: Callable[..., Any]) -> Callable[..., Any] | None:
    """For a body that is exactly ``jnp.dot``/``jnp.inner``/``jnp.vdot`` of two 1-D vectors carrying the same
    xmap axes, the same inner product as elementwise products and sums, when the algebra's kernel rule says
    so (``contraction_kernel``: a batched inner product of small size streams; a batched ``dot_general`` of
    size 3 runs at ~20% of memory bandwidth on CPU). ``None`` otherwise: the body runs as written.

    Safe by construction: each result element reads its own two vectors (the same named axes on both, so
    ``vmap`` batches them alike and nothing is reused), and the values are those of ``jnp.dot`` (the same
    products, summed in order; ``jnp.vdot`` conjugates its first argument).
    """
    try:
        conjugate = _INNER_PRODUCTS.get(body)
    except TypeError:  # an unhashable callable
        return None
    if conjugate is None or plan.config.typed is not None or len(plan.leaves) != 2 or plan.treedef.num_leaves != 2:
        return None
    (x, y), shapes = plan.leaves, plan.shapes
    if set(x.names) != set(y.names):
        return None
    element = [
        tuple(s for d, s in enumerate(shape) if d not in {d for d, _ in leaf.dims})
        for leaf, shape in zip(plan.leaves, shapes, strict=True)
    ]
    if len(element[0]) != 1 or element[0] != element[1]:
        return None
    if contraction_kernel(element[0][0], batch_only=True) != "streamed":
        return None

    def inner_product(a: Any, b: Any) -> Any:
        a, b = jnp.asarray(a), jnp.asarray(b)
        if not (jnp.issubdtype(a.dtype, jnp.inexact) and jnp.issubdtype(b.dtype, jnp.inexact)):
            return body(a, b)
        if conjugate:
            a = jnp.conj(a)
        total = a[0] * b[0]
        for k in range(1, a.shape[0]):
            total = total + a[k] * b[k]
        return total

    return inner_product


def _output(plan: Plan, observed: Observed, j: int, subtree: Any) -> Any:
    """One out_axes leaf's subtree as per-element arrays, checked against the leaf's positions and rank."""
    axis_map = plan.config.out_spec.leaves[j]
    where = plan.config.out_spec.paths[j]
    pairs, treedef = tree_flatten_with_path(subtree, is_leaf=_is_named)
    converted = []
    for i, (path, value) in enumerate(pairs):
        label = f"output{keystr(path)} ({where} = {axis_map})" if keystr(path) else f"the output ({where} = {axis_map})"
        observed.labels[(j, i)] = label
        frames = active_frames()
        by_inner = frames[-1].placed.get(id(value)) if frames else None
        if by_inner is not None and by_inner[0] is value:
            observed.placed[(j, i)] = by_inner[1]
        array = jnp.asarray(_unname(plan, value, label) if isinstance(value, NamedArray) else value)
        rank = array.ndim
        needed = axis_map.min_rank - len(axis_map.dims)
        if needed > rank:
            raise NamedShapeError(
                f"{label} puts axis {axis_map.dims[-1][1]!r} at dim {axis_map.dims[-1][0]}, which needs at "
                f"least {needed} positional dims per element, but the result has {rank} (shape {array.shape}). "
                f"Fix: use lower positions in out_axes",
                kind=ErrorKind.POSITIONAL,
            )
        if axis_map.rank is not None and axis_map.rank != rank + len(axis_map.dims):
            raise NamedShapeError(
                f"{label}: a list spec without '...' asserts rank {axis_map.rank}, but the output has rank "
                f"{rank + len(axis_map.dims)} ({rank} positional dims per element, shape {array.shape}, plus "
                f"{len(axis_map.dims)} named). Fix: end the list with ... to allow more dims",
                kind=ErrorKind.POSITIONAL,
            )
        converted.append(array)
    return tree_unflatten(treedef, converted)


def _unname(plan: Plan, value: NamedArray, label: str) -> Any:
    """A NamedArray result as per-element data: its named dims that are xmap axes are indexed here."""
    data = value.data
    for name in reversed(value.axes):
        dim = value.ndim + value.axes.index(name)
        if name not in plan.scope:
            raise NamedShapeError(
                f"{label}: the returned {value!r} carries axis {name!r}, which is not an axis of this xmap; "
                f"outputs carry only xmap axes. Fix: reduce {name!r} first (tnp.sum(x, {name!r})), or convert "
                f"it to a positional dim with tx.positional",
                kind=ErrorKind.AXIS_MISSING,
            )
        data = jnp.take(data, jax.lax.axis_index(name), axis=dim)
    return data


def _level(plan: Plan, frame: Frame, observed: Observed, inner: Callable[..., Any], k: int) -> Callable[..., Any]:
    """Level ``k``: ``inner`` vmapped over axis ``plan.names[k]`` (or looped, for the loop axis)."""
    name = plan.names[k]
    out_spec = plan.config.out_spec

    def level_body(*values: Any) -> Any:
        trace = current_trace()
        frame.traces[name] = trace
        outs = inner(*values)
        for j, sub in enumerate(outs):
            listed = out_spec.leaves[j].names
            for i, leaf in enumerate(jax.tree_util.tree_leaves(sub)):
                if not carries(leaf, trace):
                    continue
                observed.carried.setdefault((j, i), set()).add(name)
                if name not in listed:
                    raise unlisted_axis_error(observed.label(plan, j, i), plan.config.name, name, listed)
        return outs

    if name == plan.loop_axis:
        return loop_level(plan, level_body, k)
    return jax.vmap(
        level_body,
        in_axes=plan.in_positions[k],
        out_axes=plan.out_positions[k],
        axis_name=name,
        axis_size=plan.sizes[name],
        spmd_axis_name=plan.spmd_axis_name(name),
    )


def nest(plan: Plan, frame: Frame, observed: Observed, element: Callable[..., Any]) -> Callable[..., Any]:
    """The whole mapped function: ``element`` inside every level, the first axis outermost."""
    fn = element
    for k in reversed(range(len(plan.names))):
        fn = _level(plan, frame, observed, fn, k)
    return fn
