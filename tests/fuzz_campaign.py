"""A fuzz campaign over typed_xmap's public surface: hypothesis draws inputs, NumPy says what they should give.

    python tests/fuzz_campaign.py [EXAMPLES_PER_FAMILY] [SECONDS]

Each family draws a call of the public API (valid or not) together with an oracle, written from the
documented semantics with NumPy: ``Valid(values, axes)`` (the result as a NumPy array, its named axes in
that order, positional dims after them) or ``Invalid(why)``. Every outcome is classified:

- ``correct``: the result has the oracle's named shape and values;
- ``named error``: a ``NamedShapeError`` with a ``Fix:`` for an input the oracle calls invalid;
- ``generic error``: any other exception (JAX's, Python's), or a ``NamedShapeError`` without a ``Fix:``;
- ``silent acceptance``: a result for an input the oracle calls invalid;
- ``wrong value``: another shape or other values than the oracle's, or a named error for a valid input;
- ``crash``: an exception that is a bug whatever the input (``AssertionError``, ``AttributeError``,
  ``KeyError``, ``RecursionError``, ``SystemError``, ...).

tests/test_fuzz_campaign.py runs a slice in CI and, with ``TYPED_XMAP_FUZZ_EXAMPLES=N``, a larger run.
Not a test module itself.
"""

from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import math
import string
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import HealthCheck, Phase, given, settings, strategies as st
from jax.sharding import AxisType

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, NamedShapeError, f32

OUTCOMES = ("correct", "named error", "generic error", "silent acceptance", "wrong value", "crash")
BAD = OUTCOMES[2:]
CRASHES = (AssertionError, AttributeError, KeyError, RecursionError, SystemError, UnboundLocalError, MemoryError)
NAMES = ("a", "b", "c")


@dataclass(frozen=True)
class Valid:
    values: Any  # a NumPy array: named axes first (in ``axes`` order), then positional dims
    axes: tuple[str, ...]
    exact: bool = False  # compare for equality (ints, bools) rather than closeness


@dataclass(frozen=True)
class Invalid:
    why: str


Oracle = Valid | Invalid


@dataclass(frozen=True)
class Case:
    family: str
    text: str
    call: Callable[[], Any]
    oracle: Oracle


@dataclass
class Tally:
    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, case: Case, outcome: str, detail: str) -> None:
        self.counts[outcome] += 1
        if outcome in BAD:
            self.examples.setdefault(outcome, []).append(f"[{case.family}] {case.text}: {detail}")

    def report(self) -> str:
        lines = [f"{outcome}: {self.counts[outcome]}" for outcome in OUTCOMES]
        for outcome, cases in self.examples.items():
            lines += [f"  {outcome}: {c[:300]}" for c in cases[:5]]
        return "\n".join(lines)


def classify(case: Case) -> tuple[str, str]:
    try:
        result = case.call()
    except NamedShapeError as error:
        message = str(error)
        if "fix:" not in message.lower():
            return "generic error", f"NamedShapeError without a Fix: {message[:200]}"
        if isinstance(case.oracle, Valid):
            return "wrong value", f"rejected a valid input: {message[:200]}"
        return "named error", ""
    except CRASHES as error:
        return "crash", f"{type(error).__name__}: {str(error)[:200]}"
    except Exception as error:
        return "generic error", f"{type(error).__module__}.{type(error).__name__}: {str(error)[:200]}"
    if isinstance(case.oracle, Invalid):
        return "silent acceptance", f"returned {result!r:.100} for an input that is invalid: {case.oracle.why}"
    return _compare(result, case.oracle)


def _compare(result: Any, oracle: Valid) -> tuple[str, str]:
    if not isinstance(result, NamedArray):
        if oracle.axes:
            return "wrong value", f"got {type(result).__name__}, expected named axes {oracle.axes}"
        got = np.asarray(result)
    else:
        if set(result.named_shape) != set(oracle.axes):
            return "wrong value", f"named shape {result.named_shape}, expected axes {oracle.axes}"
        got = np.asarray(tx.positional(result, [*oracle.axes, ...]))
    want = np.asarray(oracle.values)
    if got.shape != want.shape:
        return "wrong value", f"shape {got.shape}, expected {want.shape}"
    same = np.array_equal(got, want) if oracle.exact else np.allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
    return ("correct", "") if same else ("wrong value", f"values {got.ravel()[:6]} != {want.ravel()[:6]}")


