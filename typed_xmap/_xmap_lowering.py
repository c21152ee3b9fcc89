"""How one xmap call is traced: each named axis becomes a ``jax.vmap`` level, placed on the mesh.

For every named axis, outermost first, one ``vmap(axis_name=name, spmd_axis_name=its mesh axes)``;
``in_axes``/``out_axes`` of each level follow from the spec leaves (a listed axis an output lacks is
broadcast by ``vmap``; an unlisted axis it carries is our ``NamedShapeError``). On a mesh, inputs and
outputs get sharding constraints at their named dims, so ``jit`` partitions the program (GSPMD/Shardy).
Explicit mesh axes are made Auto for the body (what ``jax.sharding.auto_axes`` does) and results are
resharded back, since ``vmap`` collectives with ``spmd_axis_name`` need Auto axes in jax 0.10.2.
A serial-loop axis is a ``lax.scan`` over chunks, each chunk vmapped (see ``_loop_level``).

Everything here runs while tracing; ``jit`` caches the result per argument shapes and structure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec
from jax.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_map, tree_unflatten

from ._algebra import ErrorKind, AxisMap
from ._algebra import NamedShapeError, UnboundAxisError
from ._mesh import abstract_mesh_scope, explicit_axes, same_mesh
from ._named_array import NamedArray, wrap
from ._algebra import SerialLoop, check_conflicts, check_divisible
from ._xmap_checks import (
    check_in_scope,
    check_intermediates,
    check_output_conflicts,
    may_conflict,
)
from ._xmap_frames import Frame, active_frames, carries, current_trace
from ._xmap_specs import Leaf, SpecTree, flatten_prefix, infer_sizes, match_inputs

__all__ = ["Config", "trace_xmap"]


@dataclass(frozen=True)
class Config:
    """What ``xmap(...)`` was given, validated."""

    fun: Callable[..., Any]
    body: Callable[..., Any]  # ``fun``, or ``tx.typed(fun)`` for NamedArray-annotated bodies
    typed: tuple[bool, ...] | None  # per positional parameter: annotated NamedArray[...]? (None: untyped body)
    name: str
    in_spec: SpecTree | None
    out_spec: SpecTree
    axis_sizes: Mapping[str, int]
    resources: Mapping[str, tuple[Any, ...]]  # strings may still name serial_loop contexts


def _is_named(obj: Any) -> bool:
    return isinstance(obj, NamedArray)


def _shape(value: Any) -> tuple[int, ...]:
    shape = getattr(value, "shape", None)
    return tuple(shape) if shape is not None else tuple(np.shape(value))


def _entry(assigned: Sequence[str]) -> Any:
    return None if not assigned else assigned[0] if len(assigned) == 1 else tuple(assigned)


class _Call:
    """The state of tracing one xmap call."""

    def __init__(self, config: Config, mesh: Any, resources: Mapping[str, tuple[Any, ...]], args: tuple[Any, ...]):
        self.config = config
        self.mesh = mesh
        self.resources = dict(resources)
        self.arguments = args
        self.leaves: list[Leaf] = match_inputs(config.in_spec, args)
        flat, self.treedef = tree_flatten(args, is_leaf=_is_named)
        self.data = [v.data if isinstance(v, NamedArray) else v for v in flat]
        self.shapes = [_shape(d) for d in self.data]
        self.names = self._defined_names()
        self.outer = list(active_frames())
        self._check_shadowing()
        self.sizes = infer_sizes(self.leaves, self.shapes, config.axis_sizes, self.names)
        self.mesh_shape = dict(mesh.shape) if mesh is not None else None
        check_in_scope(self.resources, self.mesh_shape)
        check_divisible(self.sizes, self.resources, self.mesh_shape or {})
        self.all_resources = {n: r for f in self.outer for n, r in f.resources.items()}
        self.all_resources.update(self.resources)
        self.loop_axis = self._loop_axis()
        self.frame = Frame(tuple(self.names), self.sizes, self.resources, mesh)
        self.carried: dict[tuple[int, int], set[str]] = {}
        self.out_paths: dict[tuple[int, int], str] = {}

    # -- validation ----------------------------------------------------------------------------
    def _defined_names(self) -> list[str]:
        config = self.config
        seen: dict[str, None] = {}
        if config.in_spec is not None:
            seen.update(dict.fromkeys(config.in_spec.names))
        for leaf in self.leaves:  # NamedArray arguments define their own axes
            seen.update(dict.fromkeys(leaf.names))
        seen.update(dict.fromkeys(config.axis_sizes))
        names = list(seen)
        _check_defined(config.out_spec.names, names, "out_axes")
        _check_defined(list(config.resources), names, "axis_resources")
        return names

    def _check_shadowing(self) -> None:
        for frame in self.outer:
            shadowed = [n for n in self.names if n in frame.names]
            if shadowed:
                raise NamedShapeError(
                    f"xmap of {self.config.name} reuses axis {shadowed[0]!r}, which an enclosing xmap already "
                    f"maps; an inner xmap may use outer axes in collectives but not define them again. Fix: "
                    f"rename the inner axis (e.g. {shadowed[0]!r} -> {shadowed[0] + '_inner'!r})",
                    kind=ErrorKind.AXIS_MISSING,
                )
        if self.outer and not same_mesh(self.mesh, self.outer[-1].mesh):
            raise NamedShapeError(
                f"xmap of {self.config.name} runs inside another xmap but sees a different mesh; changing the "
                f"physical mesh is not allowed inside xmap. Fix: set the mesh once, around the outer call",
                kind=ErrorKind.INVALID_ARGUMENT,
            )

    def _loop_axis(self) -> str | None:
        loops = []
        for axis, assigned in self.resources.items():
            kinds = [isinstance(r, SerialLoop) for r in assigned]
            if any(kinds):
                if sum(kinds) > 1 or not kinds[-1]:
                    raise NotImplementedError(
                        f"axis_resources[{axis!r}] = {assigned!r}: a serial loop must be the last resource of "
                        f"an axis, and an axis has at most one loop. Fix: write ({', '.join(repr(r) for r in assigned if not isinstance(r, SerialLoop))}, SerialLoop(n))"
                    )
                loops.append(axis)
        if len(loops) > 1:
            raise NotImplementedError(
                f"axes {loops[0]!r} and {loops[1]!r} both have serial-loop resources; only one loop per xmap is "
                f"supported. Fix: loop over one axis, or nest two xmaps"
            )
        return loops[0] if loops else None

    def mesh_axes(self, name: str) -> tuple[str, ...]:
        if self.mesh is None:
            return ()
        return tuple(r for r in self.resources.get(name, ()) if not isinstance(r, SerialLoop))

    def outer_carried(self, value: Any) -> list[str]:
        return [n for f in self.outer for n in f.names if n in f.traces and carries(value, f.traces[n])]

    # -- the per-element body ------------------------------------------------------------------
    def element(self, *values: Any) -> tuple[Any, ...]:
        config = self.config
        if config.typed is not None:
            named = self._named_leaves()
            values = tuple(
                wrap(v, (), tuple((n, self.sizes[n]) for n in leaf.names)) if wrap_it else v
                for v, leaf, wrap_it in zip(values, self.leaves, named)
            )
        try:
            out = config.body(*tree_unflatten(self.treedef, list(values)))
        except NameError as error:
            raise self._unbound_axis(error) from error
        spec = config.out_spec
        subtrees = flatten_prefix(
            spec, out, f"what {config.name} returns", "give one spec per output, or one spec for all outputs"
        )
        if spec.treedef.num_leaves == 1 and spec.treedef.num_nodes == 1 and not subtrees:
            raise NamedShapeError(f"xmapped function {config.name} returned nothing; xmap needs a return value", kind=ErrorKind.INVALID_ARGUMENT)
        return tuple(self._output(j, sub) for j, sub in enumerate(subtrees))

    def _named_leaves(self) -> list[bool]:
        """Per flattened argument value: does its parameter take NamedArrays (others get plain arrays)?"""
        flags = self.config.typed or ()
        per_argument = [flags[min(i, len(flags) - 1)] if flags else False for i in range(len(self.arguments))]
        return [flag for argument, flag in zip(self.arguments, per_argument)
                for _ in tree_flatten(argument, is_leaf=_is_named)[0]]

    def _unbound_axis(self, error: NameError) -> Exception:
        """JAX's "unbound axis name" (which suggests shard_map) in xmap's words; other NameErrors as they are."""
        match = re.search(r"unbound axis name: (\S+?)\.", str(error))
        if match is None or isinstance(error, UnboundAxisError):
            return error
        name = match.group(1)
        in_scope = [n for f in self.outer for n in f.names] + list(self.names)
        return UnboundAxisError(
            f"a collective in {self.config.name} uses axis {name!r}, which no enclosing xmap or vmap binds "
            f"(axes in scope: {', '.join(repr(n) for n in in_scope) or 'none'}). Fix: use one of those names, or "
            f"map {name!r} with an enclosing xmap (in_axes or axis_sizes)"
        )

    def _output(self, j: int, subtree: Any) -> Any:
        axis_map = self.config.out_spec.leaves[j]
        where = self.config.out_spec.paths[j]
        pairs, treedef = tree_flatten_with_path(subtree, is_leaf=_is_named)
        converted = []
        for i, (path, value) in enumerate(pairs):
            label = f"output{keystr(path)} ({where} = {axis_map})" if keystr(path) else f"the output ({where} = {axis_map})"
            self.out_paths[(j, i)] = label
            if isinstance(value, NamedArray):
                value = self._unname(value, label)
            value = jnp.asarray(value)
            rank = value.ndim
            needed = axis_map.min_rank - len(axis_map.dims)
            if needed > rank:
                raise NamedShapeError(
                    f"{label} puts axis {axis_map.dims[-1][1]!r} at dim {axis_map.dims[-1][0]}, which needs at "
                    f"least {needed} positional dims per element, but the result has {rank} (shape {value.shape}). "
                    f"Fix: use lower positions in out_axes",
                    kind=ErrorKind.POSITIONAL,
                )
            if axis_map.rank is not None and axis_map.rank != rank + len(axis_map.dims):
                raise NamedShapeError(
                    f"{label}: a list spec without '...' asserts rank {axis_map.rank}, but the output has rank "
                    f"{rank + len(axis_map.dims)} ({rank} positional dims per element, shape {value.shape}, plus "
                    f"{len(axis_map.dims)} named). Fix: end the list with ... to allow more dims",
                    kind=ErrorKind.POSITIONAL,
                )
            converted.append(value)
        return tree_unflatten(treedef, converted)

    def _unname(self, value: NamedArray, label: str) -> Any:
        """A NamedArray result as per-element data: its named dims that are xmap axes are indexed here."""
        data = value.data
        outer = {n for f in self.outer for n in f.names}
        for name in reversed(value.axes):
            dim = value.ndim + value.axes.index(name)
            if name not in self.sizes and name not in outer:
                raise NamedShapeError(
                    f"{label}: the returned {value!r} carries axis {name!r}, which is not an axis of this xmap; "
                    f"outputs carry only xmap axes. Fix: reduce {name!r} first (tnp.sum(x, {name!r})), or convert "
                    f"it to a positional dim with tx.positional",
                    kind=ErrorKind.AXIS_MISSING,
                )
            data = jnp.take(data, jax.lax.axis_index(name), axis=dim)
        return data

    # -- levels --------------------------------------------------------------------------------
    def _position(self, dims: Sequence[tuple[int, str]], k: int) -> int | None:
        """Where level ``k``'s axis sits once the levels outside it (``< k``) have taken their dims."""
        order = {n: i for i, n in enumerate(self.names)}
        where = {n: d for d, n in dims}
        name = self.names[k]
        if name not in where:
            return None
        d = where[name]
        return d - sum(1 for n2, d2 in where.items() if order[n2] < k and d2 < d)

    def in_positions(self, k: int) -> tuple[int | None, ...]:
        return tuple(self._position(leaf.dims, k) for leaf in self.leaves)

    def out_positions(self, k: int) -> tuple[int | None, ...]:
        return tuple(self._position(m.dims, k) for m in self.config.out_spec.leaves)

    def level(self, inner: Callable[..., Any], k: int) -> Callable[..., Any]:
        name = self.names[k]
        out_maps = self.config.out_spec.leaves

        def level_body(*values: Any) -> Any:
            trace = current_trace()
            self.frame.traces[name] = trace
            outs = inner(*values)
            for j, sub in enumerate(outs):
                listed = name in out_maps[j].names
                for i, leaf in enumerate(jax.tree_util.tree_leaves(sub)):
                    if not carries(leaf, trace):
                        continue
                    self.carried.setdefault((j, i), set()).add(name)
                    if not listed:
                        raise self.unlisted_error(j, i, name)
            return outs

        if name == self.loop_axis:
            return self._loop_level(level_body, k)
        return jax.vmap(
            level_body,
            in_axes=self.in_positions(k),
            out_axes=self.out_positions(k),
            axis_name=name,
            axis_size=self.sizes[name],
            spmd_axis_name=_entry(self.mesh_axes(name)),
        )

    def unlisted_error(self, j: int, i: int, name: str) -> NamedShapeError:
        label = self.out_paths.get((j, i), self.config.out_spec.paths[j])
        axis_map = self.config.out_spec.leaves[j]
        fixed = list(axis_map.names) + [name]
        return NamedShapeError(
            f"{label} of {self.config.name} carries named axis {name!r}, which its out_axes do not list; an "
            f"output must list every named axis it carries. Fix: list it, e.g. out_axes "
            f"{'[' + ''.join(f'{n!r}, ' for n in fixed) + '...]'}, or reduce it in the body "
            f"(jax.lax.psum(y, {name!r}) or jnp.sum(y, axis={name!r}))",
            kind=ErrorKind.AXIS_MISSING,
        )

    def _loop_level(self, level_body: Callable[..., Any], k: int) -> Callable[..., Any]:
        """A serial-loop axis: ``lax.scan`` over ``n`` chunks, each chunk a vmap over its slice of the axis.

        The axis (size S, mesh part m, n loop steps) is viewed as (m, n, S/(m n)), so each step
        processes a device-local chunk; outputs are put back in the same order.
        """
        name = self.names[k]
        size = self.sizes[name]
        loop = self.resources[name][-1]
        steps = loop.length
        mesh_part = 1
        for axis in self.mesh_axes(name):
            mesh_part *= self.mesh_shape[axis]  # type: ignore[index]
        chunk = size // (mesh_part * steps)
        in_pos, out_pos = self.in_positions(k), self.out_positions(k)
        spmd = _entry(self.mesh_axes(name))

        chunk_body = jax.vmap(  # axis_size: the axis may come from axis_sizes alone, mapping no input
            level_body, in_axes=in_pos, out_axes=out_pos, spmd_axis_name=spmd, axis_size=mesh_part * chunk
        )

        def run(*values: Any) -> Any:
            mapped: list[Any] = []
            fixed: list[Any] = []
            for v, p in zip(values, in_pos):
                if p is None:
                    fixed.append(v)
                    mapped.append(None)
                    continue
                v = jnp.moveaxis(v, p, 0)
                v = v.reshape((mesh_part, steps, chunk) + v.shape[1:]).swapaxes(0, 1)
                mapped.append(v.reshape((steps, mesh_part * chunk) + v.shape[3:]))

            def step(carry: Any, xs: Any) -> Any:
                it = iter(xs)
                fixed_it = iter(fixed)
                args = [next(fixed_it) if p is None else jnp.moveaxis(next(it), 0, p) for p in in_pos]
                return carry, chunk_body(*args)

            _, stacked = jax.lax.scan(step, None, [m for m in mapped if m is not None], length=steps)
            return tuple(
                _unloop(sub, p, steps, mesh_part, chunk) for sub, p in zip(stacked, out_pos)
            )

        return run

    # -- the whole call ------------------------------------------------------------------------
    def nest(self) -> Callable[..., Any]:
        fn: Callable[..., Any] = self.element
        for k in reversed(range(len(self.names))):
            fn = self.level(fn, k)
        return fn

    def in_spec(self, leaf: Leaf, rank: int) -> PartitionSpec:
        entries: list[Any] = [None] * rank
        for dim, name in leaf.dims:
            entries[dim] = _entry(self.mesh_axes(name))
        return PartitionSpec(*entries)

    def out_spec(self, axis_map: AxisMap, rank: int) -> PartitionSpec:
        entries: list[Any] = [None] * rank
        for pos, name in axis_map.dims:
            entries[pos] = _entry(self.mesh_axes(name))
        return PartitionSpec(*entries)

    def placed(self, spec: PartitionSpec) -> Any:
        """A bare spec under ``jax.set_mesh``; a ``NamedSharding`` on the legacy ``with mesh:`` mesh."""
        return NamedSharding(self.mesh, spec) if isinstance(self.mesh, Mesh) else spec

    def check_static_conflicts(self) -> None:
        for leaf, value in zip(self.leaves, self.data):
            check_conflicts(
                self.outer_carried(value) + list(leaf.names), self.all_resources,
                f"argument {leaf.describe()} of {self.config.name}",
            )

    def check_intermediates(self) -> None:
        scope = [n for f in self.outer for n in f.names] + self.names
        if not may_conflict(scope, self.all_resources):
            return
        avals, inputs = [], []
        for leaf, value, shape in zip(self.leaves, self.data, self.shapes):
            named_dims = {d for d, _ in leaf.dims}
            elem = tuple(s for d, s in enumerate(shape) if d not in named_dims)
            avals.append(jax.ShapeDtypeStruct(elem, jnp.result_type(value)))
            inputs.append(frozenset(leaf.names) | frozenset(self.outer_carried(value)))
        sizes = {n: s for f in self.outer for n, s in f.sizes.items()}
        sizes.update(self.sizes)
        element = self.element
        if self.loop_axis is not None:  # the body cannot name the loop axis; leave it out of scope
            sizes.pop(self.loop_axis)
        jaxpr = jax.make_jaxpr(element, axis_env=list(sizes.items()))(*avals)
        check_intermediates(jaxpr, inputs, frozenset(scope), self.all_resources)

    def check_output_conflicts(self, outs: Sequence[Any]) -> None:
        for j, sub in enumerate(outs):
            listed = self.config.out_spec.leaves[j].names
            for i, _ in enumerate(jax.tree_util.tree_leaves(sub)):
                carried = sorted(self.carried.get((j, i), set()))
                label = self.out_paths.get((j, i), self.config.out_spec.paths[j])
                check_output_conflicts(listed, carried, self.all_resources, f"{label} of {self.config.name}")

    def run(self, inline: bool) -> Any:
        self.check_static_conflicts()
        stack = active_frames()
        stack.append(self.frame)
        try:
            self.check_intermediates()
            if self.mesh is None or inline:
                outs = self.run_nest(constrain=self.mesh is not None)
            else:
                outs = self.run_on_mesh()
        except NameError as error:  # a collective over the loop axis, which no vmap level binds
            loop = self.loop_axis
            if loop is None or repr(loop) not in str(error) and f": {loop}." not in str(error):
                raise
            raise NamedShapeError(
                f"axis {loop!r} is assigned the serial loop {self.resources[loop][-1]!r}, so it cannot be "
                f"referenced inside the xmapped function (collectives, axis_index) by name. Fix: assign {loop!r} "
                f"to a mesh axis, or loop over an axis that the body does not name",
                kind=ErrorKind.INVALID_ARGUMENT,
            ) from None
        except ValueError as error:  # vmap's own out_axes check, should ours ever miss a carried axis
            if isinstance(error, NamedShapeError) or "out_axes" not in str(error) or "batched" not in str(error):
                raise
            raise NamedShapeError(
                f"an output of {self.config.name} carries a named axis that its out_axes do not list ({error}). "
                f"Fix: list every named axis an output carries in its out_axes, or reduce it in the body",
                kind=ErrorKind.AXIS_MISSING,
            ) from None
        finally:
            stack.pop()
        return self.config.out_spec.treedef.unflatten(outs)

    def run_nest(self, *, constrain: bool) -> tuple[Any, ...]:
        data = self.data
        if constrain and self.resources:
            data = [
                jax.lax.with_sharding_constraint(v, self.placed(self.in_spec(leaf, len(s))))
                if any(self.mesh_axes(n) for n in leaf.names) else v
                for v, leaf, s in zip(data, self.leaves, self.shapes)
            ]
        outs = self.nest()(*data)
        self.check_output_conflicts(outs)
        if constrain and self.resources:
            outs = tuple(
                tree_map(lambda o, m=m: jax.lax.with_sharding_constraint(o, self.placed(self.out_spec(m, o.ndim))), sub)
                for sub, m in zip(outs, self.config.out_spec.leaves)
            )
        return tuple(outs)

    def run_on_mesh(self) -> tuple[Any, ...]:
        with abstract_mesh_scope(self.mesh):
            current = jax.sharding.get_abstract_mesh()
            explicit = explicit_axes(current)
            if not explicit:
                return self.run_nest(constrain=True)
            # Values without a mesh in their type (numpy inputs) are typed on the mesh first, so that
            # reverse mode hands their cotangents back on the Explicit mesh.
            self.data = [
                _on_mesh(v, self.in_spec(leaf, len(shape)))
                for v, leaf, shape in zip(self.data, self.leaves, self.shapes)
            ]
            auto = current.update_axis_types({a: AxisType.Auto for a in explicit})
            with jax.sharding.use_abstract_mesh(auto):
                self.data = [_on_mesh(v, PartitionSpec(), force=True) for v in self.data]
                outs = self.run_nest(constrain=True)
            return tuple(
                tree_map(lambda o, m=m: jax.sharding.reshard(o, self.out_spec(m, o.ndim)), sub)
                for sub, m in zip(outs, self.config.out_spec.leaves)
            )


