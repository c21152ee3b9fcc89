"""``xmap``'s ``in_axes``/``out_axes`` trees: parsing, matching them as tree prefixes, axis sizes.

``in_axes`` is a tree prefix of the argument tuple and ``out_axes`` of the return value; each spec leaf
(an ``AxisMap``, see ``_axis_map``) covers the whole subtree under it. Matching yields one ``Leaf`` per
array, with the dims that hold named axes and the paths that error messages quote
(``in_axes[1]['w']``, ``args[1]['w']``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from jax.tree_util import keystr, tree_flatten, tree_flatten_with_path

from .._algebra import AxisMap, ErrorKind, NamedShapeError, check_fits, is_axis_map_leaf, parse_axis_map
from .._value._named_array import NamedArray

__all__ = [
    "Leaf",
    "SpecTree",
    "flatten_prefix",
    "infer_sizes",
    "match_inputs",
    "named_array_specs",
    "parse_spec_tree",
]


@dataclass(frozen=True)
class SpecTree:
    """A parsed ``in_axes`` or ``out_axes``: the container structure and one ``AxisMap`` per leaf."""

    treedef: Any
    leaves: tuple[AxisMap, ...]
    paths: tuple[str, ...]  # "in_axes[0]['w']"
    kind: str  # "in_axes" / "out_axes"

    @property
    def names(self) -> list[str]:
        seen: dict[str, None] = {}
        for leaf in self.leaves:
            seen.update(dict.fromkeys(leaf.names))
        return list(seen)


def _spec_or_none(obj: Any) -> bool:
    return obj is None or is_axis_map_leaf(obj)


def parse_spec_tree(spec: Any, kind: str) -> SpecTree:
    """Validate every leaf of ``spec``.

    For ``in_axes``, a top-level list of specs counts as a tuple, as in the original (the arguments always
    come as a tuple); ``out_axes`` keep their container, to match what the function returns.
    """
    if kind == "in_axes" and isinstance(spec, list) and not is_axis_map_leaf(spec):
        spec = tuple(spec)
    pairs, treedef = tree_flatten_with_path(spec, is_leaf=_spec_or_none)
    leaves, paths = [], []
    for path, leaf in pairs:
        where = kind + keystr(path)
        if leaf is None:
            raise NamedShapeError(
                f"{where} is None, which xmap does not accept as a spec. Fix: write {{}} for a value without "
                f"named axes",
                kind=ErrorKind.INVALID_ARGUMENT,
            )
        leaves.append(parse_axis_map(leaf, where=where))
        paths.append(where)
    return SpecTree(treedef, tuple(leaves), tuple(paths), kind)


@dataclass(frozen=True)
class Leaf:
    """One array argument: where its named axes sit among the dims of the array xmap receives."""

    dims: tuple[tuple[int, str], ...]  # data dim -> axis name, ascending by dim
    spec: AxisMap | None  # the in_axes leaf (None when the spec came from a NamedArray alone)
    where: str  # "in_axes[1]"
    arg: str  # "args[1]['w']"
    named_axes: tuple[str, ...] = ()  # a NamedArray argument's own named axes (its trailing dims)
    whole: bool = False  # a NamedArray whose in_axes leaf maps nothing ({}): the body gets it whole

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for _, name in self.dims)

    def describe(self) -> str:
        if self.spec is None:
            return f"{self.arg} (a NamedArray with axes {self.named_axes})"
        return f"{self.arg} ({self.where} = {self.spec})"


def _is_named(obj: Any) -> bool:
    return isinstance(obj, NamedArray)


def _array_shape(value: Any) -> tuple[int, ...]:
    shape = getattr(value, "shape", None)
    return tuple(shape) if shape is not None else tuple(np.shape(value))


def match_inputs(spec: SpecTree | None, args: tuple[Any, ...]) -> list[Leaf]:
    """One ``Leaf`` per array of ``args`` (a NamedArray counts as one), in ``tree_flatten`` order."""
    if spec is None:
        return named_array_specs(args)
    subtrees = flatten_prefix(
        spec,
        args,
        "the argument tuple",
        "give one spec per argument, e.g. in_axes=(['batch', ...], {}), or one spec for all of them",
    )
    leaves: list[Leaf] = []
    for axis_map, where, subtree, index in zip(
        spec.leaves, spec.paths, subtrees, _prefix_paths(spec, args), strict=False
    ):
        for path, value in tree_flatten_with_path(subtree, is_leaf=_is_named)[0]:
            arg = "args" + index + keystr(path)
            shape = _array_shape(value.data if isinstance(value, NamedArray) else value)
            own: tuple[str, ...] = ()
            if isinstance(value, NamedArray):
                own = value.axes
                shape = shape[: len(shape) - len(own)]
            check_fits(axis_map, shape, where=f"{where} (for {arg})")
            clash = [n for n in axis_map.names if n in own]
            if clash:
                raise NamedShapeError(
                    f"{where} = {axis_map} names axis {clash[0]!r} for {arg}, a NamedArray that already carries "
                    f"it. Fix: drop {clash[0]!r} from {where}; a NamedArray's own axes are mapped by name",
                    kind=ErrorKind.AXIS_MISSING,
                )
            if isinstance(value, NamedArray) and not axis_map.dims:
                # in_axes maps nothing of this NamedArray ({} or [...]): the body gets it whole, unmapped
                leaves.append(Leaf((), axis_map, where, arg, own, whole=True))
                continue
            rank = len(shape)
            dims = axis_map.dims + tuple((rank + i, name) for i, name in enumerate(own))
            leaves.append(Leaf(dims, axis_map, where, arg, own))
    return leaves


def flatten_prefix(spec: SpecTree, tree: Any, what: str, fix: str) -> list[Any]:
    """The subtree of ``tree`` under each leaf of ``spec``, or an error naming both structures."""
    try:
        return list(spec.treedef.flatten_up_to(tree))
    except (ValueError, TypeError) as error:
        raise NamedShapeError(
            f"{spec.kind} must be a tree prefix of {what}, but {spec.kind} has structure {spec.treedef} and the "
            f"value {_structure(tree)} ({error}). Fix: {fix}",
            kind=ErrorKind.INVALID_ARGUMENT,
        ) from None


def _prefix_paths(spec: SpecTree, args: tuple[Any, ...]) -> list[str]:
    """The path of each subtree that a spec leaf covers (``"[1]"``; ``""`` for a single spec)."""
    marker = spec.treedef.unflatten(range(len(spec.leaves)))
    pairs = tree_flatten_with_path(marker)[0]
    return [keystr(path) for path, _ in pairs]


def _structure(args: Any) -> str:
    return str(tree_flatten(args, is_leaf=_is_named)[1])


def _kind(value: Any) -> str:
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"a positional array of shape {tuple(value.shape)}"
    return f"a {type(value).__name__}"


def named_array_specs(args: tuple[Any, ...]) -> list[Leaf]:
    """``in_axes`` omitted: every argument must be a NamedArray (or a pytree of them)."""
    leaves: list[Leaf] = []
    for path, value in tree_flatten_with_path(args, is_leaf=_is_named)[0]:
        arg = "args" + keystr(path)
        if not isinstance(value, NamedArray):
            raise NamedShapeError(
                f"xmap was called without in_axes, so every argument must be a NamedArray, but {arg} is "
                f"{_kind(value)}. Fix: pass in_axes=..., or name it with tx.named(array, axes)",
                kind=ErrorKind.INVALID_ARGUMENT,
            )
        rank = value.ndim
        dims = tuple((rank + i, name) for i, name in enumerate(value.axes))
        leaves.append(Leaf(dims, None, "in_axes", arg, value.axes))
    return leaves


def infer_sizes(
    leaves: Sequence[Leaf],
    shapes: Sequence[tuple[int, ...]],
    axis_sizes: Mapping[str, int],
    names: Iterable[str],
) -> dict[str, int]:
    """The size of every axis in ``names``: from ``axis_sizes``, then from the arguments; all must agree."""
    sizes: dict[str, int] = {}
    source: dict[str, str] = {}
    for name, size in axis_sizes.items():
        sizes[name] = int(size)
        source[name] = f"axis_sizes[{name!r}]"
    for leaf, shape in zip(leaves, shapes, strict=False):
        for dim, name in leaf.dims:
            size = shape[dim]
            known = sizes.get(name)
            if known is None:
                sizes[name] = size
                source[name] = f"{leaf.describe()}, dim {dim}"
            elif known != size:
                raise NamedShapeError(
                    f"axis {name!r} has size {known} from {source[name]}, but size {size} in "
                    f"{leaf.describe()}, dim {dim} (shape {shape}). One axis has one size in an xmap call. "
                    f"Fix: make the sizes agree, or give the two axes different names",
                    kind=ErrorKind.AXIS_SIZE,
                )
    missing = [n for n in names if n not in sizes]
    if missing:
        raise NamedShapeError(
            f"cannot infer the size of axis {', '.join(repr(n) for n in missing)}: no argument maps it (empty "
            f"containers?). Fix: give its size with axis_sizes={{{missing[0]!r}: SIZE}}",
            kind=ErrorKind.AXIS_MISSING,
        )
    return sizes
