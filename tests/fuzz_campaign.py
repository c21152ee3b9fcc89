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

import contextlib
import itertools
import json
import math
import signal
import string
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import HealthCheck, Phase, given, settings, strategies as st
from jax import lax
from jax.sharding import AxisType

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, NamedShapeError, f32

OUTCOMES = ("correct", "named error", "generic error", "silent acceptance", "wrong value", "crash", "hang")
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
    by_family: dict[str, Counter[str]] = field(default_factory=dict)

    def add(self, case: Case, outcome: str, detail: str) -> None:
        self.counts[outcome] += 1
        self.by_family.setdefault(case.family, Counter())[outcome] += 1
        if outcome in BAD:
            self.examples.setdefault(outcome, []).append(f"[{case.family}] {case.text}: {detail}")

    def report(self) -> str:
        lines = [f"{outcome}: {self.counts[outcome]}" for outcome in OUTCOMES]
        width = max((len(f) for f in self.by_family), default=6)
        lines.append(f"{'family':<{width}} " + " ".join(f"{o.split()[0]:>8}" for o in OUTCOMES))
        for family, counts in sorted(self.by_family.items()):
            lines.append(f"{family:<{width}} " + " ".join(f"{counts[o]:>8}" for o in OUTCOMES))
        for outcome, cases in self.examples.items():
            lines += [f"  {outcome}: {c[:300]}" for c in cases[:5]]
        return "\n".join(lines)


HANG_SECONDS = 120.0
"""A case still running after this long is a hang (its family's run goes on with the next case)."""