def _on_mesh(value: Any, spec: PartitionSpec, *, force: bool = False) -> Any:
    """``value`` typed on the context mesh with ``spec`` (if it has no mesh yet, or ``force``)."""
    try:
        typ = jax.typeof(value)
    except TypeError:
        return value
    sharding = getattr(typ, "sharding", None)
    if sharding is None or not hasattr(typ, "shape"):
        return value
    if force or sharding.mesh.empty:
        return jax.sharding.reshard(value, spec)
    return value


def _unloop(sub: Any, pos: int | None, steps: int, mesh_part: int, chunk: int) -> Any:
    """Undo the loop's chunking for one output subtree: stacked (steps, ...) back to the axis at ``pos``."""

    def one(value: Any) -> Any:
        if pos is None:
            return value[0]  # not carrying the loop axis: the same in every step
        value = jnp.moveaxis(value, pos + 1, 1)  # (steps, mesh_part * chunk, ...)
        rest = value.shape[2:]
        value = value.reshape((steps, mesh_part, chunk) + rest).swapaxes(0, 1)
        value = value.reshape((mesh_part * steps * chunk,) + rest)
        return jnp.moveaxis(value, 0, pos)

    return tree_map(one, sub)


def _check_defined(names: Sequence[str], defined: Sequence[str], what: str) -> None:
    missing = [n for n in names if n not in defined]
    if missing:
        raise NamedShapeError(
            f"{what} names axis {', '.join(repr(n) for n in missing)}, which neither in_axes (or the NamedArray "
            f"arguments) nor axis_sizes defines. Fix: map it in in_axes, or give its size in axis_sizes",
            kind=ErrorKind.AXIS_MISSING,
        )


def trace_xmap(config: Config, mesh: Any, resources: Mapping[str, tuple[Any, ...]], args: tuple[Any, ...], *, inline: bool = False) -> Any:
    """Trace one xmap call (inside ``jit``, or inline inside an enclosing xmap)."""
    return _Call(config, mesh, resources, args).run(inline)
