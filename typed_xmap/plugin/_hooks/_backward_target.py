"""What a ``jax.grad``/``jax.value_and_grad`` call differentiates, for ``_backward``: the module function and its
parameters that receive the differentiated arguments, from ``f`` itself, from ``functools.partial(f, ...)`` (its
bound arguments shift the positions; a keyword-bound parameter is not differentiated) or from a lambda that
calls one function (``lambda p: loss(p, batch)``: the parameters the differentiated lambda parameters reach)."""

from __future__ import annotations

from mypy.nodes import ARG_NAMED, ARG_POS, CallExpr, Decorator, Expression, FuncDef, LambdaExpr, NameExpr, Node, RefExpr

from .._core._tree import expressions

__all__ = ["differentiated", "function_of"]


def function_of(expr: Node | None) -> FuncDef | None:
    """The function a name refers to (through its decorators)."""
    node = expr.node if isinstance(expr, RefExpr) else None
    if isinstance(node, Decorator):
        node = node.func
    return node if isinstance(node, FuncDef) else None


def differentiated(fun: Expression, argnums: int | tuple[int, ...]) -> tuple[FuncDef, frozenset[str]] | None:
    """The function ``fun`` differentiates and its parameters at the positions ``argnums`` (``None``: not a
    function, a partial or a lambda read here, or a position it lacks)."""
    indices = (argnums,) if isinstance(argnums, int) else argnums
    if isinstance(fun, LambdaExpr):
        return _through_lambda(fun, indices)
    bound: list[Expression] = []
    keywords: set[str] = set()
    if isinstance(fun, CallExpr) and isinstance(fun.callee, RefExpr) and fun.callee.fullname == "functools.partial":
        if not fun.args or fun.arg_kinds[0] != ARG_POS:
            return None
        bound = [a for a, k in zip(fun.args[1:], fun.arg_kinds[1:], strict=True) if k == ARG_POS]
        keywords = {n for n, k in zip(fun.arg_names, fun.arg_kinds, strict=True) if k == ARG_NAMED and n}
        if len(bound) + len(keywords) != len(fun.args) - 1:  # a star argument: positions not known
            return None
        fun = fun.args[0]
    function = function_of(fun)
    if function is None:
        return None
    positional = [n for n, k in zip(function.arg_names, function.arg_kinds, strict=True) if k.is_positional()]
    free = [n for n in positional[len(bound) :] if n not in keywords]
    if any(not -len(free) <= i < len(free) for i in indices):
        return None
    return function, frozenset(n for i in indices if (n := free[i]) is not None)


def _through_lambda(fun: LambdaExpr, indices: tuple[int, ...]) -> tuple[FuncDef, frozenset[str]] | None:
    """``lambda a, b: f(...)``: ``f`` with the parameters its call passes a differentiated lambda parameter
    (directly, as a positional or keyword argument); ``None`` where an argument reads one otherwise
    (``loss(p["w"], batch)``, ``loss(tx.shard(p, ...))``): what it reaches is not known."""
    body = fun.expr()
    function = function_of(body.callee) if isinstance(body, CallExpr) else None
    params = [n for n, k in zip(fun.arg_names, fun.arg_kinds, strict=True) if k.is_positional()]
    if function is None or not isinstance(body, CallExpr) or any(not -len(params) <= i < len(params) for i in indices):
        return None
    wanted = {params[i] for i in indices}
    found: set[str] = set()
    position = 0
    for arg, kind, name in zip(body.args, body.arg_kinds, body.arg_names, strict=True):
        passes = isinstance(arg, NameExpr) and arg.name in wanted
        if not passes and _reads(arg, wanted):
            return None
        if kind == ARG_POS:
            if passes and position < len(function.arg_names) and (formal := function.arg_names[position]):
                found.add(formal)
            position += 1
        elif kind == ARG_NAMED and name is not None and passes:
            found.add(name)
        elif passes:
            return None  # a star argument: the parameters it fills not known
    return function, frozenset(found)


def _reads(arg: Expression, wanted: set[str | None]) -> bool:
    """Whether ``arg`` reads a name of ``wanted`` (a lambda's parameter) anywhere within it."""
    return any(isinstance(e, NameExpr) and e.name in wanted for e in expressions([arg]))
