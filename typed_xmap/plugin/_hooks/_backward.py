"""The backward pass's communication in ``typed-xmap check --comm``: where a module function ``f`` is differentiated
(``jax.grad(f)``, ``jax.value_and_grad(f, argnums=...)``), the collectives ``f``'s backward pass adds are noted at
that call, under the function that makes it (the jitted step, whose compiled program holds them), each naming the
operation of ``f`` (or of a function ``f`` calls) it transposes and its line.

Only while ``named-comm`` is on: each placed operation (``_placement.placing``) records a ``Step`` (its placed
operands, their expressions, its result) under its top-level function (``BackwardSteps``); the grad call reads the
steps of ``f`` and of the module functions it calls, the operands whose cotangent is needed marked (``needed``:
a float operand whose expression depends on a differentiated parameter, followed through assignments and into the
module functions called with such arguments), and asks the algebra for the transposes
(``backward_collectives``). The steps of a function are recorded when mypy checks it: a function differentiated
above its definition has none yet. Each function is read once per set of differentiated parameters. What the
call differentiates is read by ``_backward_target`` (a ``functools.partial`` of a module function, a lambda
calling one); a function nested in the step (a local ``loss_fn``) has the steps of its lines. Where the list
cannot be complete it says so, a ``backward list partial`` note: an operation with no transpose that touches a
split axis (``backward_gap``), a differentiating call under ``vmap`` (per-example gradients: the mapped axis is
not summed), a function defined below the call or one not read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from mypy.nodes import (
    ARG_NAMED,
    ARG_POS,
    AssignmentStmt,
    CallExpr,
    Expression,
    ForStmt,
    FuncDef,
    MemberExpr,
    NameExpr,
    OperatorAssignmentStmt,
    WithStmt,
)
from mypy.types import Instance, Type, get_proper_type

from ..._algebra import BackwardOperand, BackwardRule, Collective, OpKind, backward_collectives, backward_gap
from .._core._codes import NAMED_COMM
from .._core._encoding import Shape
from .._core._messages import dtype_marker
from .._core._support import fail
from .._core._tree import checked_statements, expressions, statements_in
from ._backward_target import differentiated, function_of

__all__ = ["BACKWARD_RULES", "BackwardSteps", "Step", "note_backward"]

BACKWARD_RULES: dict[OpKind | str, BackwardRule] = {
    OpKind.ELEMENTWISE: BackwardRule.BROADCAST,
    OpKind.SELECT: BackwardRule.BROADCAST,
    OpKind.CONTRACTION: BackwardRule.CONTRACTION,
    **dict.fromkeys(("softmax", "log_softmax", "var", "std"), BackwardRule.NORMALISATION),
    "stack": BackwardRule.BROADCAST,
    "concatenate": BackwardRule.BROADCAST,
    **dict.fromkeys(("take", "top_k", "index"), BackwardRule.GATHER),
    "move": BackwardRule.MOVE,
    **dict.fromkeys(("max_pool", "avg_pool"), BackwardRule.WINDOW),
    "conv": BackwardRule.CONV,
    **dict.fromkeys(
        (OpKind.REDUCTION, OpKind.INDEX_REDUCTION, "sum", "mean", "max", "min", "argmax", "argmin", "argsort"),
        BackwardRule.NONE,
    ),
    **dict.fromkeys(("logsumexp", "rename", "astype", "roll", "cumsum", "cumprod"), BackwardRule.NONE),
}
"""The transpose of each placement rule, keyed as ``_placement.RULES`` is (``rule_key``: a normalisation by its
name; ``index``: indexing by a dict, ``move``: ``tx.shard``/``tx.constrain``): a reduction's is a broadcast
(none), ``logsumexp``'s too (its maximum is held constant, its sum transposes to a broadcast); an operation
placed by a rule missing here (pad, a slice, an update, ``tnp.split``, a sort: along a split axis XLA moves its
cotangent back one way on an Explicit mesh, another on an Auto one) is ``PARTIAL``: its backward communication
not known, which the listing says."""
STATIC_ATTRIBUTES = frozenset({"named_shape", "shape", "ndim", "dtype", "size"})
"""What an expression reads of an array that carries no value (``x.named_shape["seq"]``): no dependence."""


@dataclass(frozen=True, slots=True)
class Step:
    """One placed operation of a function, as its backward pass needs it."""

    line: int
    rule: BackwardRule
    operation: str
    result: BackwardOperand
    operands: tuple[BackwardOperand, ...]
    exprs: tuple[Expression | None, ...]
    differentiable: tuple[bool, ...]
    normalised: tuple[str, ...] = ()
    forward: tuple[Collective, ...] = ()


class BackwardSteps:
    """The steps recorded per top-level function (full name), one per operation (its line, column and text: mypy
    may check one several times)."""

    def __init__(self) -> None:
        self._steps: dict[str, tuple[FuncDef, dict[tuple[int, int, str], Step]]] = {}

    def record(self, ctx: Any, key: OpKind | str, result: Shape, operands: Sequence[Shape], labels: Sequence[str],
               exprs: Sequence[Expression | None], placement: dict[str, tuple[str, ...]], operation: str,
               names_in_call: Callable[[Any], set[str] | None] | None = None,
               forward: Sequence[Collective] = ()) -> None:  # fmt: skip
        """Record one operation placed by the rule of ``key`` (when ``named-comm`` is on; ``names_in_call``: the
        axis names the call's other arguments hold, a normalisation's axes; ``forward``: its own collectives)."""
        rule = BACKWARD_RULES.get(key, BackwardRule.PARTIAL)
        if result.named is None or not ctx.api.msg.errors.is_error_code_enabled(NAMED_COMM):
            return
        scope = getattr(ctx.api, "scope", None)
        function = scope.top_level_function() if scope is not None else None
        if not isinstance(function, FuncDef):
            return
        sides = tuple(
            BackwardOperand(tuple(s.named or ()), dict(s.placement), label)
            for s, label in zip(operands, labels, strict=True)
        )
        step = Step(
            ctx.context.line,
            rule,
            operation,
            BackwardOperand(tuple(result.named), placement),
            sides,
            tuple(exprs),
            tuple(_differentiable(s.dtype) for s in operands),
            _normalised(ctx, rule, result, operands, names_in_call),
            tuple(forward),
        )
        node, steps = self._steps.get(function.fullname, (None, {}))
        if node is not function:  # the function parsed anew (the language server's daemon): its old steps go
            steps = {}
            self._steps[function.fullname] = (function, steps)
        steps[ctx.context.line, ctx.context.column, operation] = step

    def steps(self, function: FuncDef, module: str) -> list[Step]:
        """The steps of ``function``: its own, or for a function nested in a recorded one of ``module`` (a step's
        local ``loss_fn``), the enclosing function's on its lines."""
        node, steps = self._steps.get(function.fullname, (None, {}))
        if node is function:
            return list(steps.values())
        last = function.end_line or function.line
        for name, (node, steps) in self._steps.items():
            if name.rpartition(".")[0] == module and node.line < function.line and last <= (node.end_line or 0):
                return [step for (line, _, _), step in steps.items() if function.line <= line <= last]
        return []


