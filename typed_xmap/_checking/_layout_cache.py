"""``@tx.typed``'s fast path: accept, from a cache, a call whose layouts were accepted before.

A ``NamedArray[...]`` check depends only on the value's layout (class, named axes, mapped axes, aval) and a
plain-class check only on the value's type, so a call is keyed by those and checked in full once per key.
The wrapper is generated with the function's own signature: CPython binds positional and keyword arguments
and defaults, and each value is a local, so a cache hit costs a tuple, a dict lookup and the call itself.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from .._value._tracebacks import entry_point

__all__ = ["ANYTHING", "CLASS", "NAMED", "LayoutKinds", "cached_wrapper", "signature_source"]

NAMED, CLASS, ANYTHING = "named", "class", "anything"
_CACHE_SIZE = 1024
_PREFIX = "_typed_xmap_"  # names of the generated code's own globals; no parameter may start with it
LayoutKinds = dict[str, str | None]
_LAYOUT = "{0}.__class__, {0}.axes, {0}.mapped, {0}.data.aval"  # what a NamedArray[...] check depends on

# (args, kwargs) -> the call's result and the axis bindings it made, checked in full (raises on a violation)
CheckedCall = Callable[[tuple[Any, ...], dict[str, Any]], tuple[Any, Any]]


def cached_wrapper(
    fn: Callable[..., Any],
    signature: inspect.Signature,
    hints: dict[str, Any],
    kinds: LayoutKinds,
    checked_call: CheckedCall,
    check_result: Callable[[Any, Any], None],
) -> Callable[..., Any] | None:
    """A wrapper of ``fn`` that checks each new layout with ``checked_call`` and accepts known ones from a cache.

    ``kinds`` maps parameter names (and ``"return"``) to ``NAMED``, ``CLASS`` or ``ANYTHING``. ``None`` when
    calls cannot take this path (``_unplain``: ``*args``, ``**kwargs``, a defaulted ``NamedArray`` parameter, a
    class-hinted default its hint rejects, a parameter named like the generated code's own names).
    """
    params = list(signature.parameters.values())
    if any(_unplain(p, kinds.get(p.name), hints.get(p.name)) for p in params):
        return None
    parameters, namespace = signature_source(params)
    call, key = [], []
    for param in params:
        call.append(f"{param.name}={param.name}" if param.kind is param.KEYWORD_ONLY else param.name)
        kind = kinds.get(param.name)
        if kind == NAMED:
            key.append(_LAYOUT.format(param.name))
        elif kind == CLASS:
            key.append(f"{_PREFIX}type({param.name})")
    values = "".join(f"{p.name}, " for p in params)
    key_items = "".join(f"{part}, " for part in key)
    # The generated code's own names, locals and builtins too: a parameter may well be called ``key`` or ``type``.
    p = _PREFIX
    return_check = {
        NAMED: (
            f"    try:\n        {p}returned = {_LAYOUT.format(p + 'result')}\n"
            f"    except {p}AttributeError:\n        {p}returned = None\n"
            f"    if {p}returned not in {p}accepted:\n"
            f"        {p}check_returned({p}result, {p}bindings, {p}accepted, {p}returned)\n"
        ),
        CLASS: (
            f"    if not {p}isinstance({p}result, {p}return_class):\n        {p}check_result({p}result, {p}bindings)\n"
        ),
    }.get(kinds.get("return") or ANYTHING, "")
    source = (
        f"def wrapper({parameters}):\n"
        f"    try:\n        {p}key = ({key_items})\n"
        f"    except {p}AttributeError:\n        return {p}full_check(({values}))[0]\n"
        f"    {p}known = {p}layouts.get({p}key)\n"
        f"    if {p}known is None:\n        return {p}first_call({p}key, ({values}))\n"
        f"    {p}bindings, {p}accepted = {p}known\n"
        f"    {p}result = {p}fn({', '.join(call)})\n"
        f"{return_check}"
        f"    return {p}result\n"
    )
    layouts: dict[Any, tuple[Any, set[Any]]] = _Layouts()

    def full_check(values: tuple[Any, ...]) -> tuple[Any, Any]:
        """Check the call in full and run it: positional parameters passed positionally (as the cached path
        passes them), keyword-only ones by keyword; a trailing value that is its parameter's default object
        is left out, as beartype leaves omitted defaults unchecked."""
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for param, value in zip(params, values, strict=True):
            if param.kind is param.KEYWORD_ONLY:
                if value is not param.default:
                    kwargs[param.name] = value
            else:
                args.append(value)
        while args and args[-1] is params[len(args) - 1].default:
            args.pop()
        return checked_call(tuple(args), kwargs)

    def first_call(key: Any, values: tuple[Any, ...]) -> Any:
        result, bindings = full_check(values)
        if len(layouts) >= _CACHE_SIZE:
            layouts.clear()
        layouts[key] = (bindings, set())  # return layouts: each is checked once more, then accepted
        return result

    def check_returned(result: Any, bindings: Any, accepted: set[Any], returned: Any) -> None:
        """A return layout not seen with these parameters: check it, and accept it from now on (a value
        without a layout, never: it is checked on every call)."""
        check_result(result, bindings)
        if returned is not None:
            if len(accepted) >= _CACHE_SIZE:
                accepted.clear()
            accepted.add(returned)

    namespace.update(
        {
            f"{_PREFIX}fn": fn,
            f"{_PREFIX}layouts": layouts,
            # the checks (never the cached path) filter our frames from a failed check's traceback
            f"{_PREFIX}first_call": entry_point(first_call),
            f"{_PREFIX}full_check": entry_point(full_check),
            f"{_PREFIX}check_result": entry_point(check_result),
            f"{_PREFIX}check_returned": entry_point(check_returned),
            f"{_PREFIX}return_class": hints.get("return"),
            f"{_PREFIX}type": type,
            f"{_PREFIX}isinstance": isinstance,
            f"{_PREFIX}AttributeError": AttributeError,
        }
    )
    exec(compile(source, f"<@tx.typed {fn.__qualname__}>", "exec"), namespace)  # how a traceback names it
    wrapper: Callable[..., Any] = functools.wraps(fn)(namespace["wrapper"])
    return wrapper


class _Layouts(dict):  # type: ignore[type-arg]
    """The accepted layouts of one typed function; pickled empty (cloudpickle pickles a local one by value)."""

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return _Layouts, ()


def signature_source(params: list[inspect.Parameter]) -> tuple[str, dict[str, Any]]:
    """A parameter list as source (``a, b=<default>, /, *, c``) and the namespace holding its defaults."""
    parts: list[str] = []
    defaults: dict[str, Any] = {}
    for index, param in enumerate(params):
        before = params[index - 1].kind if index else None
        if param.kind is param.KEYWORD_ONLY and before not in (param.KEYWORD_ONLY, param.VAR_POSITIONAL):
            parts.append("*")
        star = "*" if param.kind is param.VAR_POSITIONAL else "**" if param.kind is param.VAR_KEYWORD else ""
        text = star + param.name
        if param.default is not param.empty:
            defaults[f"{_PREFIX}default_{index}"] = param.default
            text += f"={_PREFIX}default_{index}"
        parts.append(text)
        after = params[index + 1].kind if index + 1 < len(params) else None
        if param.kind is param.POSITIONAL_ONLY and after is not param.POSITIONAL_ONLY:
            parts.append("/")
    return ", ".join(parts), defaults


def _unplain(param: inspect.Parameter, kind: str | None, hint: Any) -> bool:
    """Whether ``param`` keeps calls off the generated wrapper."""
    if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.name.startswith(_PREFIX):
        return True
    if param.default is param.empty:
        return False
    # An omitted default is not checked (as beartype): its key must not vouch for an explicit value unchecked.
    return kind == NAMED or (kind == CLASS and not isinstance(param.default, hint))