class _Hang(BaseException):
    """Raised by the alarm in a case that ran past ``HANG_SECONDS`` (a BaseException: no handler takes it)."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Hang


def classify(case: Case) -> tuple[str, str]:
    timed = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if timed:
        previous = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
    try:
        return _classified(case)
    except _Hang:
        return "hang", f"still running after {HANG_SECONDS:.0f} s"
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def _classified(case: Case) -> tuple[str, str]:
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
    nan = got.dtype.kind in "fc" and want.dtype.kind in "fc"
    same = (
        np.array_equal(got, want, equal_nan=nan)
        if oracle.exact
        else np.allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
    )
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


# -- the vocabulary added since the first campaign (issue 28) ---------------------------------------------------


def _reference(name: str) -> Callable[..., Any]:
    """The positional function a tnp elementwise function applies by name: jax.numpy's or jax.nn's."""
    return getattr(jnp, name, None) or getattr(jax.nn, name, None) or getattr(jax.scipy.special, name)


def _arity(name: str) -> int:
    try:
        _reference(name)(jnp.ones(2))
    except TypeError:
        return 2
    return 1


def _exact(values: Any) -> bool:
    return not np.issubdtype(np.asarray(values).dtype, np.inexact)


@st.composite
def ufuncs(draw: Any) -> Case:
    name = draw(st.sampled_from(sorted(tnp.UFUNC_NAMES)))
    shapes = [draw(named_shapes(0, 2)), draw(named_shapes(0, 2))]
    if draw(st.booleans()) and shapes[0] and shapes[1]:  # a clash on purpose
        common = sorted(set(shapes[0]) & set(shapes[1]))
        if common:
            shapes[1][common[0]] = shapes[0][common[0]] % 3 + 1
    arrays = [_values(tuple(s.values()), draw) / 2 for s in shapes]
    axes = [tuple(s) for s in shapes]
    fn = getattr(tnp, name)
    if _arity(name) == 1:
        text = f"tnp.{name}(x{shapes[0]})"
        want = np.asarray(_reference(name)(jnp.asarray(arrays[0])))
        return Case("ufuncs", text, lambda: fn(_named(arrays[0], axes[0])), Valid(want, axes[0], _exact(want)))
    text = f"tnp.{name}(x{shapes[0]}, y{shapes[1]})"
    call = lambda: fn(_named(arrays[0], axes[0]), _named(arrays[1], axes[1]))
    if any(shapes[0][a] != shapes[1][a] for a in set(shapes[0]) & set(shapes[1])):
        return Case("ufuncs", text, call, Invalid("an axis has two sizes"))
    union = {**shapes[0], **shapes[1]}
    left, right = (jnp.asarray(_broadcast(a, x, union)) for a, x in zip(arrays, axes, strict=True))
    want = np.asarray(_reference(name)(left, right))
    return Case("ufuncs", text, call, Valid(want, tuple(union), _exact(want)))


NAMED_REDUCTIONS: dict[str, Callable[..., Any]] = {
    "std": jnp.std,
    "var": jnp.var,
    "mean": jnp.mean,
    "logsumexp": jax.scipy.special.logsumexp,
    "all": jnp.all,
    "any": jnp.any,
    "argmin": jnp.argmin,
    "softmax": jax.nn.softmax,
    "log_softmax": jax.nn.log_softmax,
}


@st.composite
def named_reductions(draw: Any) -> Case:
    shape = draw(named_shapes(1))
    axes = tuple(shape)
    values = _values(tuple(shape.values()), draw) / 2
    fname = draw(st.sampled_from(sorted(NAMED_REDUCTIONS)))
    axis = draw(st.sampled_from([*axes, "zz"]))
    text = f"tnp.{fname}(x{shape}, {axis!r})"
    call = lambda: getattr(tnp, fname)(_named(values, axes), axis)
    if axis not in shape:
        return Case("named_reductions", text, call, Invalid("no such axis"))
    want = np.asarray(NAMED_REDUCTIONS[fname](jnp.asarray(values), axis=axes.index(axis)))
    kept = axes if fname in ("softmax", "log_softmax") else tuple(a for a in axes if a != axis)
    return Case("named_reductions", text, call, Valid(want, kept, _exact(want)))


IMAGE_AXES = ("batch", "h", "w", "c")
KERNEL_AXES = ("kh", "kw", "c", "o")
PADDINGS = ["VALID", "SAME", 1, (1, 0), "FULL", -1]


def _pads(padding: Any, sizes: tuple[int, ...], window: tuple[int, ...], strides: tuple[int, ...]) -> Any:
    """Explicit (low, high) pairs per spatial dim for lax and NumPy, or None when ``padding`` is not one."""
    if padding in ("VALID", "SAME"):
        return lax.padtype_to_pads(sizes, window, strides, padding)
    if isinstance(padding, int) and padding >= 0:
        return [(padding, padding)] * len(sizes)
    if isinstance(padding, tuple):
        return [padding] * len(sizes)
    return None


def _pooled(values: np.ndarray, window: tuple[int, int], strides: tuple[int, int], pads: Any, average: bool) -> Any:
    """NumPy's pool over dims 1 and 2 of ``values`` (batch h w c): padded with max's identity or zeros."""
    if average:
        data = values.astype(np.float32)
        fill: Any = 0
    else:
        data = values
        fill = False if values.dtype == bool else -np.inf if values.dtype.kind == "f" else np.iinfo(values.dtype).min
    padded = np.pad(data, [(0, 0), pads[0], pads[1], (0, 0)], constant_values=fill)
    windows = np.lib.stride_tricks.sliding_window_view(padded, window, axis=(1, 2))[:, :: strides[0], :: strides[1]]
    if not average:
        return windows.max(axis=(-2, -1))
    mean = windows.sum(axis=(-2, -1)) / (window[0] * window[1])
    return mean.astype(values.dtype if values.dtype.kind == "f" else np.float32)


@st.composite
def windows(draw: Any) -> Case:
    sizes = dict(
        zip(IMAGE_AXES, (draw(st.integers(1, 2)), draw(st.integers(0, 6)), draw(st.integers(1, 6)), 2), strict=True)
    )
    window = (draw(st.sampled_from([1, 2, 3, 1, 2, 0])), draw(st.integers(1, 3)))
    strides = (draw(st.sampled_from([1, 2, 1, 2, 0])), draw(st.sampled_from([1, 2])))
    padding = draw(st.sampled_from([*PADDINGS[:4] * 3, *PADDINGS[4:]]))
    which = draw(st.sampled_from(["conv", "conv_transpose", "max_pool", "avg_pool"]))
    dtype = draw(st.sampled_from([np.float32, np.int32, np.int8, np.bool_] if "pool" in which else [np.float32]))
    values = _values(tuple(sizes.values()), draw, dtype)
    x = lambda: _named(values, IMAGE_AXES)
    pads = _pads(padding, (sizes["h"], sizes["w"]), window, strides) if 0 not in window + strides else None
    if "pool" in which:
        text = f"tnp.{which}(x{sizes} {np.dtype(dtype).name}, window {window}, strides {strides}, padding {padding!r})"
        call = lambda: getattr(tnp, which)(
            x(), {"h": window[0], "w": window[1]}, dict(zip("hw", strides, strict=True)), padding
        )
        spans = [sizes[a] + p[0] + p[1] for a, p in zip("hw", pads or [], strict=False)]
        short = [s < k and sizes[a] > 0 for a, s, k in zip("hw", spans, window, strict=False)]
        if pads is None or any(short):
            why = "a window of 0, a stride of 0, a bad padding or a window too long"
            return Case("windows", text, call, Invalid(why))
        if spans[0] < window[0]:  # an empty axis no window fits: empty, as lax makes it
            width = (spans[1] - window[1]) // strides[1] + 1
            dtype_out = values.dtype if which == "max_pool" or values.dtype.kind == "f" else np.float32
            return Case("windows", text, call, Valid(np.zeros((sizes["batch"], 0, width, 2), dtype_out), IMAGE_AXES))
        want = _pooled(values, window, strides, pads, which == "avg_pool")
        return Case("windows", text, call, Valid(want, IMAGE_AXES, exact=which == "max_pool"))
    kernel_dtype = draw(st.sampled_from([np.float32, np.int32]))  # mixed dtypes promote, as einsum's
    weights = _values((*window, 2, 3), draw, kernel_dtype)
    spatial = draw(st.sampled_from([{"h": "kh", "w": "kw"}] * 3 + [{"h": "kh", "w": "kh"}, {"h": "kh", "w": "zz"}]))
    kernel_text = f"kernel{window} {np.dtype(kernel_dtype).name}"
    text = f"tnp.{which}(x{sizes}, {kernel_text}, {spatial}, strides {strides}, padding {padding!r})"
    options = {"strides": dict(zip("hw", strides, strict=True)), "padding": padding}
    call = lambda: getattr(tnp, which)(x(), _named(weights, KERNEL_AXES), spatial, "c", **options)
    if spatial != {"h": "kh", "w": "kw"} or 0 in window + strides or pads is None:
        return Case(
            "windows", text, call, Invalid("a shared or missing window axis, a window or stride of 0, a bad padding")
        )
    common = jnp.result_type(values, weights)
    lhs, rhs = jnp.asarray(values, common), jnp.asarray(weights, common)
    numbers = ("NHWC", "HWIO", "NHWC")
    try:
        if which == "conv":
            want = lax.conv_general_dilated(lhs, rhs, strides, pads, dimension_numbers=numbers)
        else:
            given = padding if isinstance(padding, str) else pads
            want = lax.conv_transpose(lhs, rhs, strides, given, dimension_numbers=numbers)
    except Exception as error:  # lax's own refusal: the input is invalid whatever typed_xmap says
        return Case("windows", text, call, Invalid(f"lax refuses it: {type(error).__name__}"))
    if any(want.shape[1 + i] == 0 and sizes[a] for i, a in enumerate("hw")):
        # lax gives an empty axis for a non-empty one shorter than its window: typed_xmap names that axis
        return Case("windows", text, call, Invalid("a window longer than its padded axis"))
    return Case("windows", text, call, Valid(np.asarray(want), ("batch", "h", "w", "o")))


SELECTION_DTYPES = {
    "uint8": lambda v: (v + 4).astype(np.uint8),
    "int32": lambda v: np.where(v == 4, np.iinfo(np.int32).min, np.where(v == -4, np.iinfo(np.int32).max, v)).astype(
        np.int32
    ),
    "float32": lambda v: np.where(v == 3, np.nan, v).astype(np.float32),
    "bool": lambda v: v > 0,
}


def _descending(values: np.ndarray) -> np.ndarray:
    """lax.top_k's order along the last dim: largest first, NaN above every number, ties by lower index."""
    rank = values.astype(np.float64)
    if values.dtype.kind == "f":
        rank = np.where(np.isnan(values), np.inf, rank)
        nan = np.isnan(values)
    else:
        nan = np.zeros(values.shape, bool)
    index = np.broadcast_to(np.arange(values.shape[-1]), values.shape)
    return np.lexsort((index, -rank, ~nan), axis=-1)


