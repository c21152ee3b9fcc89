"""The private JAX the runtime reads (typed_xmap/_value/_compat.py) still means what it did in the installed JAX.

Each reader is exercised on a real JAX value, so a JAX release that renames or reshapes one fails here by
name; and each raises ``JaxCompatibilityError`` (never a silent wrong answer) when what it reads is gone.
"""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import typed_xmap as tx
from typed_xmap._value import _compat
from typed_xmap._value._compat import JaxCompatibilityError

PACKAGE = Path(__file__).resolve().parents[1] / "typed_xmap"


def test_only_the_compat_module_imports_private_jax():
    """The runtime's private-JAX uses live in one module (the plugin never imports jax: it names jax's
    functions as mypy sees them, which tests/test_plugin_* cover)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "_compat.py" or "plugin" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import | ast.ImportFrom) else []
            if any(name.startswith("jax._src") for name in names):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []


def _scan_equation(jaxpr):
    return next(e for e in jaxpr.eqns if e.primitive.name == "scan")


def test_scan_layout_reads_the_installed_jaxs_scan_equation():
    w = jnp.ones(3)

    def f(c0, c1, xs):
        return jax.lax.scan(lambda c, x: ((c[0] + x * w, c[1] + 1), c[0].sum()), (c0, c1), xs)

    jaxpr = jax.make_jaxpr(f)(jnp.zeros(3), jnp.zeros(()), jnp.ones((5, 3)))
    eqn = _scan_equation(jaxpr.jaxpr)
    consts, carry = _compat.scan_layout(eqn.params)
    assert carry == 2 and consts + carry + 1 == len(eqn.invars)


def test_scan_layout_reads_both_forms_and_fails_loudly_on_neither():
    assert _compat.scan_layout({"num_consts": 1, "num_carry": 2, "jaxpr": None}) == (1, 2)  # jax <= 0.10
    parts = ([None], [None, None, None], [None])
    assert _compat.scan_layout({"ft_in": SimpleNamespace(unpack=lambda: parts)}) == (1, 3)  # jax >= 0.11
    with pytest.raises(JaxCompatibilityError, match=r"neither num_consts/num_carry nor ft_in \(params: \['jaxpr', "):
        _compat.scan_layout({"jaxpr": None, "length": 3})
    with pytest.raises(JaxCompatibilityError, match="ft_in is not \\(consts, carry, xs\\)") as raised:
        _compat.scan_layout({"ft_in": SimpleNamespace(unpack=lambda: ([], []))})
    message = str(raised.value)
    assert message.startswith("typed_xmap internal error: ") and f"(jax {jax.__version__})" in message
    assert "Fix: install a JAX version typed_xmap supports" in message


def test_while_layout_reads_the_installed_jaxs_while_equation():
    def f(x, k):
        return jax.lax.while_loop(lambda c: c[0] < k, lambda c: (c[0] + 1, c[1] * x), (0, x))

    eqn = next(e for e in jax.make_jaxpr(f)(jnp.float32(2), 3).jaxpr.eqns if e.primitive.name == "while")
    cond, body = _compat.while_layout(eqn.params)
    assert (cond, body) == (1, 1) and len(eqn.invars) == cond + body + 2
    with pytest.raises(JaxCompatibilityError, match="lacks cond_nconsts/body_nconsts"):
        _compat.while_layout({"cond_jaxpr": None})


def test_xmap_follows_a_scan_in_its_body_to_a_conflict():
    """The scan reader in use: a conflict made inside a scan's carry is found through the scan equation."""

    def body(x, w):
        carry, _ = jax.lax.scan(lambda c, _: (c * x * w, None), jnp.float32(1), None, length=2)
        return carry

    f = tx.xmap(body, in_axes=(["a", ...], ["b", ...]), out_axes=["a", "b", ...], axis_resources={"a": "x", "b": "x"})
    with jax.set_mesh(jax.make_mesh((4, 2), ("x", "y"))), pytest.raises(tx.AxisResourceConflict, match="'a' and 'b'"):
        f(np.ones(4, np.float32), np.ones(4, np.float32))


def test_batched_at_and_current_trace_see_vmap_levels():
    seen = {}

    def f(x, y):
        trace = _compat.current_trace()
        seen["x"], seen["y"] = _compat.batched_at(x, trace), _compat.batched_at(y, trace)
        seen["psum"] = _compat.batched_at(jax.lax.psum(x, "i"), trace)
        return x + y

    jax.vmap(f, in_axes=(0, None), axis_name="i")(jnp.ones(3), jnp.ones(()))
    assert seen == {"x": True, "y": False, "psum": False}
    assert _compat.batched_at(jnp.ones(3), _compat.current_trace()) is False  # a concrete array


def test_batched_at_fails_loudly_when_a_tracer_lacks_what_it_reads(monkeypatch):
    from jax._src.interpreters import batching

    class Reshaped:  # a BatchTracer of a JAX that renamed _trace, batch_dim and val
        __slots__ = ("dim", "trace", "value")

    monkeypatch.setattr(batching, "BatchTracer", Reshaped)
    with pytest.raises(JaxCompatibilityError, match="BatchTracer \\(or its _trace, batch_dim, val\\)"):
        _compat.batched_at(Reshaped(), None)
    monkeypatch.delattr(batching, "BatchTracer")
    with pytest.raises(JaxCompatibilityError, match="BatchTracer"):
        _compat.batched_at(jnp.ones(2), None)