# -- shared strategies ------------------------------------------------------------------------------------


def named_shapes(min_axes: int = 0, max_axes: int = 3) -> st.SearchStrategy[dict[str, int]]:
    return st.dictionaries(st.sampled_from(NAMES), st.integers(1, 3), min_size=min_axes, max_size=max_axes)


def _values(shape: tuple[int, ...], draw: Any, dtype: Any = np.float32) -> np.ndarray:
    seed = draw(st.integers(0, 2**16))
    values = np.random.default_rng(seed).integers(-4, 5, size=shape)
    return values.astype(dtype)


def _named(values: np.ndarray, axes: tuple[str, ...]) -> NamedArray:
    """Named axes lead ``values`` (the oracle's layout); the rest are positional dims."""
    return tx.named(jnp.asarray(values), [*axes, ...]) if axes else tx.named(jnp.asarray(values), [...])


def _order(values: np.ndarray, axes: tuple[str, ...], to: tuple[str, ...]) -> np.ndarray:
    """``values`` (named axes first) with its named axes in the order ``to``."""
    perm = [axes.index(a) for a in to] + list(range(len(axes), values.ndim))
    return np.transpose(values, perm)


def _broadcast(values: np.ndarray, axes: tuple[str, ...], union: dict[str, int]) -> np.ndarray:
    """``values`` (no positional dims) over the axes of ``union``, in its order."""
    present = tuple(a for a in union if a in axes)
    moved = _order(values, axes, present)
    shape = [union[a] if a in axes else 1 for a in union]
    return np.broadcast_to(moved.reshape(shape), tuple(union.values()))


# -- families ----------------------------------------------------------------------------------------------

OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda x, y: x + y,
    "-": lambda x, y: x - y,
    "*": lambda x, y: x * y,
    "maximum": lambda x, y: tnp.maximum(x, y) if isinstance(x, NamedArray) else np.maximum(x, y),
}


@st.composite
def binary(draw: Any) -> Case:
    shapes = [draw(named_shapes()), draw(named_shapes())]
    if draw(st.booleans()) and shapes[0]:  # a clash on purpose
        name = draw(st.sampled_from(sorted(shapes[0])))
        shapes[1][name] = shapes[0][name] % 3 + 1
    op = draw(st.sampled_from(sorted(OPS)))
    axes = [tuple(s) for s in shapes]
    arrays = [_values(tuple(s.values()), draw) for s in shapes]
    scalar = draw(st.sampled_from([None, 2.0, 3]))
    right = (lambda: scalar) if scalar is not None else (lambda: _named(arrays[1], axes[1]))
    union: dict[str, int] = dict(shapes[0])
    oracle: Oracle
    clash = [n for n in shapes[1] if n in union and union[n] != shapes[1][n]] if scalar is None else []
    if clash:
        oracle = Invalid(f"axis {clash[0]!r} has two sizes")
    elif scalar is not None:
        oracle = Valid(OPS[op](arrays[0], np.float32(scalar)), axes[0])
    else:
        union.update(shapes[1])
        want = OPS[op](_broadcast(arrays[0], axes[0], union), _broadcast(arrays[1], axes[1], union))
        oracle = Valid(want, tuple(union))
    text = f"x{shapes[0]} {op} {scalar if scalar is not None else f'y{shapes[1]}'}"
    return Case("binary", text, lambda: OPS[op](_named(arrays[0], axes[0]), right()), oracle)


REDUCTIONS = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}


