"""``@tx.typed``: check a function's ``NamedArray`` parameters and return with beartype, binding sizes.

beartype checks each parameter; our annotation classes bind every axis name and positional symbol to
one size in a per-call memo, so ``x: NamedArray[f32, "batch in"]`` and ``y: NamedArray[f32, "batch"]``
must agree on ``batch``. A violation becomes a ``NamedShapeError`` naming the parameter, the axis, the
sizes and the bindings so far. Under ``jax.jit`` the check runs once, while tracing.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from beartype import beartype
from beartype.door import is_bearable
from beartype.roar import BeartypeCallHintParamViolation

from .._algebra import Binding, ErrorKind, Mismatch, NamedShapeError, format_named_shape
from .._value._named_array import NamedArray
from .._value._printing import shape_repr
from .._value._tracebacks import entry_point
from ._annotations import NamedArrayHint, call_state, mentions_named_array
from ._containers import Failure, container_check, holds_named_arrays
from ._layout_cache import ANYTHING, CLASS, NAMED, cached_wrapper, signature_source

__all__ = ["check_named_hints", "typed"]

F = TypeVar("F", bound=Callable[..., Any])


def _parameter_checker(
    fn: Callable[..., Any], signature: inspect.Signature, hints: dict[str, Any]
) -> Callable[..., None]:
    """A beartype-checked function with ``fn``'s signature and parameter hints, and an empty body."""
    parameters, namespace = signature_source(list(signature.parameters.values()))
    exec(f"def checker({parameters}): pass", namespace)
    checker: Callable[..., None] = namespace["checker"]
    checker.__name__ = getattr(fn, "__name__", "checker")
    checker.__annotations__ = {k: v for k, v in hints.items() if k != "return"}
    checker.__qualname__ = fn.__qualname__
    checker.__module__ = fn.__module__
    return beartype(checker)


def _mismatch_error(where: str, hint: Any, value: Any, memo: dict[str, Binding]) -> NamedShapeError:
    """Why ``value`` failed ``hint``, from the failure the annotation class recorded."""
    bound = format_named_shape(memo) if memo else "none"
    failure = call_state.failure  # reset by the caller just before re-checking ``value``
    name = hint.__name__ if isinstance(hint, type) else repr(hint)
    fix = "pass a value that fits the annotation, or correct the annotation"
    if failure is not None:
        failed_hint, failed_value, mismatch = failure
        why, kind, fix = mismatch.reason, mismatch.kind, mismatch.fix or fix
        if failed_value is not value:  # an element of a container (a tuple return, say)
            why = f"its element {_shown(failed_value)} does not match {failed_hint.__name__}: {why}"
        else:
            name = failed_hint.__name__
    elif _array_hint(hint):
        why, kind = f"it is {_article(type(value).__name__)}, not a NamedArray", ErrorKind.INVALID_ARGUMENT
        if hasattr(value, "shape"):
            fix = "name its dims with tx.named(array, axes)"
    else:
        why, kind = "one of its parts is not a NamedArray", ErrorKind.INVALID_ARGUMENT
    return NamedShapeError(
        f"{where} is {_shown(value)}, which does not match {name}: {why}. Axis bindings so far in this call: {bound}. "
        f"Fix: {fix}",
        kind=kind,
    )


def typed(fn: F) -> F:
    """Check ``fn``'s ``NamedArray[...]`` parameters and return value on every call.

    When at least one hint is a ``NamedArray[...]`` and every other a plain class or ``Any``, the verdict
    depends only on each value's layout (named axes, shape, dtype) or type, so a call beartype has accepted
    once is accepted again from a cache (``_layout_cache``).

    Args:
        fn: a function whose parameters or return are annotated with ``NamedArray[dtype, "axes"]`` (also inside
            containers, ``TypedDict``s and ``NamedTuple``s).

    Returns:
        ``fn`` wrapped: the same signature, each call checked (under ``jax.jit`` once, while tracing).

    Raises:
        NamedShapeError: at a call, a value that does not fit its annotation, or an axis bound to two sizes
            across the arguments and the return; the message names the parameter, the axis and the sizes.

    Examples:
        >>> @tx.typed
        ... def scale(
        ...     x: NamedArray[f32, "batch features"], s: NamedArray[f32, "features"]
        ... ) -> NamedArray[f32, "batch features"]:
        ...     return x * s
        >>> x = tx.named(jnp.ones((2, 3)), ["batch", "features"])
        >>> scale(x, tx.named(jnp.ones(3), ["features"])).named_shape == {'batch': 2, 'features': 3}
        True
    """
    return _checked(fn, _defining_frame(), named_only=False)


