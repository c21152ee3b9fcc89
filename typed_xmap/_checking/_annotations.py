"""``NamedArray[f32, "batch in_features", "n 3"]``: annotation classes that beartype can check.

Each distinct annotation is one cached class whose metaclass ``__instancecheck__`` matches a value's
dtype, named shape and positional dims. Inside a ``@tx.typed`` call every match binds names to sizes
in a per-call memo, so one name has one size across all parameters and the return value.
"""

from __future__ import annotations

import copyreg
import threading
import typing
from collections import OrderedDict
from dataclasses import replace
from functools import lru_cache
from typing import Any

from .._algebra import (
    DTYPES,
    KINDS,
    Binding,
    DTypeSpec,
    ErrorKind,
    Mismatch,
    NamedShapeSyntaxError,
    ShapeSpec,
    match_shape_spec,
    merge_bindings,
    parse_shape_spec,
    placement_mismatch,
)
from .._value._named_array import NamedArray
from .._value._placement import known_placement

__all__ = ["NamedArrayHint", "call_state", "mentions_named_array", "named_array_hint"]


class _CallState(threading.local):
    """Per-thread state of the ``@tx.typed`` call being checked."""

    memo: dict[str, Binding] | None = None
    """Sizes bound so far in this call; ``None`` outside a ``@tx.typed`` call."""
    failure: tuple[Any, Any, Mismatch] | None = None
    """The last failed match: (hint, value, why)."""

    def __reduce__(self) -> str:
        """Pickled by reference (a typed function pickled by value holds it): per-thread state does not travel."""
        return "call_state"


call_state = _CallState()


class _HintMeta(type):
    """Metaclass of annotation classes: ``isinstance(x, NamedArray[f32, "a b"])`` checks the shape."""

    dtype_spec: DTypeSpec
    shape_spec: ShapeSpec
    match_cache: dict[Any, dict[str, Binding] | Mismatch]
    placement: dict[str, tuple[str, ...]]
    """The placements the annotation declares (``"batch@data"``), checked apart from the cached shape match
    (a concrete value's sharding is not part of the cache's key)."""
    hint_args: tuple[str, ...]
    """What ``NamedArray[...]`` was given (dtype name and spec strings): how the class pickles."""

    def __instancecheck__(cls, value: Any) -> bool:
        if not isinstance(value, NamedArray):
            return False
        data = value.data
        key: tuple[Any, ...]
        try:
            key = (value.axes, value.mapped, data.aval)  # jax arrays and tracers: the cheapest key
        except AttributeError:
            key = (value.axes, value.mapped, data.shape, data.dtype)
        found = cls.match_cache.get(key)
        if found is None:
            found = cls.match_cache[key] = _match(cls, value)
            if len(cls.match_cache) > _MATCH_CACHE_SIZE:
                cls.match_cache.clear()
        if type(found) is Mismatch:
            call_state.failure = (cls, value, found)
            return False
        if cls.placement:  # "batch@data": checked where the value's placement is known (gradual elsewhere)
            misplaced = placement_mismatch(cls.placement, known_placement(value))
            if misplaced is not None:
                call_state.failure = (cls, value, misplaced)
                return False
        memo = call_state.memo
        if memo is not None:
            # The hot path of merge_bindings: bind each name, stop at the first clash. A clash fails
            # the whole call, so names bound before it do no harm.
            for name, size in found.items():
                if memo.setdefault(name, size) != size:
                    clash = merge_bindings(cls.shape_spec, found, memo)
                    assert isinstance(clash, Mismatch), "a name bound to two sizes is always a mismatch"
                    call_state.failure = (cls, value, clash)
                    return False
        return True


_MATCH_CACHE_SIZE = 4096


def _reduce_hint(cls: _HintMeta) -> str | tuple[Any, tuple[Any, ...]]:
    """Pickle an annotation class as the ``NamedArray[...]`` call that makes it (it has no importable name);
    their base, ``NamedArrayHint``, by its name (cloudpickle reaches it when it pickles a class by value)."""
    if "hint_args" not in cls.__dict__:
        return cls.__qualname__
    return named_array_hint, (cls.hint_args,)


copyreg.pickle(_HintMeta, _reduce_hint)


def _match(hint: _HintMeta, value: NamedArray) -> dict[str, Binding] | Mismatch:
    """Match dtype and shape, binding against nothing: a pure function of the value's type."""
    dtype = value.data.dtype
    if not hint.dtype_spec.accepts(getattr(dtype, "name", str(dtype))):
        return Mismatch(f"its dtype is {dtype}, expected {hint.dtype_spec.name}", ErrorKind.DTYPE)
    found = match_shape_spec(hint.shape_spec, value.named_shape, value.shape, {})
    if type(found) is Mismatch and value.mapped:
        # the per-example view inside tx.vmap/xmap: an annotation may leave out the axes mapped there
        unmapped = {n: s for n, s in value.named_shape.items() if n in value.axes}
        per_example = match_shape_spec(hint.shape_spec, unmapped, value.shape, {})
        if type(per_example) is not Mismatch:
            return per_example
        mapped = [name for name, _ in value.mapped]
        # call the mapped axes the annotation leaves out mapped, not undeclared
        named = set(hint.shape_spec.axis_names)
        left_out = [n for n in mapped if n not in named]
        if not left_out:  # every mapped axis annotated: the full shape's mismatch says it all
            return found
        names = ", ".join(repr(n) for n in left_out)
        verb = "is" if len(left_out) == 1 else "are"
        if named & set(mapped):  # the annotation names some mapped axes: it must name all of them, or none
            return replace(
                found,
                reason=f"{found.reason}; {names} {verb} mapped here (tx.vmap or xmap): "
                "annotate every mapped axis, or none",
            )
        return replace(
            per_example, reason=f"{per_example.reason}; {names} {verb} mapped here (tx.vmap or xmap), not annotated"
        )
    return found


