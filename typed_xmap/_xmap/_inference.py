"""Named-shape inference over a jaxpr: which named axes each value of an xmapped body varies along.

Inputs start with their mapped axes; every primitive's result carries the union of its operands' axes
(broadcast by name); ``psum``/``pmax``/``pmin``/``all_gather``/``psum_scatter`` remove their axes,
``axis_index`` adds its own, and sub-jaxprs (``jit``, ``cond``, ``scan``, ``while``, ``checkpoint``, custom
derivatives) are followed, loops to a fixed point. This is the rule the original xmap applied to its
named shapes, and the one ``vmap`` applies to decide what is batched. Every value is checked for a resource
conflict on the way, and the error names the user's line that computed it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from types import FrameType
from typing import Any

from .._algebra import Resource, conflict_error, resource_conflicts
from .._value._compat import is_user_filename, scan_layout, user_frames, while_layout

__all__ = ["check_jaxpr", "user_line"]

Resources = Mapping[str, tuple[Resource, ...]]
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # typed_xmap/
_EXAMPLES = os.path.join(_PACKAGE, "examples")
_DEMO = os.path.join(_PACKAGE, "_tools", "_demo.py")  # the tour is user code that ships inside the package
_REDUCING = {
    "psum": "axes",
    "pmax": "axes",
    "pmin": "axes",
    "all_gather": "axis_name",
    "reduce_scatter": "axis_name",
    "psum_invariant": "axes",
}


def _axis_names(param: Any) -> tuple[Any, ...]:
    return tuple(param) if isinstance(param, (tuple, list)) else (param,)


class _Inference:
    def __init__(self, names: frozenset[str], resources: Resources) -> None:
        self.names = names
        self.resources = resources

    def check(self, found: frozenset[str], eqn: Any) -> None:
        if len(found) < 2:
            return
        conflicts = resource_conflicts(sorted(found), self.resources)
        if conflicts:
            raise conflict_error(conflicts[0], _describe_eqn(eqn))

    def run(self, jaxpr: Any, inputs: Sequence[frozenset[str]]) -> list[frozenset[str]]:
        """The named axes of ``jaxpr``'s outputs, given its inputs'; checks every value on the way."""
        from jax.extend.core import Literal

        env: dict[Any, frozenset[str]] = {}
        empty: frozenset[str] = frozenset()
        for var in jaxpr.constvars:
            env[var] = empty
        for var, found in zip(jaxpr.invars, inputs, strict=False):
            env[var] = found

        def read(atom: Any) -> frozenset[str]:
            return empty if isinstance(atom, Literal) else env.get(atom, empty)

        for eqn in jaxpr.eqns:
            ins = [read(v) for v in eqn.invars]
            outs = self.equation(eqn, ins)
            for var, found in zip(eqn.outvars, outs, strict=False):
                self.check(found, eqn)
                env[var] = found
        return [read(v) for v in jaxpr.outvars]

    def equation(self, eqn: Any, ins: list[frozenset[str]]) -> list[frozenset[str]]:
        name = eqn.primitive.name
        params = eqn.params
        union = frozenset().union(*ins)
        if name in _REDUCING:
            removed = {a for a in _axis_names(params.get(_REDUCING[name])) if isinstance(a, str)}
            return [found - removed for found in ins][: len(eqn.outvars)] or [union - removed] * len(eqn.outvars)
        if name == "axis_index":
            axis = params.get("axis_name")
            return [frozenset({axis}) & self.names if isinstance(axis, str) else union]
        sub = self.subjaxpr_outputs(name, params, ins)
        if sub is not None and len(sub) == len(eqn.outvars):
            return sub
        return [union] * len(eqn.outvars)

    def subjaxpr_outputs(
        self, name: str, params: Mapping[str, Any], ins: list[frozenset[str]]
    ) -> list[frozenset[str]] | None:
        if name == "cond":
            branches = params["branches"]
            per_branch = [self.run(_open(b), ins[1:]) for b in branches]
            return [frozenset().union(ins[0], *found) for found in zip(*per_branch, strict=False)]
        if name == "while":
            cond, body = _open(params["cond_jaxpr"]), _open(params["body_jaxpr"])
            cn, bn = while_layout(params)
            cconsts, bconsts, carry = ins[:cn], ins[cn : cn + bn], list(ins[cn + bn :])
            for _ in range(len(carry) + 2):
                new = self.run(body, bconsts + carry)
                predicate = frozenset().union(*self.run(cond, cconsts + carry))
                merged = [c | n | predicate for c, n in zip(carry, new, strict=False)]
                if merged == carry:
                    break
                carry = merged
            return carry
        if name == "scan":
            body = _open(params["jaxpr"])
            nc, ncarry = scan_layout(params)
            consts, carry, xs = ins[:nc], list(ins[nc : nc + ncarry]), ins[nc + ncarry :]
            outs: list[frozenset[str]] = []  # set by the first pass (there are at least two)
            for _ in range(len(carry) + 2):
                outs = self.run(body, consts + carry + xs)
                merged = [c | n for c, n in zip(carry, outs[:ncarry], strict=False)]
                if merged == carry:
                    break
                carry = merged
            return carry + outs[ncarry:]
        for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
            inner = params.get(key)
            if inner is not None and hasattr(_open(inner), "eqns") and len(_open(inner).invars) == len(ins):
                return self.run(_open(inner), ins)
        return None


def _open(jaxpr: Any) -> Any:
    return getattr(jaxpr, "jaxpr", jaxpr)


def _is_library_file(path: str) -> bool:
    path = os.path.abspath(path)
    return path.startswith(_PACKAGE + os.sep) and not path.startswith(_EXAMPLES + os.sep) and path != _DEMO


def user_line(source_info: Any) -> str:
    """Where the user's code computed a value: ``file:line:col (function)``.

    The innermost frame of the value's traceback outside JAX and typed_xmap (the xmapped function's line);
    when that traceback holds none (it is cut short, or the function is JAX's own, like ``jnp.vdot``), the
    line that called the xmapped function.
    """
    from jax.extend.source_info_util import summarize

    for frame in user_frames(source_info.traceback):
        if not _is_library_file(frame.file_name):
            column = f":{frame.start_column}" if frame.start_column else ""
            return f"{frame.file_name}:{frame.start_line}{column} ({frame.function_name})"
    caller = _calling_line()
    return caller if caller is not None else summarize(source_info)


def _calling_line() -> str | None:
    """The innermost frame of the running Python stack outside JAX and typed_xmap: the xmapped call's line."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        path = frame.f_code.co_filename
        if is_user_filename(path) and not _is_library_file(path):
            return f"{path}:{frame.f_lineno} ({frame.f_code.co_qualname})"
        frame = frame.f_back
    return None


def _describe_eqn(eqn: Any) -> str:
    return f"a value computed by `{eqn.primitive.name}` at {user_line(eqn.source_info)}"


def check_jaxpr(
    closed_jaxpr: Any, inputs: Sequence[frozenset[str]], names: frozenset[str], resources: Resources
) -> list[frozenset[str]]:
    """Raise ``AxisResourceConflict`` if a value of the per-element body meets two axes on one resource."""
    return _Inference(names, resources).run(_open(closed_jaxpr), inputs)
