"""xmap's spec leaves: ``['batch', 'feat', ...]``, ``['i', None]`` and ``{0: 'batch'}``.

A leaf maps positional dims of an array to axis names. A list puts names at the leading dims (``None``
skips a dim); without a trailing ``...`` it also asserts the array's exact rank. A dict maps dims to
names and asserts nothing. Used by ``tx.named``/``tx.positional``, ``xmap``'s ``in_axes``/``out_axes`` and
the mypy plugin.

Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._errors import ErrorKind, NamedShapeError
from ._spec import is_axis_name

__all__ = ["AxisMap", "check_axis_name", "check_fits", "format_axis_list", "is_axis_map_leaf", "parse_axis_map"]


@dataclass(frozen=True, slots=True)
class AxisMap:
    """Named axes at positional dims, ascending by dim; ``rank`` is the exact rank a list asserts."""

    dims: tuple[tuple[int, str], ...]
    rank: int | None
    text: str

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for _, name in self.dims)

    @property
    def min_rank(self) -> int:
        """The fewest dims an array mapped by this leaf can have."""
        return self.dims[-1][0] + 1 if self.dims else 0

    def __str__(self) -> str:
        return self.text


def is_axis_map_leaf(obj: Any) -> bool:
    """True for the objects xmap treats as one spec leaf (not a pytree of specs)."""
    if isinstance(obj, dict):
        return all(not isinstance(v, (dict, list, tuple)) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return all(v is None or v is Ellipsis or not isinstance(v, (dict, list, tuple)) for v in obj)
    return False


def format_axis_list(names: Any) -> str:
    """``['a', 'b']`` -> ``"['a', 'b', ...]"``: the list spec that names these axes first."""
    return "[" + "".join(f"{n!r}, " for n in names) + "...]"


def _spec_text(leaf: Any) -> str:
    if isinstance(leaf, (list, tuple)):
        return "[" + ", ".join("..." if v is Ellipsis else repr(v) for v in leaf) + "]"
    return repr(leaf)


def parse_axis_map(leaf: Any, *, where: str = "axes") -> AxisMap:
    """Validate an xmap spec leaf; ``where`` names it in errors (``"in_axes[0]"``)."""
    text = _spec_text(leaf)
    dims: dict[int, str] = {}
    rank: int | None
    if isinstance(leaf, dict):
        for dim, name in leaf.items():
            if not isinstance(dim, int) or isinstance(dim, bool):
                raise NamedShapeError(
                    f"{where} = {text}: dict specs map positional dims (ints) to names, but key {dim!r} is "
                    f"not an int. Fix: write {{0: 'batch'}}, or a list ['batch', ...]",
                    kind=ErrorKind.SYNTAX,
                )
            if dim < 0:
                raise NamedShapeError(
                    f"{where} = {text}: negative dim {dim} for axis {name!r}; xmap specs count dims from "
                    f"the front. Fix: use a non-negative position",
                    kind=ErrorKind.SYNTAX,
                )
            dims[dim] = name
        rank = None
    elif isinstance(leaf, (list, tuple)):
        entries = list(leaf)
        rank = len(entries)
        if entries and entries[-1] is Ellipsis:
            entries.pop()
            rank = None
        for dim, name in enumerate(entries):
            if name is Ellipsis:
                raise NamedShapeError(
                    f"{where} = {text}: '...' may only end a list spec. Fix: move it to the end",
                    kind=ErrorKind.SYNTAX,
                )
            if name is not None:
                dims[dim] = name
    else:
        raise NamedShapeError(
            f"{where} = {text}: a spec is a list of axis names (optionally ending in ...), like "
            f"['batch', ...], or a dict from positional dims to names, like {{0: 'batch'}}; got "
            f"{type(leaf).__name__}. Fix: for a whole argument without named axes, use {{}}",
            kind=ErrorKind.SYNTAX,
        )
    seen: dict[str, int] = {}
    for dim, name in dims.items():
        if name is None:
            raise NamedShapeError(
                f"{where} = {text}: dim {dim} maps to None; in a dict spec every entry names an axis. "
                f"Fix: leave dim {dim} out of the dict (unnamed dims stay positional)",
                kind=ErrorKind.SYNTAX,
            )
        check_axis_name(name, f"{where} = {text}", f" at dim {dim}")
        if name in seen:
            raise NamedShapeError(
                f"{where} = {text}: axis {name!r} is named twice (dims {seen[name]} and {dim}); "
                f"names must be unique within one spec. Fix: give each dim its own name",
                kind=ErrorKind.SYNTAX,
            )
        seen[name] = dim
    return AxisMap(tuple(sorted(dims.items())), rank, text)


def check_axis_name(name: object, where: str, at: str = "") -> None:
    """Raise unless ``name`` is an axis name: a Python identifier, as in ``NamedArray[f32, "batch"]``.

    Any other name (``''``, ``b'a'``, ``1.5``, ``...``) could never match an annotation.
    """
    if not isinstance(name, str):
        raise NamedShapeError(
            f"{where}: axis names must be strings, got {name!r}{at}. Fix: name the axis with a string",
            kind=ErrorKind.SYNTAX,
        )
    if not is_axis_name(name):
        raise NamedShapeError(
            f"{where}: axis names are Python identifiers (as in NamedArray annotations), got {name!r}{at}. "
            f"Fix: name the axis with an identifier, e.g. 'batch'",
            kind=ErrorKind.SYNTAX,
        )


def check_fits(spec: AxisMap, shape: tuple[int | None, ...], *, where: str) -> None:
    """Raise unless ``spec`` can name the dims of an array of ``shape``."""
    rank = len(shape)
    if spec.rank is not None and spec.rank != rank:
        raise NamedShapeError(
            f"{where} = {spec}: a list spec without '...' asserts rank {spec.rank}, but the value has "
            f"rank {rank} (shape {shape}). Fix: end the list with ... to allow more dims",
            kind=ErrorKind.POSITIONAL,
        )
    if spec.min_rank > rank:
        raise NamedShapeError(
            f"{where} = {spec} names dim {spec.min_rank - 1}, so the value needs at least {spec.min_rank} "
            f"positional dims, but it has rank {rank} (shape {shape}). Fix: name dims the value has",
            kind=ErrorKind.POSITIONAL,
        )