def test_tracing_is_true_inside_jit_and_vmap_only():
    seen = []

    def body(v):
        seen.append(_compat.tracing())
        return v

    assert not _compat.tracing()
    jax.jit(body)(jnp.ones(2))
    jax.vmap(body)(jnp.ones(2))
    assert seen == [True, True]


def test_legacy_mesh_is_the_with_mesh_context():
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    assert _compat.legacy_mesh() is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # `with mesh:` is deprecated, and still supported
        with mesh:
            assert _compat.legacy_mesh() is mesh


def test_user_frames_and_user_filenames():
    jaxpr = jax.make_jaxpr(lambda x: jnp.sin(x) * 2)(1.0)
    frames = list(_compat.user_frames(jaxpr.eqns[0].source_info.traceback))
    assert frames and frames[0].file_name == __file__ and frames[0].start_line > 0
    assert _compat.is_user_filename(__file__) and not _compat.is_user_filename(jax.numpy.__file__)


def test_user_frames_fail_loudly_on_frames_of_another_shape(monkeypatch):
    from jax._src import source_info_util

    monkeypatch.setattr(source_info_util, "user_frames", lambda traceback: iter([SimpleNamespace(file_name="f")]))
    with pytest.raises(JaxCompatibilityError, match="a source frame lacks file_name"):
        list(_compat.user_frames(None))
    monkeypatch.delattr(source_info_util, "is_user_filename")
    with pytest.raises(JaxCompatibilityError, match="is_user_filename is gone"):
        _compat.is_user_filename(__file__)


def test_array_impl_is_the_type_of_a_concrete_array():
    import jax.numpy as jnp

    from typed_xmap._value._compat import array_impl

    assert type(jnp.ones(2)) is array_impl()


# JAX's error texts that xmap translates (typed_xmap/_xmap/_jax_errors.py), each provoked with plain JAX


def _raised(fn, *args):
    try:
        fn(*args)
    except Exception as error:
        return error
    raise AssertionError(f"{fn} raised nothing")


@pytest.mark.parametrize(
    "collective",
    [
        lambda v: jax.lax.psum(v, "z"),
        lambda v: v + jax.lax.axis_index("z"),
        lambda v: jax.lax.all_gather(v, "z"),
        lambda v: v * jax.lax.axis_size("z"),
        lambda v: jax.lax.psum_scatter(v, "z"),
    ],
    ids=["psum", "axis_index", "all_gather", "axis_size", "psum_scatter"],
)
def test_unbound_axis_name_reads_every_collectives_unbound_axis_error(collective):
    error = _raised(jax.vmap(collective, axis_name="i"), jnp.ones((8, 8)))
    assert isinstance(error, NameError) and _compat.unbound_axis_name(error) == "z"


def test_unbound_axis_name_is_none_for_other_errors():
    assert _compat.unbound_axis_name(NameError("name 'z' is not defined")) is None
    assert _compat.unbound_axis_name(NameError("unbound axis name: heads")) == "heads"


def test_vmaps_out_axes_error_is_recognised():
    error = _raised(jax.vmap(lambda v: v, out_axes=None), jnp.ones(3))
    assert isinstance(error, ValueError) and _compat.is_unlisted_by_vmap_error(error)
    assert not _compat.is_unlisted_by_vmap_error(ValueError("out_axes must be an int"))


def test_a_permute_over_two_vmapped_axes_is_recognised():
    def permute(v):
        return jax.lax.ppermute(v, ("i", "j"), [(k, (k + 1) % 8) for k in range(8)])

    error = _raised(jax.vmap(jax.vmap(permute, axis_name="j"), axis_name="i"), jnp.ones((2, 4)))
    assert isinstance(error, AssertionError) and _compat.is_multi_axis_permute_error(error)


@pytest.mark.parametrize("leaf", ["abc", object()], ids=["str", "object"])
def test_jits_not_an_array_error_is_recognised(leaf):
    error = _raised(jax.jit(lambda v: v), leaf)
    assert isinstance(error, TypeError) and _compat.is_not_an_array_error(error)
    assert not _compat.is_not_an_array_error(TypeError("unsupported operand type(s)"))


def test_jits_incompatible_devices_error_is_recognised():
    one, other = jax.devices()[:2]
    error = _raised(jax.jit(lambda a, b: a + b), jax.device_put(jnp.ones(4), one), jax.device_put(jnp.ones(4), other))
    assert isinstance(error, ValueError) and _compat.is_incompatible_devices_error(error)


def test_the_plugins_jax_names_are_where_the_installed_jax_defines_them():
    """The plugin (which never imports jax) knows JAX's transforms and ``jax.Array`` by the names mypy reads
    in JAX's sources: a JAX that moved one would leave the plugin passing its calls through untyped."""
    from typed_xmap.plugin._hooks._indexing import _SCALAR_INDICES
    from typed_xmap.plugin._hooks._named_vmap import POSITIONAL
    from typed_xmap.plugin._hooks._transforms import TRANSFORMS

    for public in ("jit", "grad", "value_and_grad", "vmap", "checkpoint", "remat"):
        defined = getattr(jax, public)
        assert TRANSFORMS.get(f"{defined.__module__}.{defined.__qualname__}") == TRANSFORMS[f"jax.{public}"], public
    stub = Path(jax.__file__).parent / "_src" / "basearray.pyi"
    assert re.search(r"^class Array\b", stub.read_text(), re.M)
    assert "jax._src.basearray.Array" in _SCALAR_INDICES & POSITIONAL