@st.composite
def selection(draw: Any) -> Case:
    shape = {"a": draw(st.sampled_from([1, 2, 4])), "b": draw(st.integers(1, 4))}
    dtype = draw(st.sampled_from(sorted(SELECTION_DTYPES)))
    values = SELECTION_DTYPES[dtype](_values((shape["a"], shape["b"]), draw, np.int32))
    which = draw(st.sampled_from(["sort", "argsort", "top_k values", "top_k indices"]))
    axis = draw(st.sampled_from(["b", "b", "zz"]))
    k = draw(st.integers(0, 5))
    new = draw(st.sampled_from(["k", "k", "a"]))
    on_mesh = draw(st.booleans())
    text = f"tnp.{which}(x{shape} {dtype}, axis={axis!r}, k={k}, new_axis={new!r}){' on a 2x4 mesh' if on_mesh else ''}"

    def call() -> Any:
        with jax.set_mesh(jax.make_mesh((2, 4), ("data", "model"))) if on_mesh else contextlib.nullcontext():
            x = _named(values, ("a", "b"))
            if on_mesh:
                x = tx.shard(x, {"a": "data"} if shape["a"] % 2 == 0 else {})
            if which == "sort":
                return tnp.sort(x, axis)
            if which == "argsort":
                return tnp.argsort(x, axis)
            top, indices = tnp.top_k(x, k, axis=axis, new_axis=new)
            return top if which == "top_k values" else indices

    if axis != "b":
        return Case("selection", text, call, Invalid("no such axis"))
    if which == "sort":
        return Case("selection", text, call, Valid(np.sort(values, axis=1, kind="stable"), ("a", "b"), exact=True))
    if which == "argsort":
        return Case("selection", text, call, Valid(np.argsort(values, axis=1, kind="stable"), ("a", "b"), exact=True))
    if not 1 <= k <= shape["b"] or new == "a":
        return Case("selection", text, call, Invalid("k out of range, or a new axis the value has"))
    order = _descending(values)[:, :k]
    want = np.take_along_axis(values, order, axis=1) if which == "top_k values" else order
    return Case("selection", text, call, Valid(want, ("a", "k"), exact=True))