def _normalised(
    ctx: Any,
    rule: BackwardRule,
    result: Shape,
    operands: Sequence[Shape],
    names_in_call: Callable[[Any], set[str] | None] | None,
) -> tuple[str, ...]:
    """The axes a normalisation runs along: those its call names (``softmax`` keeps them) and the operand's axes
    its result lacks (``var`` drops them); none for the other rules."""
    if rule is not BackwardRule.NORMALISATION or not operands or result.named is None:
        return ()
    named = (names_in_call(ctx) or set()) if names_in_call else set()
    dropped = {n for n in operands[0].named or () if n not in result.named}
    return tuple(sorted(named | dropped))


def _differentiable(dtype: Type) -> bool:
    """Whether values of ``dtype`` have cotangents: not integers nor booleans (an unknown dtype may)."""
    proper = get_proper_type(dtype)
    if isinstance(proper, Instance) and proper.type.fullname in ("numpy.bool", "numpy.bool_"):
        return False
    marker = dtype_marker(str(proper))
    return marker is None or not marker.startswith(("i", "u"))


def note_backward(
    steps: BackwardSteps, ctx: Any, fun: Expression, argnums: int | tuple[int, ...], *, unread: bool = True
) -> None:
    """The collectives of the backward pass of ``fun`` (a module function, a ``functools.partial`` of one, a
    lambda calling one: ``_backward_target``) differentiated with respect to its positional parameters
    ``argnums``, as ``named-comm`` notes at the differentiating call; where it is not read (and ``unread``: its
    type mentions NamedArrays), a note says so."""
    if not ctx.api.msg.errors.is_error_code_enabled(NAMED_COMM):
        return
    target = differentiated(fun, argnums)
    if target is None and not unread:
        return
    if target is None or _vmapped(ctx):
        why = "under vmap (per-example gradients)" if target is not None else "of a function not read here"
        fail(ctx.api, f"backward list partial: a gradient {why} is not listed", ctx.context, NAMED_COMM, note=True)
        return
    function, differentiated_names = target
    if not differentiated_names:
        return
    here = getattr(getattr(ctx.api, "tree", None), "fullname", "")
    module = function.fullname.rpartition(".")[0] or here  # a nested function's full name is its name
    if function.line > ctx.context.line and module == here:
        why = f"{function.name} is defined below this call (not yet checked): its backward pass is not listed"
        fail(ctx.api, f"backward list partial: {why}", ctx.context, NAMED_COMM, note=True)
        return
    for step, collective in _backward(steps, function, differentiated_names, module, set()):
        if collective is None:
            gap = f"{step.operation} has no backward rule here: what its backward pass moves is not listed"
            fail(ctx.api, f"backward list partial: {gap} ({function.name}: line {step.line})", ctx.context,
                 NAMED_COMM, note=True)  # fmt: skip
            continue
        where = f"{collective} (backward of {function.name}: line {step.line})"
        fail(ctx.api, f"collective: {where}", ctx.context, NAMED_COMM, note=True)