@st.composite
def reduction(draw: Any) -> Case:
    shape = draw(named_shapes(1))
    positional = tuple(draw(st.lists(st.integers(1, 3), max_size=1)))
    axes = tuple(shape)
    values = _values((*shape.values(), *positional), draw)
    element = st.one_of(st.sampled_from([*NAMES, "zz"]), st.integers(-2, 1), st.sampled_from([True, 1.5]))
    axis = draw(st.one_of(element, st.lists(element, min_size=1, max_size=2).map(tuple), st.none()))
    fname = draw(st.sampled_from([*REDUCTIONS, "argmax"]))
    text = f"tnp.{fname}(x{shape} positional {positional}, {axis!r})"
    items = axis if isinstance(axis, tuple) else (axis,)
    call = lambda: getattr(tnp, fname)(_named(values, axes), axis)
    oracle: Oracle
    if axis is None:
        dims = tuple(range(len(axes), values.ndim))
        if fname == "argmax":
            want = np.argmax(values.reshape(*values.shape[: len(axes)], -1), axis=-1)  # over the flat positional dims
            oracle = Valid(want, axes, exact=True)
        else:
            oracle = Valid(REDUCTIONS[fname](values, axis=dims) if dims else values, axes)
        return Case("reduction", text, call, oracle)
    dims_list: list[int] = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (str, int)):
            return Case("reduction", text, call, Invalid(f"axis {item!r} is neither a name nor an int"))
        if isinstance(item, str):
            if item not in shape:
                return Case("reduction", text, call, Invalid(f"no axis {item!r}"))
            dims_list.append(axes.index(item))
        else:
            if not -len(positional) <= item < len(positional):
                return Case("reduction", text, call, Invalid(f"positional dim {item} out of range"))
            dims_list.append(len(axes) + item % len(positional))
    if len(set(dims_list)) != len(dims_list):
        return Case("reduction", text, call, Invalid("an axis twice"))
    if fname == "argmax" and len(dims_list) != 1:
        return Case("reduction", text, call, Invalid("argmax over two axes"))
    kept = tuple(a for i, a in enumerate(axes) if i not in dims_list)
    if fname == "argmax":
        oracle = Valid(np.argmax(values, axis=dims_list[0]), kept, exact=True)
    else:
        oracle = Valid(REDUCTIONS[fname](values, axis=tuple(dims_list)), kept)
    return Case("reduction", text, call, oracle)


@st.composite
def indexing(draw: Any) -> Case:
    shape = draw(named_shapes(1, 2))
    axes = tuple(shape)
    positional = tuple(draw(st.lists(st.integers(1, 3), max_size=1)))
    values = _values((*shape.values(), *positional), draw)
    x = lambda: _named(values, axes)
    if positional and draw(st.booleans()):
        i = draw(st.integers(-4, 4))
        text = f"x{shape} positional {positional} [{i}]"
        if not -positional[0] <= i < positional[0]:
            return Case("indexing", text, lambda: x()[i], Invalid("positional index out of bounds"))
        return Case("indexing", text, lambda: x()[i], Valid(values[..., i], axes))
    name = draw(st.sampled_from([*axes, "zz"]))
    size = shape.get(name, 1)
    kind = draw(st.sampled_from(["int", "slice", "array"]))
    item: Any
    if kind == "int":
        item = draw(st.integers(-4, 4))
    elif kind == "slice":
        item = slice(
            draw(st.none() | st.integers(-4, 4)),
            draw(st.none() | st.integers(-4, 4)),
            draw(st.sampled_from([None, 1, 2, -1, 0])),
        )
    else:
        ids = np.asarray(draw(st.lists(st.integers(0, max(size - 1, 0)), min_size=1, max_size=3)), np.int32)
        item = ids
    key = {name: tx.named(jnp.asarray(item), ["k"]) if kind == "array" else item}
    text = f"x{shape} positional {positional} [{{{name!r}: {item!r}}}]"
    call = lambda: x()[key]
    if name not in shape:
        return Case("indexing", text, call, Invalid("no such axis"))
    dim = axes.index(name)
    if kind == "int":
        if not -size <= item < size:
            return Case("indexing", text, call, Invalid("index out of bounds"))
        return Case("indexing", text, call, Valid(np.take(values, item, axis=dim), axes[:dim] + axes[dim + 1 :]))
    if kind == "slice":
        if item.step == 0:
            return Case("indexing", text, call, Invalid("slice step 0"))
        index = (slice(None),) * dim + (item,)
        return Case("indexing", text, call, Valid(values[index], axes))
    taken = np.moveaxis(np.take(values, item, axis=dim), dim, 0)
    rest = axes[:dim] + axes[dim + 1 :]
    return Case("indexing", text, call, Valid(taken, ("k", *rest)))


SIZES = st.sampled_from([-1, 0, 1, 2, 3, 2.0, True, None, "3", 2**70])