def check_named_hints(fn: F) -> F:
    """``typed``, checking only the hints that mention ``NamedArray[...]`` (for xmap bodies, which trace)."""
    return _checked(fn, _defining_frame(), named_only=True)


_BOUNDARY_FILE = entry_point(lambda: None).__code__.co_filename
"""Where the entry-point wrapper that public names are reached through (``tx.typed``) is defined."""


def _defining_frame() -> Any:
    """The frame that applied the decorator (the caller of ``typed``), past the entry-point wrapper, whose
    frame holds none of the defining scope's names that string annotations may refer to."""
    frame = sys._getframe(2)
    while frame.f_back is not None and frame.f_code.co_filename == _BOUNDARY_FILE:
        frame = frame.f_back
    return frame


def _checked(fn: F, caller: Any, *, named_only: bool) -> F:
    qualname = getattr(fn, "__qualname__", repr(fn))
    # [hints, parameter checker, return check or None, the layout-cached wrapper or None, containers]
    plan: list[Any] = _Plan()
    # String annotations (PEP 563) may name things local to the defining scope: keep that scope.
    local_names = _Scope(caller.f_locals) if caller.f_code.co_name != "<module>" else None

    signature = inspect.signature(fn)
    resolved: dict[str, Any] = {}  # the hints, once resolved: they pickle with the function, its scope does not

    def prepare() -> list[Any]:
        if not resolved:
            resolved.update(typing.get_type_hints(fn, localns=local_names, include_extras=True))
        hints = {name: runtime_hint(hint) for name, hint in resolved.items()}
        if named_only:
            hints = {name: hint for name, hint in hints.items() if mentions_named_array(hint)}
        kinds = {name: _hint_kind(hint) for name, hint in hints.items()}
        cacheable = any(kind == NAMED for kind in kinds.values()) and all(kind is not None for kind in kinds.values())
        # Hints holding NamedArrays in containers: checked in full here, beartype only samples them.
        containers = {n: container_check(h) for n, h in hints.items() if holds_named_arrays(h) and not _named_hint(h)}
        returned = containers.pop("return", None)
        checked_hints = {n: (object if n in containers else h) for n, h in hints.items()}
        return_check = None if returned is not None else _return_check(hints)
        cached = cached_wrapper(fn, signature, hints, kinds, checked_call, check_result) if cacheable else None
        # one assignment: a thread making a first call meanwhile sees an empty plan or a whole one
        plan[:] = [
            hints,
            _parameter_checker(fn, signature, checked_hints),
            return_check,
            cached,
            (containers, returned, signature),
        ]
        return plan

    state = call_state

    def checked_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, dict[str, Binding]]:
        """beartype checks the parameters, then ``fn`` runs, then its return value is checked."""
        hints, check_parameters = (plan or prepare())[:2]  # prepared again after unpickling
        outer = state.memo
        memo: dict[str, Binding] = {}
        state.memo = memo
        try:
            try:
                check_parameters(*args, **kwargs)
            except BeartypeCallHintParamViolation as violation:
                raise _parameter_error(fn, qualname, hints, args, kwargs, memo) or violation from None
            if plan[4][0]:
                _check_containers(qualname, plan[4], args, kwargs, memo)
        finally:
            state.memo = outer
        result = fn(*args, **kwargs)
        check_result(result, memo)
        return result, memo

    def check_result(result: Any, bindings: dict[str, Binding]) -> None:
        hints, check_return = (plan or prepare())[0:3:2]
        if check_return is None:
            if plan[4][1] is not None:
                _check_returned_container(qualname, plan[4][1], result, bindings)
            return
        outer = state.memo
        state.memo = memo = dict(bindings)
        try:
            if not check_return(result):
                raise _return_error(qualname, hints["return"], result, memo)
        finally:
            state.memo = outer

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        cached = (plan or prepare())[3]
        return checked_call(args, kwargs)[0] if cached is None else cached(*args, **kwargs)

    with contextlib.suppress(NameError):  # a forward reference not defined yet: resolve on the first call
        prepare()
    # the usual case: calls go straight to the layout-cached wrapper (it has fn's name and signature)
    return typing.cast(F, plan[3] if plan and plan[3] is not None else wrapper)


