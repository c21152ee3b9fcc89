"""One xmap call traced: plan it, check it, run its levels in place on the mesh, put JAX's errors in our words.

Everything here runs while tracing (inside the call's ``jit``, or inline inside an enclosing xmap's body);
``jit`` caches the result per argument shapes and structure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from .._algebra import Resource, check_divisible
from .._value._frames import Frame, active_frames
from ._body import Observed, element_function, nest
from ._config import Config
from ._conflicts import check_argument_conflicts, check_intermediates, check_output_conflicts
from ._jax_errors import loop_axis_error, multi_axis_permute_error, unlisted_by_vmap_error
from ._placement import output_specs, run_constrained, run_on_mesh
from ._plan import Plan, element_avals, make_plan, unwrap_arguments

__all__ = ["trace_xmap"]


def trace_xmap(
    body: Callable[..., Any],
    config: Config,
    mesh: Any,
    resources: Mapping[str, tuple[Resource, ...]],
    args: tuple[Any, ...],
    *,
    inline: bool = False,
) -> Any:
    """Trace one xmap call of ``body`` (inside ``jit``, or ``inline`` inside an enclosing xmap)."""
    plan = make_plan(config, mesh, resources, args)
    data, _ = unwrap_arguments(args)
    check_argument_conflicts(plan, data)  # before divisibility: a conflict is the fault the plugin names
    check_divisible(plan.sizes, plan.resources, plan.mesh_shape or {})
    frame = Frame(plan.names, dict(plan.sizes), dict(plan.resources), mesh)
    observed = Observed()
    element = element_function(plan, body, args, observed)
    mapped = nest(plan, frame, observed, element)

    def run(values: Sequence[Any]) -> tuple[Any, ...]:
        outs = mapped(*values)
        check_output_conflicts(plan, outs, observed.axes, lambda j, i: observed.label(plan, j, i))
        return tuple(outs)

    stack = active_frames()
    stack.append(frame)
    try:
        check_intermediates(plan, element, data)
        if mesh is None:
            outs = run(data)
        elif inline:
            outs = run_constrained(plan, data, run, observed.placement)
        else:
            outs = run_on_mesh(plan, data, run, observed.placement)
    except NameError as error:
        _reraise(error, _loop_error(plan, error))
    except AssertionError as error:
        _reraise(error, _permute_error(plan, element, data, error))
    except ValueError as error:
        _reraise(error, unlisted_by_vmap_error(error, config.name))
    finally:
        stack.pop()
    if mesh is not None and stack:  # tell the enclosing xmap where this one put its results
        for value, spec in output_specs(plan, outs, observed.placement):
            stack[-1].placed[id(value)] = (value, tuple(spec))
    return config.out_spec.treedef.unflatten(outs)


def _reraise(error: Exception, translated: Exception) -> NoReturn:
    """Raise JAX's ``error`` in our words, or as it is when it is not one we translate."""
    if translated is error:
        raise error
    raise translated from None


def _loop_error(plan: Plan, error: NameError) -> Exception:
    loop = plan.resources[plan.loop_axis][-1] if plan.loop_axis is not None else None
    return loop_axis_error(error, plan.loop_axis, loop)


def _permute_error(plan: Plan, element: Callable[..., Any], data: Sequence[Any], error: AssertionError) -> Exception:
    avals = element_avals(plan, data)
    return multi_axis_permute_error(error, element, avals, list(plan.axis_env().items()), plan.config.name)