def _is_size(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31


@st.composite
def constructor(draw: Any) -> Case:
    which = draw(st.sampled_from(["zeros", "full", "arange", "one_hot", "causal_mask"]))
    name = draw(st.sampled_from(["a", "b", "1x", "", 3]))
    if which in ("zeros", "full"):
        shape = {name: draw(SIZES), **({"c": 2} if draw(st.booleans()) else {})}
        fill = draw(st.sampled_from([0.5, 2]))
        call = (lambda: tnp.zeros(shape)) if which == "zeros" else (lambda: tnp.full(shape, fill))
        text = f"tnp.{which}({shape!r})"
        bad = next(
            (k for k, v in shape.items() if not (isinstance(k, str) and k.isidentifier()) or not _is_size(v)), None
        )
        if bad is not None:
            return Case("constructor", text, call, Invalid(f"bad axis {bad!r} or size"))
        ordered = tuple(sorted(shape))
        value = 0.0 if which == "zeros" else fill
        return Case("constructor", text, call, Valid(np.full([shape[a] for a in ordered], value, np.float32), ordered))
    if which == "arange":
        start, stop = draw(st.integers(-3, 3)), draw(st.none() | st.integers(-3, 5))
        step = draw(st.sampled_from([1, 2, -1, 0]))
        text = f"tnp.arange({name!r}, {start}, {stop}, {step})"
        call = lambda: tnp.arange(name, start, stop, step)
        if not (isinstance(name, str) and name.isidentifier()):
            return Case("constructor", text, call, Invalid("not an axis name"))
        if step == 0:
            return Case("constructor", text, call, Invalid("step 0"))
        return Case(
            "constructor",
            text,
            call,
            Valid(np.arange(start, stop, step) if stop is not None else np.arange(0, start, step), (name,), exact=True),
        )
    size = draw(SIZES)
    if which == "causal_mask":
        other = draw(st.sampled_from(["k", name]))
        text = f"tnp.causal_mask({name!r}, {other!r}, {size!r})"
        call = lambda: tnp.causal_mask(name, other, size)
        if not (isinstance(name, str) and name.isidentifier()) or name == other or not _is_size(size):
            return Case("constructor", text, call, Invalid("bad axes or size"))
        index = np.arange(size)
        return Case("constructor", text, call, Valid(index[None, :] <= index[:, None], (name, other), exact=True))
    float_tokens = draw(st.booleans())
    ids = np.asarray(draw(st.lists(st.integers(0, 2), min_size=1, max_size=3)))
    tokens = ids.astype(np.float32 if float_tokens else np.int32)
    text = f"tnp.one_hot(tokens {tokens.dtype}, {name!r}, {size!r})"
    call = lambda: tnp.one_hot(tx.named(jnp.asarray(tokens), ["seq"]), name, size)
    if not (isinstance(name, str) and name.isidentifier()) or name == "seq" or not _is_size(size) or float_tokens:
        return Case("constructor", text, call, Invalid("bad axis, size or tokens"))
    return Case(
        "constructor", text, call, Valid((ids[:, None] == np.arange(size)[None, :]).astype(np.float32), ("seq", name))
    )


@st.composite
def structure(draw: Any) -> Case:
    shape = draw(named_shapes(1))
    axes = tuple(shape)
    values = _values(tuple(shape.values()), draw)
    x = lambda: _named(values, axes)
    which = draw(st.sampled_from(["rename", "broadcast_to", "cumsum", "roll", "merge_axes", "concatenate"]))
    name = draw(st.sampled_from([*NAMES, "zz"]))
    if which == "rename":
        new = draw(st.sampled_from([*NAMES, "d", "1x"]))
        text = f"tx.rename(x{shape}, {{{name!r}: {new!r}}})"
        call = lambda: tx.rename(x(), {name: new})
        if name not in shape or not new.isidentifier() or (new in shape and new != name):
            return Case("structure", text, call, Invalid("missing axis or clash"))
        return Case("structure", text, call, Valid(values, tuple(new if a == name else a for a in axes)))
    if which == "broadcast_to":
        target = draw(st.dictionaries(st.sampled_from([*NAMES, "d"]), st.sampled_from([-1, 1, 2, 3]), max_size=4))
        text = f"tx.broadcast_to(x{shape}, {target})"
        call = lambda: tx.broadcast_to(x(), target)
        if any(v < 0 for v in target.values()) or any(a not in target or target[a] != s for a, s in shape.items()):
            return Case("structure", text, call, Invalid("drops an axis, a size differs or is negative"))
        return Case("structure", text, call, Valid(_broadcast(values, axes, target), tuple(target)))
    if which in ("cumsum", "roll"):
        shift = draw(st.integers(-3, 3))
        text = f"tnp.{which}(x{shape}, {name!r})"
        call = (lambda: tnp.cumsum(x(), name)) if which == "cumsum" else (lambda: tnp.roll(x(), shift, name))
        if name not in shape:
            return Case("structure", text, call, Invalid("no such axis"))
        dim = axes.index(name)
        want = np.cumsum(values, axis=dim) if which == "cumsum" else np.roll(values, shift, axis=dim)
        return Case("structure", text, call, Valid(want, axes))
    if which == "merge_axes":
        pair = tuple(draw(st.lists(st.sampled_from([*NAMES, "zz"]), min_size=1, max_size=2)))
        into = draw(st.sampled_from(["m", "a"]))
        text = f"tx.merge_axes(x{shape}, {pair}, {into!r})"
        call = lambda: tx.merge_axes(x(), pair, into)
        rest = tuple(a for a in axes if a not in pair)
        if len(set(pair)) != len(pair) or any(p not in shape for p in pair) or into in rest:
            return Case("structure", text, call, Invalid("missing, repeated or clashing axis"))
        moved = _order(values, axes, (*pair, *rest))
        merged = moved.reshape(math.prod(shape[p] for p in pair), *[shape[a] for a in rest])
        return Case("structure", text, call, Valid(merged, (into, *rest)))
    other = dict(shape)
    if draw(st.booleans()):
        other[draw(st.sampled_from(sorted(shape)))] = draw(st.integers(1, 3))
    if draw(st.booleans()):
        other[draw(st.sampled_from(NAMES))] = 2
    second = _values(tuple(other.values()), draw)
    text = f"tnp.concatenate([x{shape}, y{other}], {name!r})"
    call = lambda: tnp.concatenate([x(), _named(second, tuple(other))], name)
    if name not in shape or name not in other or set(shape) != set(other):
        return Case("structure", text, call, Invalid("axes differ or the axis is missing"))
    if any(shape[a] != other[a] for a in shape if a != name):
        return Case("structure", text, call, Invalid("sizes differ"))
    joined = np.concatenate([values, _order(second, tuple(other), axes)], axis=axes.index(name))
    return Case("structure", text, call, Valid(joined, axes))


@st.composite
def einsum(draw: Any) -> Case:
    shapes = [draw(named_shapes(1, 2)), draw(named_shapes(1, 2))]
    braces = [
        tuple(draw(st.lists(st.sampled_from([*NAMES, "zz"]), unique=True, min_size=0, max_size=3))) for _ in shapes
    ]
    if draw(st.booleans()):  # a well-formed spec, most of the time valid
        braces = [tuple(s) for s in shapes]
    mentioned = sorted({a for b in braces for a in b})
    out = tuple(draw(st.lists(st.sampled_from([*mentioned, "zz"] if mentioned else ["zz"]), unique=True, max_size=2)))
    spec = ",".join("{" + ",".join(b) + "}" for b in braces) + "->{" + ",".join(out) + "}"
    arrays = [_values(tuple(s.values()), draw) for s in shapes]
    text = f"tnp.einsum({spec!r}, x{shapes[0]}, y{shapes[1]})"
    call = lambda: tnp.einsum(spec, *(_named(v, tuple(s)) for v, s in zip(arrays, shapes, strict=True)))
    sizes: dict[str, int] = {}
    for b, s in zip(braces, shapes, strict=True):
        if set(b) - set(s):
            return Case("einsum", text, call, Invalid("a braced axis the operand lacks"))
        if (set(s) - set(b)) & set(mentioned):
            return Case("einsum", text, call, Invalid("an operand carries an axis the spec lists elsewhere only"))
        for a, n in s.items():
            if sizes.setdefault(a, n) != n:
                return Case("einsum", text, call, Invalid("sizes clash"))
    if set(out) - set(mentioned):
        return Case("einsum", text, call, Invalid("the output names a stray axis"))
    carried = [a for a in sizes if a not in mentioned]
    result = (*out, *carried)
    letters = {a: string.ascii_lowercase[i] for i, a in enumerate(sorted(sizes))}
    subscripts = ",".join("".join(letters[a] for a in s) for s in shapes) + "->" + "".join(letters[a] for a in result)
    return Case("einsum", text, call, Valid(np.einsum(subscripts, *arrays), result))


SPEC_ALPHABET = "ab9_=, *.x"


@st.composite
def spec(draw: Any) -> Case:
    text = draw(st.text(SPEC_ALPHABET, max_size=12))
    big = draw(st.sampled_from(["", "9" * 30]))
    spec_text = text + big
    call = lambda: NamedArray[f32, spec_text]
    try:
        from typed_xmap._algebra import parse_shape_spec

        parsed = parse_shape_spec(spec_text)
    except NamedShapeError as error:
        return Case("spec", f"NamedArray[f32, {spec_text!r}]", call, Invalid(str(error)[:80]))
    return Case(
        "spec", f"NamedArray[f32, {spec_text!r}]", lambda: _hint_ok(call(), parsed), Valid(np.True_, (), exact=True)
    )


def _hint_ok(hint: Any, parsed: Any) -> bool:
    return isinstance(hint, type) and hint.shape_spec == parsed


@st.composite
def transforms(draw: Any) -> Case:
    shape = draw(named_shapes(1))
    axes = tuple(shape)
    values = _values(tuple(shape.values()), draw)
    which = draw(st.sampled_from(["vmap", "scan"]))
    if which == "vmap":
        axis = draw(
            st.one_of(
                st.sampled_from([*NAMES, "zz", 3]), st.lists(st.sampled_from(NAMES), min_size=1, max_size=2).map(tuple)
            )
        )
        text = f"tx.vmap(lambda v: v * 2 + tnp.sum(v), axis={axis!r})(x{shape})"
        call = lambda: tx.vmap(lambda v: v * 2, axis=axis)(_named(values, axes))
        names = axis if isinstance(axis, tuple) else (axis,)
        if any(not isinstance(n, str) or n not in shape for n in names) or len(set(names)) != len(names):
            return Case("transforms", text, call, Invalid("an axis missing, twice, or not a name"))
        return Case("transforms", text, call, Valid(values * 2, axes))
    axis = draw(st.sampled_from([*NAMES, "zz"]))
    length = draw(st.sampled_from([None, 1, 2, 3, -1, 2.5]))
    text = f"tx.scan(sum body, 0.0, x{shape}, axis={axis!r}, length={length!r})"

    def call() -> Any:
        carry, ys = tx.scan(
            lambda c, p: (c + p, p * 2), _zeros_without(shape, axis), _named(values, axes), axis=axis, length=length
        )
        return tnp.concatenate([tnp.stack([carry], axis="_c"), ys.rename({axis: "_c"})], "_c")

    if axis not in shape or (length is not None and length != shape[axis]):
        return Case("transforms", text, call, Invalid("no such axis, or length disagrees"))
    dim = axes.index(axis)
    carry = np.sum(values, axis=dim)
    ys = np.moveaxis(values * 2, dim, 0)
    rest = tuple(a for a in axes if a != axis)
    return Case("transforms", text, call, Valid(np.concatenate([carry[None], ys], axis=0), ("_c", *rest)))


def _zeros_without(shape: dict[str, int], axis: str) -> Any:
    return tnp.zeros({a: s for a, s in shape.items() if a != axis})


@st.composite
def randoms(draw: Any) -> Case:
    key = draw(st.sampled_from(["key", "raw", "int", "floats", "uint32[3]"]))
    shape = draw(st.dictionaries(st.sampled_from(["a", "b", "2x"]), st.sampled_from([0, 2, -1, 2.0]), max_size=2))
    which = draw(st.sampled_from(["normal", "uniform"]))
    keys = {
        "key": lambda: jax.random.key(1),
        "raw": lambda: jax.random.PRNGKey(1),
        "int": lambda: 3,
        "floats": lambda: jnp.ones(3),
        "uint32[3]": lambda: jnp.zeros(3, jnp.uint32),
    }
    text = f"tx.random.{which}({key}, {shape})"
    call = lambda: getattr(tx.random, which)(keys[key](), shape)
    if key not in ("key", "raw") or any(not n.isidentifier() or not _is_size(s) for n, s in shape.items()):
        return Case("random", text, call, Invalid("a bad key, name or size"))
    ordered = tuple(sorted(shape))
    want = np.asarray(getattr(jax.random, which)(jax.random.key(1), tuple(shape[a] for a in ordered)))
    return Case("random", text, call, Valid(want, ordered))


MESHES = {
    "explicit": lambda: jax.make_mesh((4, 2), ("x", "y")),
    "auto": lambda: jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto, AxisType.Auto)),
}