class _PickledEmpty:
    """A typed function's plan or defining scope pickles empty (cloudpickle pickles a local typed function by
    value): beartype's checkers and the caller's locals do not travel; the plan is made again on first call."""

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return type(self), ()


class _Plan(_PickledEmpty, list):  # type: ignore[type-arg]
    pass


class _Scope(_PickledEmpty, dict):  # type: ignore[type-arg]
    pass


def runtime_hint(hint: Any) -> Any:
    """``hint`` as it is checked at run time: a plain ``Protocol`` (not ``@runtime_checkable``) is ``object``,
    unchecked (``isinstance`` refuses it, so beartype cannot check it; a static checker does), wherever it
    sits in the hint (``Model | None``, ``list[Model]``); everything else as written."""
    if isinstance(hint, type) and getattr(hint, "_is_protocol", False):
        return hint if getattr(hint, "_is_runtime_protocol", False) or hint is typing.Protocol else object
    args = typing.get_args(hint)
    if not args or _named_hint(hint):
        return hint
    checked = tuple(runtime_hint(a) for a in args)
    if checked == args:
        return hint
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return typing.Union[checked]  # noqa: UP007  # the args are a tuple built at run time
    if origin is typing.Annotated:
        return typing.Annotated[(checked[0], *hint.__metadata__)]
    if isinstance(hint, types.GenericAlias) and origin is not None:
        return types.GenericAlias(origin, checked)
    copy = getattr(hint, "copy_with", None)
    return copy(checked) if copy is not None else hint


def _hint_kind(hint: Any) -> str | None:
    """How the layout cache treats a hint: ``NAMED`` (by layout), ``CLASS`` (by type), ``ANYTHING`` (no
    check), ``None`` (only beartype knows: no cache)."""
    if _named_hint(hint):
        # a placement ("batch@data") depends on a concrete value's sharding, which its layout does not hold
        return None if hint.placement else NAMED
    if holds_named_arrays(hint):  # a container or a dataclass of NamedArrays: checked in full on every call
        return None
    if hint is Any or hint is object:
        return ANYTHING
    if type(hint) is type and not getattr(hint, "_is_protocol", False):  # a plain class: beartype's isinstance
        return CLASS
    return None


def _return_check(hints: dict[str, Any]) -> Callable[[Any], bool] | None:
    """A fast predicate for the return hint: ``isinstance`` for a class, else beartype's."""
    if "return" not in hints:
        return None
    hint = hints["return"]
    if isinstance(hint, type):
        return lambda value: isinstance(value, hint)
    return lambda value: is_bearable(value, hint)


def _named_hint(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, NamedArrayHint)


def _array_hint(hint: Any) -> bool:
    """``NamedArray[...]`` or a bare ``NamedArray`` (any dtype, any named shape): a value that is not a
    NamedArray gets the named-shape message, not beartype's."""
    return hint is NamedArray or _named_hint(hint)


def _parameter_error(
    fn: Callable[..., Any], qualname: str, hints: dict[str, Any], args: Any, kwargs: Any, memo: dict[str, Binding]
) -> NamedShapeError | None:
    """Find the parameter that failed, re-checking in order with a fresh memo."""
    signature = inspect.signature(fn)
    bound = signature.bind(*args, **kwargs)
    memo.clear()
    for name, value in bound.arguments.items():
        hint = hints.get(name)
        if hint is None:
            continue
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:  # the hint is each element's
            checks = [(f"{qualname}() argument {name}[{i}]", item) for i, item in enumerate(value)]
        elif kind is inspect.Parameter.VAR_KEYWORD:
            checks = [(f"{qualname}() argument {name}[{key!r}]", item) for key, item in value.items()]
        else:
            checks = [(f"{qualname}() parameter {name!r}", value)]
        for where, item in checks:
            call_state.failure = None
            before = dict(memo)
            if is_bearable(item, hint):
                continue
            if _array_hint(hint) or call_state.failure is not None:
                return _mismatch_error(where, hint, item, before)
            return None  # not a named-shape problem: beartype's own message is the right one
    return None