def _vmapped(ctx: Any) -> bool:
    """Whether the differentiating call is mapped (``tx.vmap(jax.grad(f), axis="batch")``, ``jax.vmap``): each
    call then differentiates one example, whose axes are not those ``f``'s annotations give (no sum over the
    mapped axis): not listed."""
    return any(
        isinstance(e, CallExpr)
        and isinstance(e.callee, NameExpr | MemberExpr)
        and e.callee.name == "vmap"
        and ctx.context in e.args
        for e in expressions(checked_statements(ctx.api))
    )


def _backward(
    steps: BackwardSteps, function: FuncDef, differentiated: frozenset[str], module: str, seen: set[object]
) -> Iterator[tuple[Step, Collective | None]]:
    """Each step's transposes in ``function`` and in the module functions it calls, with the parameters whose
    values depend on a differentiated argument (``None``: a step whose transpose is not known, ``backward_gap``)."""
    if (function.fullname, differentiated) in seen or not differentiated:
        return
    seen.add((function.fullname, differentiated))
    dependent = _dependent_names(function, differentiated)
    for step in steps.steps(function, module):
        operands = tuple(
            BackwardOperand(side.names, side.placement, side.label, differentiable and _depends(expr, dependent))
            for side, expr, differentiable in zip(step.operands, step.exprs, step.differentiable, strict=True)
        )
        if backward_gap(step.rule, step.result, operands, step.forward):
            yield step, None
        for collective in backward_collectives(
            step.rule, step.result, operands, operation=step.operation, normalised=step.normalised, forward=step.forward
        ):
            yield step, collective
    for callee, parameters in _calls(function, dependent, module):
        yield from _backward(steps, callee, parameters, module, seen)


def _calls(function: FuncDef, dependent: set[str], module: str) -> Iterator[tuple[FuncDef, frozenset[str]]]:
    """The module functions ``function`` calls, each with its parameters that receive dependent values; a module
    function passed as a value (``tx.scan(block, x, ...)``) with all of them, where an argument of that call
    depends."""
    for call in expressions(function.body.body):
        if not isinstance(call, CallExpr):
            continue
        callee = function_of(call.callee)
        if callee is not None and callee.fullname.rpartition(".")[0] == module:
            yield callee, _bound(callee, call, dependent)
        if any(_depends(arg, dependent) for arg in call.args):
            for arg in call.args:
                passed = function_of(arg)
                if passed is not None and passed.fullname.rpartition(".")[0] == module:
                    yield passed, frozenset(n for n in passed.arg_names if n is not None)


def _bound(callee: FuncDef, call: CallExpr, dependent: set[str]) -> frozenset[str]:
    """``callee``'s parameters that ``call`` passes a dependent value (a star argument: all of them)."""
    found: set[str] = set()
    position = 0
    for arg, kind, name in zip(call.args, call.arg_kinds, call.arg_names, strict=True):
        depends = _depends(arg, dependent)
        if kind == ARG_POS:
            if depends and position < len(callee.arg_names) and (formal := callee.arg_names[position]) is not None:
                found.add(formal)
            position += 1
        elif kind == ARG_NAMED and name is not None:
            if depends:
                found.add(name)
        elif depends:
            found |= {n for n in callee.arg_names if n is not None}
    return frozenset(found)


def _dependent_names(function: FuncDef, differentiated: frozenset[str]) -> set[str]:
    """The local names whose value depends on a differentiated parameter: through assignments, loops and
    ``with`` targets, to a fixed point (wherever they are in the body: an over-approximation)."""
    flows: list[tuple[list[Expression], Expression]] = []
    for statement, _ in statements_in(function.body.body):
        if isinstance(statement, AssignmentStmt):
            flows.append((statement.lvalues, statement.rvalue))
        elif isinstance(statement, OperatorAssignmentStmt):
            flows.append(([statement.lvalue], statement.rvalue))
        elif isinstance(statement, ForStmt):
            flows.append(([statement.index], statement.expr))
        elif isinstance(statement, WithStmt):
            flows += [([t], e) for t, e in zip(statement.target, statement.expr, strict=True) if t is not None]
    dependent = set(differentiated)
    changed = True
    while changed:
        changed = False
        for targets, value in flows:
            if _depends(value, dependent):
                for name in expressions(targets):
                    if isinstance(name, NameExpr) and name.name not in dependent:
                        dependent.add(name.name)
                        changed = True
    return dependent


def _depends(expr: Expression | None, dependent: set[str]) -> bool:
    """Whether ``expr`` reads a dependent name (``None``, an expression not known: it may), other than through
    what an array carries without its values (``x.named_shape``)."""
    if expr is None:
        return True
    found = list(expressions([expr]))
    static = [e.expr for e in found if isinstance(e, MemberExpr) and e.name in STATIC_ATTRIBUTES]
    skipped = {id(e) for inner in static for e in expressions([inner])}
    return any(isinstance(e, NameExpr) and e.name in dependent and id(e) not in skipped for e in found)