@st.composite
def sharding(draw: Any) -> Case:
    shape = draw(st.dictionaries(st.sampled_from(NAMES), st.sampled_from([2, 4, 8, 3]), min_size=1, max_size=2))
    axes = tuple(shape)
    values = _values(tuple(shape.values()), draw)
    resources = draw(
        st.dictionaries(st.sampled_from([*NAMES, "d"]), st.sampled_from(["x", "y", "z", ("x", "y")]), max_size=2)
    )
    kind = draw(st.sampled_from(sorted(MESHES)))
    which = draw(st.sampled_from(["shard", "constrain", "constrain in jit"]))
    text = f"tx.{which}(x{shape}, {resources}) on a 4x2 {kind} mesh"

    def call() -> Any:
        with jax.set_mesh(MESHES[kind]()):
            x = _named(values, axes)
            if which == "shard":
                placed = tx.shard(x, resources)
            elif which == "constrain":
                placed = tx.constrain(x, resources)
            else:
                placed = jax.jit(lambda v: tx.constrain(v, resources))(x)
            mine = {a: r for a, r in resources.items() if a in shape}
            if tx.resources_of(placed) != mine and which != "constrain in jit":
                return f"placed {tx.resources_of(placed)}, asked {mine}"
            return placed

    mesh_sizes = {"x": 4, "y": 2}
    used = [(a, r if isinstance(r, tuple) else (r,)) for a, r in resources.items() if a in shape]
    if any(m not in mesh_sizes for _, rs in resources.items() for m in (rs if isinstance(rs, tuple) else (rs,))):
        return Case("sharding", text, call, Invalid("an unknown mesh axis"))
    taken = [m for _, rs in used for m in rs]
    if len(taken) != len(set(taken)):
        return Case("sharding", text, call, Invalid("two axes on one mesh axis"))
    if any(shape[a] % math.prod(mesh_sizes[m] for m in rs) for a, rs in used):
        return Case("sharding", text, call, Invalid("a size the mesh axes do not divide"))
    return Case("sharding", text, call, Valid(values, axes))