def _recorded_failure() -> tuple[Any, Any, Mismatch] | None:
    """The failure an annotation class recorded during the last check (read after the check runs)."""
    return call_state.failure


def _return_error(qualname: str, hint: Any, result: Any, memo: dict[str, Binding]) -> Exception:
    call_state.failure = None
    bindings = dict(memo)
    is_bearable(result, hint)
    if _recorded_failure() is None and not _array_hint(hint):
        from beartype.door import die_if_unbearable

        try:
            die_if_unbearable(result, hint)
        except Exception as error:  # beartype's own violation, for a non-NamedArray return hint
            return error
    return _mismatch_error(f"{qualname}() return value", hint, result, bindings)


def _check_containers(
    qualname: str, containers: tuple[dict[str, Any], Any, inspect.Signature], args: Any, kwargs: Any, memo: Any
) -> None:
    """Check every element of the container-hinted arguments (beartype passed them as ``object``)."""
    checks, _, signature = containers
    bound = signature.bind(*args, **kwargs)
    for name, check in checks.items():
        if name not in bound.arguments:
            continue
        value = bound.arguments[name]
        if signature.parameters[name].kind is inspect.Parameter.VAR_POSITIONAL:
            items = [(f"[{i}]", item) for i, item in enumerate(value)]
        elif signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
            items = [(f"[{key!r}]", item) for key, item in value.items()]
        else:
            items = [("", value)]
        for path, item in items:
            failure = check(item, path)
            if failure is not None:  # the sizes bound up to the failing element
                where = f"{qualname}() argument {name}" if path or failure.path else f"{qualname}() parameter {name!r}"
                raise _container_error(where, failure, dict(memo))


def _check_returned_container(qualname: str, check: Any, result: Any, bindings: dict[str, Binding]) -> None:
    outer = call_state.memo
    call_state.memo = memo = dict(bindings)
    try:
        failure = check(result, "")
        if failure is not None:
            raise _container_error(f"{qualname}() return value", failure, memo)
    finally:
        call_state.memo = outer


def _container_error(where: str, failure: Failure, memo: dict[str, Binding]) -> NamedShapeError:
    """``f() argument ws['b'] is ..., which does not match ...``: the element of a container that failed."""
    bound = format_named_shape(memo) if memo else "none"
    hint, value = failure.hint, failure.value
    name = hint.__name__ if isinstance(hint, type) else repr(hint).replace("typing.", "")
    fix = "pass a value that fits the annotation, or correct the annotation"
    why, kind = f"it is {_article(type(value).__name__)}", ErrorKind.INVALID_ARGUMENT
    if failure.why is not None:
        why, kind, fix = failure.why.reason, failure.why.kind, failure.why.fix or fix
    elif _named_hint(hint):
        why += ", not a NamedArray"
    elif isinstance(value, tuple) and typing.get_origin(hint) is tuple:
        why += f" of {len(value)} element{'s' * (len(value) != 1)}, not {len(typing.get_args(hint))}"
    return NamedShapeError(
        f"{where}{failure.path} is {_shown(value)}, which does not match {name}: {why}. Axis bindings so far "
        f"in this call: {bound}. Fix: {fix}",
        kind=kind,
    )


def _article(noun: str) -> str:
    """``"ArrayImpl"`` -> ``"an ArrayImpl"``, ``"list"`` -> ``"a list"``."""
    return f"an {noun}" if noun[:1].lower() in "aeiou" else f"a {noun}"


def _shown(value: Any) -> str:
    """How a message shows a value: its named shape, or an array's type, dtype and shape, never its data."""
    if isinstance(value, NamedArray):
        return shape_repr(value)
    if isinstance(value, (tuple, list)) and len(value) <= 8:
        inner = ", ".join(_shown(v) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, dict) and len(value) <= 8:
        return "{" + ", ".join(f"{k!r}: {_shown(v)}" for k, v in value.items()) + "}"
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if isinstance(shape, tuple) and dtype is not None:
        return f"{type(value).__name__}({dtype}{list(shape)})"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