@st.composite
def draws(draw: Any) -> Case:
    which = draw(st.sampled_from(["randint", "categorical", "permutation", "bernoulli", "uniform"]))
    key = jax.random.key(draw(st.integers(0, 3)))
    if which in ("randint", "bernoulli", "uniform"):
        shape = draw(st.dictionaries(st.sampled_from(["a", "b"]), st.sampled_from([0, 1, 3, -1]), max_size=2))
        dtype = draw(st.sampled_from([jnp.int32, jnp.uint8, jnp.float32]))
        ordered = tuple(sorted(shape))
        dims = tuple(shape[a] for a in ordered)
        text = f"tx.random.{which}(key, {shape}{', ' + jnp.dtype(dtype).name if which == 'randint' else ''})"
        if which == "randint":
            call = lambda: tx.random.randint(key, shape, 0, 5, dtype)
            bad = not jnp.issubdtype(dtype, jnp.integer)
            reference = lambda: jax.random.randint(key, dims, 0, 5, dtype)
        elif which == "bernoulli":
            call = lambda: tx.random.bernoulli(key, 0.5, shape)
            bad, reference = False, lambda: jax.random.bernoulli(key, 0.5, dims)
        else:
            call = lambda: tx.random.uniform(key, shape)
            bad, reference = False, lambda: jax.random.uniform(key, dims)
        if bad or any(s < 0 for s in dims):
            return Case("draws", text, call, Invalid("a float dtype for integers, or a negative size"))
        want = np.asarray(reference())
        return Case("draws", text, call, Valid(want, ordered, exact=_exact(want)))
    shape = {"a": draw(st.integers(0, 3)), "b": draw(st.integers(1, 3))}
    dtype = draw(st.sampled_from([np.float32, np.float32, np.int32, np.bool_]))
    values = _values((shape["a"], shape["b"]), draw, dtype)
    axis = draw(st.sampled_from(["a", "b", "zz"]))
    text = f"tx.random.{which}(key, x{shape} {np.dtype(dtype).name}, {axis!r})"
    call = lambda: getattr(tx.random, which)(key, _named(values, ("a", "b")), axis)
    if axis not in shape:
        return Case("draws", text, call, Invalid("no such axis"))
    dim = ("a", "b").index(axis)
    if which == "permutation":
        order = np.asarray(jax.random.permutation(key, shape[axis]))
        return Case("draws", text, call, Valid(np.take(values, order, axis=dim), ("a", "b"), exact=True))
    if shape[axis] == 0 or dtype is not np.float32:
        return Case("draws", text, call, Invalid("an empty axis, or logits that are not floats"))
    want = np.asarray(jax.random.categorical(key, jnp.asarray(values), axis=dim))
    return Case("draws", text, call, Valid(want, tuple(a for a in ("a", "b") if a != axis), exact=True))


def _routed(logits: np.ndarray, k: int, capacity: int) -> tuple[np.ndarray, np.ndarray]:
    """GShard's routing in NumPy for one group (seq, expert): the dispatch and combine tables (seq, expert,
    slot). First choices first, then in token order; an expert takes at most ``capacity`` tokens."""
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs = probs / probs.sum(axis=1, keepdims=True)
    choices = _descending(probs.astype(np.float32))[:, :k]
    seq, experts = logits.shape
    dispatch = np.zeros((seq, experts, capacity), np.float32)
    combine = np.zeros((seq, experts, capacity), np.float32)
    taken = [0] * experts
    for j in range(k):
        for t in range(seq):
            e = choices[t, j]
            if taken[e] < capacity:
                dispatch[t, e, taken[e]] = 1.0
                combine[t, e, taken[e]] = probs[t, e]
            taken[e] += 1
    return dispatch, combine


@st.composite
def moe(draw: Any) -> Case:
    seq, experts = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    logits = _values((seq, experts), draw) / 2
    k = draw(st.one_of(st.integers(1, experts), st.integers(0, 5)))
    capacity = draw(st.one_of(st.integers(1, seq), st.sampled_from([-1, 0, seq + 1, 10**12])))
    tokens = draw(st.one_of(st.just("seq"), st.sampled_from([(), ("seq", "seq"), "zz", "expert"])))
    which = draw(
        st.sampled_from(["dispatch", "combine", "moe_dispatch", "moe_combine", "moe_dispatch of an expert axis"])
    )
    features = _values((seq, 2), draw)
    text = f"tx.moe_route(logits(seq={seq}, expert={experts}), {k}, {capacity}, tokens={tokens!r}) -> {which}"

    def call() -> Any:
        named = _named(logits, ("seq", "expert"))
        dispatch, combine, _ = tx.moe_route(named, k, capacity, tokens=tokens)
        if which == "dispatch":
            return dispatch
        if which == "combine":
            return combine
        x = _named(features, ("seq", "feat"))
        if which == "moe_dispatch of an expert axis":
            return tx.moe_dispatch(tx.broadcast_to(x, {"seq": seq, "feat": 2, "expert": experts}), dispatch)
        inputs = tx.moe_dispatch(x, dispatch)
        return inputs if which == "moe_dispatch" else tx.moe_combine(inputs * 2, combine)

    if tokens != "seq" or not 1 <= k <= experts or not 1 <= capacity <= seq:
        return Case(
            "moe", text, call, Invalid("no token axes, a token axis twice or missing, k or capacity out of range")
        )
    if which == "moe_dispatch of an expert axis":
        return Case("moe", text, call, Invalid("x has the table's expert axis: a diagonal"))
    dispatch, combine = _routed(logits, k, capacity)
    table = ("seq", "expert", "slot")
    if which in ("dispatch", "combine"):
        return Case("moe", text, call, Valid(dispatch if which == "dispatch" else combine, table))
    inputs = np.einsum("tf,tes->esf", features, dispatch)
    if which == "moe_dispatch":
        return Case("moe", text, call, Valid(inputs, ("expert", "slot", "feat")))
    return Case("moe", text, call, Valid(np.einsum("esf,tes->tf", inputs * 2, combine), ("seq", "feat")))


