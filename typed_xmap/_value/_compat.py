"""Every private JAX API the runtime reads (``jax._src``, undocumented equation params), in this one module.

JAX has no public API for these. Each reader checks what it gets and raises ``JaxCompatibilityError``,
naming the JAX version and what changed, when a JAX release no longer has it: never a silent wrong answer.
The texts of JAX's errors that xmap translates are read here too (a reworded one would only leave JAX's
message untranslated). tests/test_compat.py exercises every reader against the installed JAX. (What was
public is used as such: ``jax.extend.source_info_util.summarize``, ``jax.sharding.get_abstract_mesh``.)
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

__all__ = [
    "JaxCompatibilityError",
    "array_impl",
    "batched_at",
    "current_trace",
    "hide_frames_under",
    "is_incompatible_devices_error",
    "is_multi_axis_permute_error",
    "is_not_an_array_error",
    "is_unlisted_by_vmap_error",
    "is_user_filename",
    "legacy_mesh",
    "on_abstractify",
    "scan_layout",
    "traceback_boundary",
    "tracing",
    "unbound_axis_name",
    "user_frames",
    "while_layout",
]


F = TypeVar("F", bound=Callable[..., Any])


class JaxCompatibilityError(RuntimeError):
    """typed_xmap met a JAX whose internals differ from every version it knows: a typed_xmap bug to report."""


def _incompatible(what: str) -> JaxCompatibilityError:
    import jax

    return JaxCompatibilityError(
        f"typed_xmap internal error: {what} (jax {jax.__version__}). This JAX changed an internal that "
        "typed_xmap reads (typed_xmap/_value/_compat.py). Fix: install a JAX version typed_xmap supports "
        "(see its jax pin), and report this message with your JAX version"
    )


def array_impl() -> Any:
    """The type of a concrete jax array (``jax._src.array.ArrayImpl``): data of this type (or numpy's) is laid
    out in name order when a value is made (``_named_array.wrap``, ``_flat.flat_of``)."""
    try:
        from jax._src.array import ArrayImpl
    except ImportError as error:
        raise _incompatible("jax._src.array.ArrayImpl is gone") from error
    return ArrayImpl


def current_trace() -> Any:
    """The trace JAX is tracing with now (``jax._src.core.trace_ctx.trace``)."""
    try:
        from jax._src import core

        return core.trace_ctx.trace
    except (ImportError, AttributeError) as error:
        raise _incompatible("jax._src.core.trace_ctx.trace is gone") from error


def tracing() -> bool:
    """Whether JAX is tracing now (inside ``jax.jit`` or another transformation), where the concrete mesh is
    out of reach (``jax.sharding.get_mesh`` raises): ``not jax._src.core.trace_state_clean()``."""
    try:
        from jax._src import core

        return not core.trace_state_clean()
    except (ImportError, AttributeError) as error:
        raise _incompatible("jax._src.core.trace_state_clean is gone") from error


def batched_at(value: Any, trace: Any) -> bool:
    """Whether ``value`` is batched at ``trace`` (a vmap level), looking through the vmap levels inside it.

    Reads ``jax._src.interpreters.batching.BatchTracer`` and its ``_trace``, ``batch_dim`` and ``val``.
    """
    try:
        from jax._src.interpreters.batching import BatchTracer

        while isinstance(value, BatchTracer):
            if value._trace is trace:
                return type(value.batch_dim) is int
            value = value.val
    except (ImportError, AttributeError) as error:
        raise _incompatible("BatchTracer (or its _trace, batch_dim, val) is not what it was") from error
    return False


def legacy_mesh() -> Any:
    """The mesh of the deprecated ``with mesh:`` (``jax._src.mesh.thread_resources``), or ``None``."""
    try:
        from jax._src import mesh as mesh_lib

        legacy = mesh_lib.thread_resources.env.physical_mesh
        return None if legacy.empty else legacy
    except (ImportError, AttributeError) as error:
        raise _incompatible("jax._src.mesh.thread_resources.env.physical_mesh is gone") from error


def _source_info_util() -> Any:
    try:
        from jax._src import source_info_util
    except ImportError as error:  # pragma: no cover - the module has been there since jax 0.2
        raise _incompatible("jax._src.source_info_util is gone") from error
    return source_info_util


def user_frames(traceback: Any) -> Iterator[Any]:
    """The frames of a traceback outside JAX (``source_info_util.user_frames``), innermost first."""
    try:
        frames = _source_info_util().user_frames(traceback)
    except AttributeError as error:
        raise _incompatible("jax._src.source_info_util.user_frames is gone") from error
    for frame in frames:
        if not all(hasattr(frame, field) for field in ("file_name", "start_line", "start_column", "function_name")):
            raise _incompatible(f"a source frame lacks file_name/start_line/start_column/function_name: {frame!r}")
        yield frame


def is_user_filename(path: str) -> bool:
    """Whether ``path`` is outside JAX (``source_info_util.is_user_filename``)."""
    try:
        check = _source_info_util().is_user_filename
    except AttributeError as error:
        raise _incompatible("jax._src.source_info_util.is_user_filename is gone") from error
    return bool(check(path))


def scan_layout(params: Mapping[str, Any]) -> tuple[int, int]:
    """``(consts, carry)``: how many of a ``scan`` equation's inputs are constants, then the carry.

    JAX up to 0.10 says so in ``num_consts`` and ``num_carry``; from 0.11 in ``ft_in``, a flat tree of
    (consts, carry, xs) whose parts ``unpack`` and ``len`` count.
    """
    if "num_consts" in params and "num_carry" in params:
        return int(params["num_consts"]), int(params["num_carry"])
    layout = params.get("ft_in")
    if layout is not None:
        try:
            consts, carry, _ = layout.unpack()
            return len(consts), len(carry)
        except (AttributeError, TypeError, ValueError) as error:
            raise _incompatible(f"the scan equation's ft_in is not (consts, carry, xs): {layout!r}") from error
    raise _incompatible(f"the scan equation has neither num_consts/num_carry nor ft_in (params: {sorted(params)})")


def while_layout(params: Mapping[str, Any]) -> tuple[int, int]:
    """``(cond consts, body consts)``: how many of a ``while`` equation's inputs are each body's constants."""
    try:
        return int(params["cond_nconsts"]), int(params["body_nconsts"])
    except KeyError as error:
        raise _incompatible(f"the while equation lacks cond_nconsts/body_nconsts (params: {sorted(params)})") from error


# The hooks below only make tracebacks and messages nicer, so a JAX without one degrades to JAX's own
# traceback or message (never a wrong result); tests/test_jax_hooks.py fails loudly when JAX moves one.
_ABSTRACTIFIERS = frozenset({"typeof", "shaped_abstractify", "get_aval"})
"""JAX's functions that look up ``pytype_aval_mappings``: the frames between the hook and the JAX caller."""


def hide_frames_under(path: str) -> None:
    """Let JAX's traceback filter drop the frames of the files under ``path``, as it drops its own."""
    from jax._src import traceback_util

    register = getattr(traceback_util, "register_exclusion", None)
    if register is not None:
        register(path)


def traceback_boundary(fn: F) -> F:
    """``fn`` filtering the traceback of an error raised below it, as JAX's API functions do."""
    from jax._src import traceback_util

    boundary = getattr(traceback_util, "api_boundary", None)
    return fn if boundary is None else boundary(fn)


def on_abstractify(cls: type, abstractify: Callable[[Any, str], Any]) -> None:
    """Where JAX takes an instance of ``cls`` for an array (``jax.grad``'s output, a lax function's operand), call
    ``abstractify(value, caller)``, ``caller`` naming the JAX function asking: it returns the abstract value
    JAX gets or raises our error, instead of JAX's about ``__jax_array__``, which names neither the value's
    type nor the fix."""
    from jax._src import core, dtypes

    mappings = getattr(core, "pytype_aval_mappings", None)
    if isinstance(mappings, dict):
        mappings[cls] = lambda value: abstractify(value, _jax_caller())
    register = getattr(dtypes, "register_canonicalize_value_handler", None)
    if register is not None:  # a lax function's operand
        register(cls, lambda value: abstractify(value, ""))


def _jax_caller() -> str:
    frame = sys._getframe(3)  # above _jax_caller, the lambda and abstractify: JAX's abstractifier
    while frame.f_back is not None and frame.f_code.co_name in _ABSTRACTIFIERS:
        frame = frame.f_back
    return frame.f_code.co_name


# JAX's error texts. JAX reports some faults of an xmap call in terms of what xmap lowers to (vmap levels, the
# internal jitted function) and says which fault only in its message; tests/test_compat.py provokes each of
# these errors with plain JAX, so a reworded message fails there by name.
_UNBOUND_AXIS = re.compile(r"unbound axis name: (\S+?)\.?(?:\s|$)")


def unbound_axis_name(error: BaseException) -> str | None:
    """The axis of a collective's "unbound axis name: NAME" (no vmap or shard_map binds it), else ``None``."""
    match = _UNBOUND_AXIS.search(str(error))
    return None if match is None else match.group(1)


def is_unlisted_by_vmap_error(error: BaseException) -> bool:
    """vmap's out_axes check: an output batched along an axis its ``out_axes`` leave unmapped."""
    return "out_axes" in str(error) and "batched" in str(error)


def is_multi_axis_permute_error(error: BaseException) -> bool:
    """The assertion of vmap's ``ppermute`` rule against a permutation over several axes."""
    return "Permutation doesn't match the axis size" in str(error)


def is_not_an_array_error(error: BaseException) -> bool:
    """jit's error for an argument it cannot take as an array (a string, an arbitrary object)."""
    return "is not a valid JAX type" in str(error) or "as an abstract array" in str(error)


def is_incompatible_devices_error(error: BaseException) -> bool:
    """jit's error for arguments committed to different devices."""
    return "incompatible devices" in str(error)
