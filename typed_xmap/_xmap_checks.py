"""``xmap``'s checks: resources against the mesh, resource conflicts, and the out_axes rule.

Resource conflicts (two named axes on one mesh axis meeting in one value) are caught in three places:

- inputs and outputs: from the specs (every named axis of a spec leaf ends up as a dim of that value);
- intermediates: by a named-shape inference over the jaxpr of the per-element body. Each variable gets
  the set of named axes it varies along: inputs start with their mapped axes, every primitive's result
  carries the union of its operands' axes (broadcast by name), ``psum``/``pmax``/``pmin``/``all_gather``/
  ``psum_scatter`` remove their axes, ``axis_index`` adds its own, and sub-jaxprs (``jit``, ``cond``,
  ``scan``, ``while``, ``checkpoint``, custom derivatives) are followed, loops to a fixed point. This is
  the rule the original xmap applied to its named shapes, and the one ``vmap`` applies to decide what
  is batched. It runs only when two axes in scope share a resource, so other calls pay nothing.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ._algebra import ErrorKind, AxisResourceConflict, NamedShapeError
from ._algebra import SerialLoop, conflict_error, resource_conflicts

__all__ = [
    "check_in_scope",
    "check_intermediates",
    "check_output_conflicts",
    "may_conflict",
]

Resources = Mapping[str, tuple[Any, ...]]


def check_in_scope(resources: Resources, mesh_shape: Mapping[str, int] | None) -> None:
    """Every mesh-axis resource must be an axis of the current mesh."""
    for axis, assigned in resources.items():
        for resource in assigned:
            if isinstance(resource, SerialLoop):
                continue
            if mesh_shape is None:
                raise NamedShapeError(
                    f"axis_resources[{axis!r}] = {resource!r}, but no device mesh is set, so mesh axis {resource!r} "
                    f"is not in scope. Fix: mesh = jax.make_mesh((4, 2), ('x', 'y')); call the xmapped function "
                    f"under `with jax.set_mesh(mesh):`, or use serial_loop({resource!r}, n)",
                    kind=ErrorKind.INVALID_ARGUMENT,
                )
            if resource not in mesh_shape:
                raise NamedShapeError(
                    f"axis_resources[{axis!r}] = {resource!r}, but the current mesh has axes "
                    f"{', '.join(repr(a) for a in mesh_shape)} and no serial_loop({resource!r}, n) is active. "
                    f"Fix: use one of the mesh axes, or set a mesh that has {resource!r}",
                    kind=ErrorKind.INVALID_ARGUMENT,
                )


def may_conflict(names: Sequence[str], resources: Resources) -> bool:
    """Whether any two of ``names`` share a resource (else no value can hold a conflict)."""
    return bool(resource_conflicts(names, resources))


def check_output_conflicts(
    listed: Sequence[str], carried: Sequence[str], resources: Resources, where: str
) -> None:
    """An output gets a dim for every listed axis; say so when one of them is only a broadcast."""
    conflicts = resource_conflicts(listed, resources)
    if not conflicts:
        return
    conflict = conflicts[0]
    for broadcast, owner in ((conflict.second, conflict.first), (conflict.first, conflict.second)):
        if broadcast not in carried and owner in carried:
            raise AxisResourceConflict(
                f"{where} is broadcast along axis {broadcast!r}, which is assigned to mesh axis "
                f"{conflict.resource!r}, but the output is already partitioned along {conflict.resource!r} "
                f"because it carries axis {owner!r}. Fix: drop {broadcast!r} from its out_axes, or assign "
                f"{broadcast!r} to another mesh axis"
            )
    raise conflict_error(conflict, where)


# -- intermediates: named-shape inference over a jaxpr -------------------------------------------------

_REDUCING = {"psum": "axes", "pmax": "axes", "pmin": "axes", "all_gather": "axis_name",
             "reduce_scatter": "axis_name", "psum_invariant": "axes"}


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
        for var, found in zip(jaxpr.invars, inputs):
            env[var] = found

        def read(atom: Any) -> frozenset[str]:
            return empty if isinstance(atom, Literal) else env.get(atom, empty)

        for eqn in jaxpr.eqns:
            ins = [read(v) for v in eqn.invars]
            outs = self.equation(eqn, ins)
            for var, found in zip(eqn.outvars, outs):
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

    def subjaxpr_outputs(self, name: str, params: Mapping[str, Any], ins: list[frozenset[str]]) -> list[frozenset[str]] | None:
        if name == "cond":
            branches = params["branches"]
            per_branch = [self.run(_open(b), ins[1:]) for b in branches]
            return [frozenset().union(ins[0], *found) for found in zip(*per_branch)]
        if name == "while":
            cond, body = _open(params["cond_jaxpr"]), _open(params["body_jaxpr"])
            cn, bn = params["cond_nconsts"], params["body_nconsts"]
            cconsts, bconsts, carry = ins[:cn], ins[cn: cn + bn], list(ins[cn + bn:])
            for _ in range(len(carry) + 2):
                new = self.run(body, bconsts + carry)
                predicate = frozenset().union(*self.run(cond, cconsts + carry))
                merged = [c | n | predicate for c, n in zip(carry, new)]
                if merged == carry:
                    break
                carry = merged
            return carry
        if name == "scan":
            body = _open(params["jaxpr"])
            nc, ncarry = params["num_consts"], params["num_carry"]
            consts, carry, xs = ins[:nc], list(ins[nc: nc + ncarry]), ins[nc + ncarry:]
            for _ in range(len(carry) + 2):
                outs = self.run(body, consts + carry + xs)
                merged = [c | n for c, n in zip(carry, outs[:ncarry])]
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


def _describe_eqn(eqn: Any) -> str:
    from jax._src import source_info_util

    where = source_info_util.summarize(eqn.source_info)
    return f"a value computed by `{eqn.primitive.name}` at {where}"


def check_intermediates(
    closed_jaxpr: Any, inputs: Sequence[frozenset[str]], names: frozenset[str], resources: Resources
) -> list[frozenset[str]]:
    """Raise ``AxisResourceConflict`` if a value of the per-element body meets two axes on one resource."""
    return _Inference(names, resources).run(_open(closed_jaxpr), inputs)