def _fitted(shape: tuple[int, ...], count: int) -> tuple[int, ...]:
    """The largest mesh of at most ``count`` devices whose sizes divide ``shape``'s, earlier axes larger on a
    tie: every combination when there are few, else (sizes and count powers of two) the greedy fill."""
    if len(shape) <= 5:
        divisors = [[d for d in range(1, s + 1) if s % d == 0] for s in shape]
        fitting = [c for c in itertools.product(*divisors) if math.prod(c) <= count]
        return max(fitting, key=lambda c: (math.prod(c), c))
    left, fitted = count, []
    for size in shape:
        fitted.append(min(size, left))
        left //= fitted[-1]
    return tuple(fitted)


@st.composite
def fitting_meshes(draw: Any) -> Case:
    many = draw(st.booleans())
    ints = [1, 2, 3, 4, 6, 8, np.int64(2), np.int32(4)]
    sizes = st.sampled_from([1, 2, 4, 8]) if many else st.sampled_from([*ints * 4, 0, True, 2.0])
    shape = tuple(draw(st.lists(sizes, min_size=6 if many else 1, max_size=16 if many else 4)))
    names: list[Any] = [f"m{i}" for i in range(len(shape))]
    fault = draw(st.sampled_from([None, None, None, "twice", "not a string", "one name short"]))
    if fault == "twice" and len(names) > 1:
        names[1] = names[0]
    elif fault == "not a string":
        names[0] = 3
    elif fault == "one name short":
        names = names[:-1]
    text = f"tx.fitting_mesh({shape!r}, {tuple(names)!r})"
    call = lambda: np.asarray(tuple(tx.fitting_mesh(shape, tuple(names)).shape.values()))
    bad_size = any(isinstance(s, bool | float) or s < 1 for s in shape)
    if (
        bad_size
        or len(set(names)) != len(names)
        or len(names) != len(shape)
        or not all(isinstance(n, str) for n in names)
    ):
        return Case("fitting_mesh", text, call, Invalid("a bad size, or a name twice, missing or not a string"))
    return Case("fitting_mesh", text, call, Valid(np.asarray(_fitted(tuple(int(s) for s in shape), 8)), (), exact=True))


HOST_MEMORY = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
HUGE = [10**6, 10**12, 2**40, 2**62]
SIZE_DTYPES: dict[str, list[Any]] = {
    "normal": [np.float32, np.float16, jnp.bfloat16],
    "randint": [np.int32, np.int8, np.uint8],
    "arange": [np.int32, np.float32],
}
"""The dtypes each call of the sizes family draws from (the others: any of ``FILL_DTYPES``)."""
FILL_DTYPES = [np.float32, np.float16, np.int8, np.int32, np.bool_]


@st.composite
def sizes(draw: Any) -> Case:
    """Sizes against what can be allocated: a value past the host's memory (8 emulated CPU devices share it)
    is a named error, never JAX's abort. Sizes are small, huge, zero (an empty value of a huge axis is
    nothing to allocate) or one element past the limit for the dtype drawn (its item size counts)."""
    which = draw(
        st.sampled_from(
            ["zeros", "full", "normal", "randint", "pad", "one_hot", "broadcast_to", "zeros_like", "arange"]
        )
    )
    dtype = np.dtype(draw(st.sampled_from(SIZE_DTYPES.get(which, FILL_DTYPES))))
    second = draw(st.sampled_from([0, 1, 2, 3, 10**6]))
    other = {"pad": 1, "broadcast_to": 2, "zeros_like": 2, "arange": 1}.get(which, max(second, 1))
    past = HOST_MEMORY // (dtype.itemsize * other) + 1  # one element more than the memory holds (or empty)
    first = draw(st.one_of(st.integers(1, 5), st.sampled_from([*HUGE, past])))
    small = _named(np.ones((2,), dtype), ("a",))
    key = jax.random.key(0)
    pair = {"a": first, "b": second}
    calls: dict[str, tuple[Callable[[], Any], dict[str, int], Any]] = {
        "zeros": (lambda: tnp.zeros(pair, dtype), pair, 0),
        "full": (lambda: tnp.full(pair, 2, dtype), pair, 2),
        "normal": (lambda: tx.random.normal(key, pair, dtype), pair, None),
        "randint": (lambda: tx.random.randint(key, pair, 0, 5, dtype), pair, None),
        "pad": (lambda: tnp.pad(small, {"a": (first, 0)}), {"a": first + 2}, None),
        "one_hot": (
            lambda: tnp.one_hot(tx.named(jnp.zeros(second, jnp.int32), ["seq"]), "v", first, dtype=dtype),
            {"seq": second, "v": first},
            None,
        ),
        "broadcast_to": (lambda: tx.broadcast_to(small, {"a": 2, "b": first}), {"a": 2, "b": first}, 1),
        "zeros_like": (lambda: tnp.zeros_like(small, dtype, new_axes={"b": first}), {"a": 2, "b": first}, 0),
        "arange": (lambda: tnp.arange("a", first, dtype=dtype), {"a": first}, None),
    }
    call, shape, fill = calls[which]
    text = f"{which} of named shape {shape}, {dtype.name}"
    itemsize = max(dtype.itemsize, 4) if which in ("normal", "randint") else dtype.itemsize  # a draw: 32-bit bits
    if math.prod(s for s in shape.values() if s) * itemsize > HOST_MEMORY:  # an empty value counts its other sizes
        return Case("sizes", text, call, Invalid("more than the devices' memory"))
    ordered = tuple(sorted(shape)) if which != "one_hot" else ("seq", "v")
    if fill is not None:
        want: Any = np.full([shape[a] for a in ordered], fill, dtype)
        return Case("sizes", text, call, Valid(want, ordered, exact=True))
    return Case(
        "sizes",
        text,
        lambda: tx.positional(call(), [*ordered]).shape,
        Valid(np.asarray([shape[a] for a in ordered]), (), exact=True),
    )