@st.composite
def typed(draw: Any) -> Case:
    shape = draw(named_shapes(0, 2))
    dtype = draw(st.sampled_from([np.float32, np.int32]))
    values = _values(tuple(shape.values()), draw, dtype)
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=2))
    sized = {n: draw(st.sampled_from([None, 1, 2, 3])) for n in names}
    annotation = " ".join(n if s is None else f"{n}={s}" for n, s in sized.items())
    hint = NamedArray[f32, annotation]

    def identity(v: hint) -> hint:  # type: ignore[valid-type]
        return v

    checked = tx.typed(identity)
    text = f"@tx.typed (v: NamedArray[f32, {annotation!r}]) given {dtype.__name__}{shape}"
    call = lambda: checked(_named(values, tuple(shape)))
    fits = set(names) == set(shape) and all(s is None or shape[n] == s for n, s in sized.items())
    if not fits or dtype is not np.float32:
        return Case("typed", text, call, Invalid("the value does not fit the annotation"))
    return Case("typed", text, call, Valid(values, tuple(shape)))


AXIS_NAMES = st.sampled_from([*NAMES, "1x", 3])


@st.composite
def axis_maps(draw: Any, rank: int) -> tuple[Any, tuple[str, ...] | None]:
    """An xmap spec leaf for a value of ``rank`` dims, and the names it puts at dims 0, 1, ... (None: invalid)."""
    if draw(st.booleans()):
        names = draw(st.lists(AXIS_NAMES, max_size=3))
        rest = draw(st.booleans())
        spec: Any = [*names, ...] if rest else names
        ok = len(names) <= rank if rest else len(names) == rank
        dims = dict(enumerate(names))
    else:
        dims = draw(st.dictionaries(st.integers(-1, 3), AXIS_NAMES, max_size=3))
        spec = dims
        ok = all(0 <= d < rank for d in dims)
    names = list(dims.values())
    ok = ok and all(isinstance(n, str) and n.isidentifier() for n in names) and len(set(names)) == len(names)
    return spec, (tuple(dims[d] for d in sorted(dims)) if ok else None)


