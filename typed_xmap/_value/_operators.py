"""The NamedArray's operators (broadcasting by name), its conversions to Python scalars, the conversions that
would lose its names (refused with the fix), and what JAX gets when it takes one for an array: installed on
the class when the package is imported."""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from .._algebra import OPERATORS, ErrorKind, NamedShapeError, OperatorKind, format_axis_list
from ._compat import on_abstractify
from ._layout import apply_elementwise
from ._named_array import NamedArray, holds_array, wrap
from ._printing import shape_repr
from ._tracebacks import entry_point

__all__: list[str] = []


# -- the conversions that would lose the names: each refused with the fix -------------------------------
def _array(self: NamedArray, *args: Any, **kwargs: Any) -> Any:
    if not self.axes and not self.mapped:  # positional dims only: nothing to lose
        return np.asarray(self.data, *args, **kwargs)
    raise TypeError(
        f"cannot convert {shape_repr(self)} to a positional array implicitly: the order of its named axes is "
        f"not part of its value. Fix: tx.positional(x, {format_axis_list(self.axes)})"
    )


def _jax_array(self: NamedArray) -> Any:
    """``jnp.exp(x)``, ``jnp.asarray(x)``: a clear error pointing at ``tnp`` (jnp would drop the names).

    jax's own operators call this too before deferring (``jnp.ones(3) * x``); for them this returns the
    NamedArray itself, which they do not accept, so Python calls our reflected operator."""
    if not self.axes and not self.mapped:  # positional dims only (a loss reduced over every axis)
        return self.data
    caller = sys._getframe(1).f_code
    if caller.co_name.startswith(("_operator_", "deferring")) and caller.co_filename.endswith("array_methods.py"):
        return self
    raise NamedShapeError(
        f"a jax.numpy function got {shape_repr(self)}: jnp works on positional arrays and would drop its "
        f"named axes. Fix: use typed_xmap.numpy (tnp.exp(x), tnp.sum(x, 'batch'), ...), or "
        f"tx.positional(x, {format_axis_list(self.axes + tuple(n for n, _ in self.mapped))}) for a "
        f"positional array",
        kind=ErrorKind.INVALID_ARGUMENT,
    )


def _iter(self: NamedArray) -> Any:
    raise TypeError(f"cannot iterate over {shape_repr(self)}. Fix: tx.positional(x, ...) first")


def _matmul(self: NamedArray, other: Any) -> Any:
    raise TypeError(
        "`@` is ambiguous for NamedArrays: say which axes to contract. "
        "Fix: tnp.einsum('{in},{in,out}->{out}', x, w) or tnp.dot(x, w, axis='in')"
    )


for _name, _method in (
    ("__array__", _array),
    ("__jax_array__", _jax_array),
    ("__iter__", _iter),
    ("__matmul__", _matmul),
    ("__rmatmul__", _matmul),
):
    setattr(NamedArray, _name, _method)


_LABELS = ("the left operand", "the right operand")


def _python_operator(name: str) -> Callable[..., Any]:
    """``operator.add`` for ``add``, ``operator.and_`` for ``and``."""
    return getattr(operator, name if hasattr(operator, name) else name + "_")  # type: ignore[no-any-return]  # operator's functions


def _binary(fn: Callable[[Any, Any], Any], symbol: str, reflected: bool) -> Callable[[Any, Any], Any]:
    operation = f"`x {symbol} y`"

    def method(self: NamedArray, other: Any) -> Any:
        if reflected:
            return apply_elementwise(fn, (other, self), operation=operation, operands=_LABELS)
        return apply_elementwise(fn, (self, other), operation=operation, operands=_LABELS)

    return method


def _unary(fn: Callable[[Any], Any]) -> Callable[[NamedArray], NamedArray]:
    def method(self: NamedArray) -> NamedArray:
        return wrap(fn(self.data), self.axes, self.mapped)

    return method


def _leaf_comparison(array_method: Callable[[Any, Any], Any], equal: bool) -> Callable[[Any, Any], Any]:
    """``==``/``!=`` by name for arrays; for a NamedArray holding a leaf (``holds_array``), by its leaf and names."""

    def method(self: NamedArray, other: Any) -> Any:
        other_leaf = type(other) is NamedArray and not holds_array(other.data)
        if holds_array(self.data):
            return array_method(self, other) if not other_leaf else not equal
        if type(other) is NamedArray:
            same = other_leaf and set(self.axes) == set(other.axes) and set(self.mapped) == set(other.mapped)
            return bool(same and self.data == other.data) == equal
        return self.data == other if equal else self.data != other

    return method