def _from_end(start: int, size: int) -> int:
    """A negative start counts from the end (lax.dynamic_slice's allow_negative_indices), then is clamped."""
    return start + size if start < 0 else start


@st.composite
def more_structure(draw: Any) -> Case:
    shape = draw(named_shapes(1, 2))
    axes = tuple(shape)
    values = _values(tuple(shape.values()), draw)
    x = lambda: _named(values, axes)
    name = draw(st.sampled_from([*axes, "zz"]))
    which = draw(
        st.sampled_from(
            [
                "stack",
                "split",
                "take",
                "where",
                "clip",
                "dynamic_slice",
                "dynamic_update_slice",
                "split_axis",
                "dot",
                "cumprod",
                "ones",
                "ones_like",
                "full_like",
            ]
        )
    )
    text = f"tnp.{which}(x{shape}, {name!r})"
    if which == "stack":
        new = draw(st.sampled_from(["s", *axes]))
        call = lambda: tnp.stack([x(), x() * 2], new)
        if new in shape:
            return Case("more_structure", f"tnp.stack([x{shape}, 2x], {new!r})", call, Invalid("the new axis exists"))
        return Case(
            "more_structure",
            f"tnp.stack([x{shape}, 2x], {new!r})",
            call,
            Valid(np.stack([values, values * 2]), (new, *axes)),
        )
    if which in ("where", "clip", "ones", "ones_like", "full_like"):
        if which == "where":
            call, want = (lambda: tnp.where(x() > 0, x(), -x())), np.abs(values)
        elif which == "clip":
            call, want = (lambda: tnp.clip(x(), -1.0, 2.0)), np.clip(values, -1.0, 2.0)
        elif which == "ones":
            call, want = (lambda: tnp.ones(shape)), np.ones_like(values)
            axes = tuple(sorted(shape))
            want = np.ones([shape[a] for a in axes], np.float32)
        elif which == "ones_like":
            call, want = (lambda: tnp.ones_like(x())), np.ones_like(values)
        else:
            call, want = (lambda: tnp.full_like(x(), 3.0)), np.full_like(values, 3.0)
        return Case("more_structure", f"tnp.{which}(x{shape})", call, Valid(want, axes))
    dim = axes.index(name) if name in shape else -1
    if which == "dot":
        call = lambda: tnp.dot(x(), x(), axis=name)
        if dim < 0:
            return Case("more_structure", text, call, Invalid("no such axis"))
        return Case(
            "more_structure", text, call, Valid((values * values).sum(axis=dim), tuple(a for a in axes if a != name))
        )
    if which == "cumprod":
        call = lambda: tnp.cumprod(x(), name)
        if dim < 0:
            return Case("more_structure", text, call, Invalid("no such axis"))
        return Case("more_structure", text, call, Valid(np.cumprod(values, axis=dim), axes))
    if which == "split":
        sections = draw(st.sampled_from([1, 2, 3]))
        call = lambda: tnp.concatenate([p * (i + 1) for i, p in enumerate(tnp.split(x(), name, sections))], name)
        text = f"tnp.split(x{shape}, {name!r}, {sections})"
        if dim < 0 or shape[name] % sections:
            return Case("more_structure", text, call, Invalid("no such axis, or sections do not divide it"))
        parts = np.split(values, sections, axis=dim)
        return Case(
            "more_structure",
            text,
            call,
            Valid(np.concatenate([p * (i + 1) for i, p in enumerate(parts)], axis=dim), axes),
        )
    if which == "take":
        ids = np.asarray(draw(st.lists(st.integers(0, 3), min_size=1, max_size=3)), np.int32)
        call = lambda: tnp.take(x(), tx.named(jnp.asarray(ids), ["k"]), name)
        text = f"tnp.take(x{shape}, ids{ids.tolist()} over k, {name!r})"
        if dim < 0:
            return Case("more_structure", text, call, Invalid("no such axis"))
        clamped = np.clip(ids, 0, shape[name] - 1)  # x[{axis: ids}]'s rule, JAX's gathers': out of bounds clamps
        taken = np.moveaxis(np.take(values, clamped, axis=dim), dim, 0)
        return Case("more_structure", text, call, Valid(taken, ("k", *(a for a in axes if a != name))))
    if which == "split_axis":
        parts = {"p": draw(st.sampled_from([1, 2, 3])), "q": draw(st.sampled_from([1, 2]))}
        call = lambda: tx.split_axis(x(), name, parts)
        text = f"tx.split_axis(x{shape}, {name!r}, {parts})"
        if dim < 0 or parts["p"] * parts["q"] != shape[name] or any(p in shape for p in parts):
            return Case("more_structure", text, call, Invalid("no such axis, or the parts do not multiply to it"))
        rest = tuple(a for a in axes if a != name)
        moved = _order(values, axes, (name, *rest)).reshape(parts["p"], parts["q"], *[shape[a] for a in rest])
        return Case("more_structure", text, call, Valid(moved, ("p", "q", *rest)))
    start = draw(st.integers(-1, 3))
    size = draw(st.integers(0, 3))
    if which == "dynamic_slice":
        call = lambda: tnp.dynamic_slice(x(), {name: start}, {name: size})
        text = f"tnp.dynamic_slice(x{shape}, {{{name!r}: {start}}}, {{{name!r}: {size}}})"
        if dim < 0 or size > shape[name]:
            return Case("more_structure", text, call, Invalid("no such axis, or a slice longer than it"))
        begin = min(max(_from_end(start, shape[name]), 0), shape[name] - size)  # lax clamps the start
        index = (slice(None),) * dim + (slice(begin, begin + size),)
        return Case("more_structure", text, call, Valid(values[index], axes))
    update_size = min(size, shape.get(name, 1))
    update = _values(tuple(update_size if a == name else shape[a] for a in axes), draw)
    call = lambda: tnp.dynamic_update_slice(x(), _named(update, axes), {name: start})
    text = f"tnp.dynamic_update_slice(x{shape}, update{update.shape}, {{{name!r}: {start}}})"
    if dim < 0:
        return Case("more_structure", text, call, Invalid("no such axis"))
    begin = min(max(_from_end(start, shape[name]), 0), shape[name] - update_size)
    want = values.copy()
    index = (slice(None),) * dim + (slice(begin, begin + update_size),)
    want[index] = update
    return Case("more_structure", text, call, Valid(want, axes))