@st.composite
def conversions(draw: Any) -> Case:
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    values = _values(shape, draw)
    spec, names = draw(axis_maps(len(shape)))
    text = f"tx.positional(tx.named(array{shape}, {spec!r}), {spec!r})"
    call = lambda: tx.positional(tx.named(jnp.asarray(values), spec), spec)
    if names is None:
        return Case("conversions", text, call, Invalid("a bad spec leaf for this rank"))
    return Case("conversions", text, call, Valid(values, (), exact=True))


@st.composite
def xmaps(draw: Any) -> Case:
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    values = _values(shape, draw)
    spec, names = draw(axis_maps(len(shape)))
    extra = draw(st.sampled_from([None, "d"]))
    sized = draw(st.booleans())
    listed = draw(st.permutations(list(names or ())))
    dropped = draw(st.booleans()) and bool(listed)
    out = [*listed[: len(listed) - dropped], *([extra] if extra else []), ...]
    sizes = {"d": 2} if sized else None
    text = f"xmap(lambda v: v * 2, in_axes=[{spec!r}], out_axes={out!r}, axis_sizes={sizes})(array{shape})"
    call = lambda: tx.xmap(lambda v: v * 2, in_axes=[spec], out_axes=out, axis_sizes=sizes)(values)
    if names is None or dropped or (extra and not sized):
        return Case("xmap", text, call, Invalid("a bad spec, an unlisted axis, or an unsized extra axis"))
    dims = spec if isinstance(spec, dict) else dict(enumerate(spec[: len(names)]))
    at = {n: d for d, n in dims.items()}
    moved = np.moveaxis(values * 2, [at[n] for n in listed], list(range(len(listed))))
    if extra:
        after = len(listed)  # the broadcast axis sits after the listed ones
        moved = np.broadcast_to(np.expand_dims(moved, after), (*moved.shape[:after], 2, *moved.shape[after:]))
    return Case("xmap", text, call, Valid(moved, (), exact=True))