class NamedArrayHint(metaclass=_HintMeta):
    """Base of the classes ``NamedArray[...]`` returns; never instantiated."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"{cls.__name__} is an annotation, not a constructor. Fix: build values with tx.named(array, axes)"
        )


def mentions_named_array(hint: Any) -> bool:
    """Whether ``hint`` is, or contains (``X | None``, ``tuple[X, ...]``), a ``NamedArray[...]`` hint."""
    if isinstance(hint, type) and issubclass(hint, NamedArrayHint):
        return True
    return any(mentions_named_array(arg) for arg in typing.get_args(hint))


def _dtype_spec(dtype: Any) -> DTypeSpec:
    if isinstance(dtype, DTypeSpec):
        return dtype
    name = getattr(dtype, "__name__", None) or str(dtype)
    found = DTYPES.get(name) or KINDS.get(name)
    if found is None and dtype not in (int, float, complex, bool):  # ambiguous widths: refuse
        # numpy and jax.numpy scalar types and dtypes: np.float32, jnp.int8, np.dtype("bool")
        try:
            import numpy as np

            found = DTYPES.get(np.dtype(dtype).name)
        except TypeError:
            found = None
    if found is None:
        raise NamedShapeSyntaxError(
            f"NamedArray[{dtype!r}, ...]: the first argument must be a dtype such as tx.f32 or a kind "
            f"such as tx.Float; known: {', '.join(list(DTYPES) + list(KINDS))}. "
            f'Fix: from typed_xmap import f32, then NamedArray[f32, "batch features"]'
        )
    return found


def named_array_hint(params: Any) -> type:
    """``NamedArray[dtype, "axes"]`` or ``NamedArray[dtype, "axes", "positional dims"]``."""
    if not isinstance(params, tuple) or len(params) not in (2, 3):
        raise NamedShapeSyntaxError(
            f"NamedArray[...] takes a dtype and one or two spec strings; got {params!r}. "
            f'Fix: write NamedArray[f32, "batch features"], or NamedArray[f32, "batch", "n 3"] with positional dims'
        )
    dtype = _dtype_spec(params[0])
    specs = params[1:]
    for spec in specs:
        if not isinstance(spec, str):
            wrote = ", ".join(repr(s) for s in specs)
            meant = ", ".join(repr(s if isinstance(s, str) else _as_spec(s)) for s in specs)
            raise NamedShapeSyntaxError(
                f"NamedArray[{dtype.name}, {wrote}]: the shape is given by spec strings, got "
                f"{type(spec).__name__} {spec!r}. Fix: write NamedArray[{dtype.name}, {meant}]"
            )
    return _hint_class(dtype, *params[1:])


def _as_spec(value: Any) -> str:
    """The spec string a user most likely meant: ``["a", "b"]`` -> ``"a b"``, ``[]`` -> ``""``."""
    if isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(v, str) for v in value):
        return " ".join(value if isinstance(value, (list, tuple)) else sorted(value))
    return "batch features"


HINT_CACHE_SIZE = 4096
"""How many annotation classes are kept (least recently used dropped first): a program that builds
``NamedArray[f32, f"b={n} e"]`` per call with a new ``n`` each time keeps at most this many."""


@lru_cache(maxsize=HINT_CACHE_SIZE)
def _hint_class(dtype_spec: DTypeSpec, named: str, positional: str | None = None) -> type:
    spec = parse_shape_spec(named, positional)
    key = (dtype_spec, frozenset(spec.axes), spec.positional, spec.group)
    with _meaning_lock:
        cls = _hints_by_meaning.get(key)
        if cls is None:
            cls = _hints_by_meaning[key] = _new_hint_class(dtype_spec, spec, positional is not None)
            if len(_hints_by_meaning) > HINT_CACHE_SIZE:
                _hints_by_meaning.popitem(last=False)
        else:
            _hints_by_meaning.move_to_end(key)
    return cls


_hints_by_meaning: OrderedDict[tuple[Any, ...], type] = OrderedDict()
"""One class per meaning: "a b", "b  a" and "a,b" annotate the same thing (the ``HINT_CACHE_SIZE`` most
recently used meanings)."""
_meaning_lock = threading.Lock()


def _new_hint_class(dtype_spec: DTypeSpec, spec: ShapeSpec, has_positional: bool) -> type:
    args = f"{dtype_spec.name}, {spec.named_text()!r}"
    if has_positional:
        args += f", {spec.positional_text()!r}"
    name = f"NamedArray[{args}]"
    cls = _HintMeta(
        name,
        (NamedArrayHint,),
        {"dtype_spec": dtype_spec, "shape_spec": spec, "match_cache": {}, "placement": spec.placement},
    )
    positional = spec.positional_text() if has_positional else None
    cls.hint_args = (dtype_spec.name, spec.named_text(), *(() if positional is None else (positional,)))
    # As jaxtyping does: a plain class name that prints well, no metaclass __repr__ (beartype needs
    # repr(X | None) to be consistent with repr(X)).
    cls.__qualname__ = name
    cls.__module__ = "builtins"
    return cls


def _class_getitem(cls: type, params: Any) -> type:
    """``NamedArray[f32, "batch features"]``: the annotation class ``@tx.typed`` checks."""
    return named_array_hint(params)


# Bound here, not in the class body: the value layer (typed_xmap._value) imports no checking.
setattr(NamedArray, "__class_getitem__", classmethod(_class_getitem))  # noqa: B010