@st.composite
def segments(draw: Any) -> Case:
    """tnp.segment_sum / segment_max against a NumPy loop, off and on a mesh; bad ids, counts and axes."""
    which = draw(st.sampled_from(["segment_sum", "segment_max"]))
    shape = {"edge": draw(st.integers(1, 6)), "f": draw(st.sampled_from([1, 2, 4]))}
    count = draw(st.sampled_from([1, 3, 4, 0, -1]))
    ids = np.array(draw(st.lists(st.integers(-1, 4), min_size=shape["edge"], max_size=shape["edge"])), np.int32)
    float_ids = draw(st.booleans()) and draw(st.booleans())
    axis = draw(st.sampled_from(["edge", "edge", "f", "zz"]))
    new = draw(st.sampled_from(["node", "node", "f"]))
    on_mesh = draw(st.booleans())
    values = _values((shape["edge"], shape["f"]), draw)
    text = (
        f"tnp.{which}(x{shape}, ids={ids.tolist()}{' as float' if float_ids else ''}, {count}, axis={axis!r}, "
        f"new_axis={new!r}){' on a 2x4 mesh' if on_mesh else ''}"
    )

    def call() -> Any:
        with jax.set_mesh(jax.make_mesh((2, 4), ("data", "model"))) if on_mesh else contextlib.nullcontext():
            x = _named(values, ("edge", "f"))
            if on_mesh and shape["f"] % 2 == 0:
                x = tx.shard(x, {"f": "data"})
            segment_ids = tx.named(jnp.asarray(ids, jnp.float32 if float_ids else jnp.int32), ["edge"])
            return getattr(tnp, which)(x, segment_ids, count, axis=axis, new_axis=new)

    if axis != "edge" or new == "f" or float_ids or count < 1:
        return Case(
            "segments", text, call, Invalid("an axis the value lacks, a new axis it has, float ids or a bad count")
        )
    lowest = np.float32(-np.inf)
    want = np.full((count, shape["f"]), 0.0 if which == "segment_sum" else lowest, np.float32)
    for i, segment in enumerate(ids):
        if 0 <= segment < count:
            want[segment] = (
                want[segment] + values[i] if which == "segment_sum" else np.maximum(want[segment], values[i])
            )
    return Case("segments", text, call, Valid(want, ("node", "f")))


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
    "ufuncs": ufuncs(),
    "named_reductions": named_reductions(),
    "windows": windows(),
    "selection": selection(),
    "draws": draws(),
    "moe": moe(),
    "fitting_mesh": fitting_meshes(),
    "sizes": sizes(),
    "more_structure": more_structure(),
    "segments": segments(),
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


# -- what the families cover: every public name, or a reason it is not fuzzed ------------------------------