@st.composite
def updates(draw: Any) -> Case:
    shape = draw(named_shapes(1, 2))
    axes = tuple(shape)
    values = _values(tuple(shape.values()), draw)
    name = draw(st.sampled_from([*axes, "zz"]))
    index = draw(st.integers(-3, 3))
    method = draw(st.sampled_from(["set", "add", "multiply"]))
    update_axes = tuple(a for a in axes if a != name and draw(st.booleans()))
    if draw(st.booleans()):
        update_axes = (*update_axes, "zz")
    update = _values(tuple(shape.get(a, 2) for a in update_axes), draw)
    text = f"x{shape}.at[{{{name!r}: {index}}}].{method}(update{update_axes})"
    call = lambda: getattr(_named(values, axes).at[{name: index}], method)(_named(update, update_axes))
    if name not in shape or not -shape[name] <= index < shape[name] or "zz" in update_axes:
        return Case("updates", text, call, Invalid("no such axis, an index out of bounds, or an axis the region lacks"))
    dim = axes.index(name)
    rest = tuple(a for a in axes if a != name)
    region = {a: shape[a] for a in rest}
    new = _broadcast(update, update_axes, region) if rest else update
    want = values.copy()
    where = (slice(None),) * dim + (index,)
    want[where] = {"set": new, "add": want[where] + new, "multiply": want[where] * new}[method]
    return Case("updates", text, call, Valid(want, axes))


FAMILIES: dict[str, st.SearchStrategy[Case]] = {
    "conversions": conversions(),
    "xmap": xmaps(),
    "updates": updates(),
    "binary": binary(),
    "reduction": reduction(),
    "indexing": indexing(),
    "constructor": constructor(),
    "structure": structure(),
    "einsum": einsum(),
    "spec": spec(),
    "transforms": transforms(),
    "random": randoms(),
    "sharding": sharding(),
    "typed": typed(),
}


def run(
    examples: int, seconds: float, families: dict[str, st.SearchStrategy[Case]] = FAMILIES, *, derandomize: bool = False
) -> Tally:
    """Up to ``examples`` cases of each family, within ``seconds`` for the whole campaign; the tally.
    ``derandomize``: the same cases every run (CI's slice)."""
    tally = Tally()
    stop = time.monotonic() + seconds
    for strategy in families.values():

        @settings(
            max_examples=examples,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            derandomize=derandomize,
            suppress_health_check=list(HealthCheck),
        )
        @given(strategy)
        def one(case: Case) -> None:
            if time.monotonic() < stop:
                outcome, detail = classify(case)
                tally.add(case, outcome, detail)

        one()
    return tally


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    budget = float(sys.argv[2]) if len(sys.argv) > 2 else 600.0
    started = time.monotonic()
    result = run(count, budget)
    print(result.report())
    print(f"{sum(result.counts.values())} cases in {time.monotonic() - started:.0f} s")