def _install_operators() -> None:
    """Every operator of the table of operations (``typed_xmap._algebra``), broadcasting by name."""
    for op in OPERATORS.values():
        fn = _python_operator(op.name)
        if op.kind is OperatorKind.UNARY:
            setattr(NamedArray, f"__{op.name}__", entry_point(_unary(fn)))
            continue
        method = _binary(fn, op.symbol, reflected=False)
        if op.name in ("eq", "ne"):
            method = _leaf_comparison(method, equal=op.name == "eq")
        setattr(NamedArray, f"__{op.name}__", entry_point(method))
        if op.kind is OperatorKind.BINARY:
            setattr(NamedArray, f"__r{op.name}__", entry_point(_binary(fn, op.symbol, reflected=True)))


_install_operators()


def _scalar_data(x: NamedArray, conversion: str, reduction: str) -> Any:
    """The data, for Python's conversions to a scalar: a value with named axes has no one scalar."""
    names = x.axes + tuple(name for name, _ in x.mapped)
    if names and holds_array(x.data):
        raise NamedShapeError(
            f"{conversion} of {shape_repr(x)} is ambiguous: it has named axes. "
            f"Fix: reduce them first, e.g. tnp.{reduction}(x, {names!r})",
            kind=ErrorKind.AXIS_MISSING,
        )
    return x.data


def _conversion(to: Callable[[Any], Any], conversion: str, reduction: str) -> Callable[[NamedArray], Any]:
    def method(self: NamedArray) -> Any:
        return to(_scalar_data(self, conversion, reduction))

    method.__name__ = f"__{to.__name__}__"
    return method


def _format(self: NamedArray, spec: str) -> str:
    """``f"{loss:.3f}"`` formats the scalar (no named axes); ``f"{x}"`` is ``str(x)``, as for any object."""
    if not spec:
        return str(self)
    return format(_scalar_data(self, f"format(x, {spec!r})", "sum"), spec)


def _install_conversions() -> None:
    """``bool``, ``float``, ``int``, ``complex`` and ``format`` of a value with no named axes (a reduced loss)."""
    for to, conversion, reduction in (
        (bool, "the truth value", "all"),
        (float, "float()", "sum"),
        (int, "int()", "sum"),
        (complex, "complex()", "sum"),
    ):
        setattr(NamedArray, f"__{to.__name__}__", _conversion(to, conversion, reduction))
    setattr(NamedArray, "__format__", _format)  # noqa: B010  # assigning a method mypy would reject


_install_conversions()


def _abstractify(x: NamedArray, caller: str) -> Any:
    """What JAX gets when it takes ``x`` for a positional array: our error, saying what to give it instead.

    ``jax.grad`` checks its output in ``_check_scalar``, which turns any error into its own ``TypeError``: that
    check is answered with a scalar, so the error comes when grad builds the output's cotangent (``_one_vjp``)."""
    names = x.axes + tuple(n for n, _ in x.mapped)
    if caller == "_check_scalar":
        return jax.typeof(jax.ShapeDtypeStruct((), x.dtype))
    if caller == "_one_vjp" and not names:
        raise NamedShapeError(
            f"jax.grad (and value_and_grad) differentiates a function that returns a positional scalar, and this "
            f"one returned {shape_repr(x)}. Fix: return tx.positional(loss, []) (a NamedArray with no named axes "
            f"as a positional scalar)",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    if caller == "_one_vjp":
        raise NamedShapeError(
            f"jax.grad (and value_and_grad) differentiates a function that returns a positional scalar, and this "
            f"one returned {shape_repr(x)}, which still has named axes {names!r}. Fix: reduce them "
            f"(tnp.sum(loss, {names!r})), then return tx.positional(loss, [])",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    raise NamedShapeError(
        f"JAX took {shape_repr(x)} for a positional array (a jax.lax function, or a JAX function that reads its "
        f"argument's shape and dtype) and would drop its named axes. Fix: pass "
        f"tx.positional(x, {format_axis_list(names)}) for a positional array, or use a typed_xmap.numpy function",
        kind=ErrorKind.INVALID_ARGUMENT,
    )


on_abstractify(NamedArray, _abstractify)