RANDOM = "random."
COVERS: dict[str, set[str]] = {
    "conversions": {"named", "positional"},
    "xmap": {"xmap"},
    "updates": set(),  # NamedArray's x.at[...] methods: no public name of its own
    "indexing": set(),  # NamedArray's x[...]
    "binary": {"maximum"},
    "reduction": {"sum", "mean", "max", "min", "prod", "argmax"},
    "constructor": {"zeros", "full", "arange", "one_hot", "causal_mask"},
    "structure": {"rename", "broadcast_to", "cumsum", "roll", "merge_axes", "concatenate"},
    "einsum": {"einsum"},
    "spec": {"NamedArray", "f32"},
    "transforms": {"vmap", "scan", "stack", "concatenate"},
    "random": {RANDOM + "normal", RANDOM + "uniform"},
    "sharding": {"shard", "constrain", "resources_of"},
    "typed": {"typed", "NamedArray", "f32", "NamedShapeError"},
    "ufuncs": set(tnp.UFUNC_NAMES),
    "named_reductions": set(NAMED_REDUCTIONS),
    "windows": {"conv", "conv_transpose", "max_pool", "avg_pool"},
    "selection": {"sort", "argsort", "top_k"},
    "draws": {RANDOM + n for n in ("randint", "categorical", "permutation", "bernoulli", "uniform")},
    "moe": {"moe_route", "moe_dispatch", "moe_combine", "broadcast_to"},
    "fitting_mesh": {"fitting_mesh"},
    "sizes": {"zeros", "full", "pad", "one_hot", "broadcast_to", "zeros_like", "arange", RANDOM + "normal"},
    "more_structure": {
        *("stack", "split", "take", "where", "clip", "dynamic_slice", "dynamic_update_slice", "split_axis"),
        *("dot", "cumprod", "ones", "ones_like", "full_like", "concatenate", RANDOM + "randint"),
    },
    "segments": {"segment_sum", "segment_max", "named"},
}
"""The public names each family calls (``typed_xmap``'s, ``typed_xmap.numpy``'s, ``random.`` + the random
module's); tests/test_fuzz_campaign.py holds every public name to this table or to ``NOT_FUZZED``."""

_MARKERS = ("bf16", "bool_", "c64", "f16", "f64", "i8", "i16", "i32", "i64", "u8", "u32", "Float", "Int", "Num")
NOT_FUZZED: dict[str, str] = {
    **{m: "a dtype marker of NamedArray[...] annotations (tests/test_typed.py checks each)" for m in _MARKERS},
    "Shaped": "a dtype marker of NamedArray[...] annotations (tests/test_typed.py)",
    "AnyNamedArray": "a type alias for annotations, no run-time behaviour",
    "AxisResourceConflict": "an exception class: the sharding family meets it",
    "NamedShapeSyntaxError": "an exception class: the spec family meets it",
    "UnboundAxisError": "an exception class (tests/test_xmap_tnp.py)",
    "XmapFunction": "the type xmap returns: the xmap family calls it",
    "SerialLoop": "the type serial_loop returns (tests/test_xmap_errors.py)",
    "serial_loop": "a loop resource of xmap's axis_resources (tests/test_xmap_errors.py, tests/test_xmap_mesh.py)",
    "ImportHook": "installs @tx.typed on a package at import (tests/test_import_hook.py)",
    "install_import_hook": "installs @tx.typed on a package at import (tests/test_import_hook.py)",
    "visualize": "prints a placement picture (tests/test_display.py)",
    "random": "the module: its functions are listed one by one",
    "UFUNC_NAMES": "the list of elementwise names: the ufuncs family draws from it",
}


def public_names() -> set[str]:
    """Every public name: ``typed_xmap``'s, ``typed_xmap.numpy``'s and (``random.``-prefixed) the random module's."""
    return {*tx.__all__, *tnp.__all__, *(RANDOM + n for n in tx.random.__all__)}


def _isolated(count: int, budget: float) -> Tally:
    """Each family in a process of its own: an abort (SIGABRT) is a crash of that family, not the campaign's end.
    A family may use what is left of ``budget`` but a floor kept for each family after it (half an even share):
    a cheap family ends at ``count`` cases long before its time is out, and a costly one (each case compiles)
    takes that time instead of stopping at an even share's end."""
    tally = Tally()
    deadline = time.monotonic() + budget
    floor = budget / (2 * len(FAMILIES))
    for i, family in enumerate(FAMILIES):
        share = max(deadline - time.monotonic() - floor * (len(FAMILIES) - i - 1), floor)
        command = [sys.executable, __file__, str(count), str(share), "--family", family]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode or not lines:
            tally.by_family.setdefault(family, Counter())["crash"] += 1
            tally.counts["crash"] += 1
            tally.examples.setdefault("crash", []).append(f"[{family}] exit {done.returncode}: {done.stderr[-200:]}")
            continue
        part = json.loads(lines[-1])
        tally.by_family[family] = Counter(part["counts"])
        tally.counts.update(part["counts"])
        for outcome, cases in part["examples"].items():
            tally.examples.setdefault(outcome, []).extend(cases)
    return tally


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    budget = float(sys.argv[2]) if len(sys.argv) > 2 else 600.0
    started = time.monotonic()
    if "--family" in sys.argv:
        name = sys.argv[sys.argv.index("--family") + 1]
        part = run(count, budget, {name: FAMILIES[name]})
        print(json.dumps({"counts": dict(part.counts), "examples": part.examples}))
    else:
        result = _isolated(count, budget)
        print(result.report())
        print(f"{sum(result.counts.values())} cases in {time.monotonic() - started:.0f} s")
