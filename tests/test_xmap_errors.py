"""Every error of the original xmap's error table (reference §2), as our errors: axis, path, fix."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import typed_xmap as tx
from typed_xmap import NamedShapeError, xmap

A = np.ones((5, 3), np.float32)


def identity(v):
    return v


# -- at construction --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            dict(in_axes="i", out_axes=["i", ...]),
            "in_axes = 'i': a spec is a list of axis names (optionally ending in ...), like ['batch', ...], or a dict "
            "from positional dims to names, like {0: 'batch'}; got str. Fix: for a whole argument without named "
            "axes, use {}",
        ),
        (
            dict(in_axes=(["i", "i"],), out_axes=["i", ...]),
            "in_axes[0] = ['i', 'i']: axis 'i' is named twice (dims 0 and 1); names must be unique within one spec. "
            "Fix: give each dim its own name",
        ),
        (
            dict(in_axes=({-1: "i"},), out_axes=["i", ...]),
            "in_axes[0] = {-1: 'i'}: negative dim -1 for axis 'i'; xmap specs count dims from the front. "
            "Fix: use a non-negative position",
        ),
        (
            dict(in_axes=(["i", ...],), out_axes={-1: "i"}),
            "out_axes = {-1: 'i'}: negative dim -1 for axis 'i'; xmap specs count dims from the front. "
            "Fix: use a non-negative position",
        ),
        (
            dict(in_axes=(["i", ...],), out_axes=()),
            "out_axes=() for identity: an xmapped function must return something. Fix: give one spec per output",
        ),
        (
            dict(in_axes=({"a": "i"},), out_axes=["i", ...]),
            "in_axes[0] = {'a': 'i'}: dict specs map positional dims (ints) to names, but key 'a' is not an int. "
            "Fix: write {0: 'batch'}, or a list ['batch', ...]",
        ),
        (
            dict(in_axes=(["i", ...], None), out_axes=["i", ...]),
            "in_axes[1] is None, which xmap does not accept as a spec. Fix: write {} for a value without named axes",
        ),
        (
            dict(in_axes=(["i", ...],), out_axes=["i", ...], axis_resources={"i": ("x", "x")}),
            "axis_resources['i'] = ('x', 'x'): a single axis must be assigned a tuple of distinct resources. "
            "Fix: list each mesh axis once",
        ),
        (
            dict(in_axes=(["i", ...],)),
            "xmap needs out_axes: which named axes each output carries, and where. "
            "Fix: xmap(f, in_axes=..., out_axes=['batch', ...])",
        ),
    ],
)
def test_construction_errors(kwargs, message):
    with pytest.raises(NamedShapeError) as info:
        xmap(identity, **kwargs)
    assert str(info.value) == message


def test_not_callable():
    with pytest.raises(TypeError, match="xmap expects a function"):
        xmap(3, in_axes=["i", ...], out_axes=["i", ...])


# -- at call time -------------------------------------------------------------------------------
def call_error(fn, *args):
    with pytest.raises(NamedShapeError) as info:
        fn(*args)
    return str(info.value).split("\n")[0]


def test_undefined_names():
    f = xmap(identity, in_axes=(["i", ...],), out_axes=["c", ...])
    assert call_error(f, A) == (
        "out_axes names axis 'c', which neither in_axes (or the NamedArray arguments) nor axis_sizes defines. "
        "Fix: map it in in_axes, or give its size in axis_sizes"
    )
    g = xmap(identity, in_axes=(["i", ...],), out_axes=["i", ...], axis_resources={"b": "x"})
    assert call_error(g, A).startswith("axis_resources names axis 'b', which neither in_axes")


def test_size_cannot_be_inferred():
    g = xmap(lambda *xs: 1.0, in_axes=["i", ...], out_axes=["i", ...])
    assert call_error(g) == (
        "cannot infer the size of axis 'i': no argument maps it (empty containers?). "
        "Fix: give its size with axis_sizes={'i': SIZE}"
    )


def test_rank_too_small_and_rank_assertions():
    f = xmap(identity, in_axes=({0: "a"}, ["i", "j", ...]), out_axes=["i", "j", ...])
    assert call_error(f, A, A[0]) == (
        "in_axes[1] (for args[1]) = ['i', 'j', ...] names dim 1, so the value needs at least 2 positional dims, "
        "but it has rank 1 (shape (3,)). Fix: name dims the value has"
    )
    g = xmap(identity, in_axes=(["i", None],), out_axes=["i", ...])
    assert call_error(g, A[0]) == (
        "in_axes[0] (for args[0]) = ['i', None]: a list spec without '...' asserts rank 2, but the value has rank 1 "
        "(shape (3,)). Fix: end the list with ... to allow more dims"
    )
    h = xmap(identity, in_axes=(["i", ...],), out_axes=["i", None])
    assert call_error(h, np.ones((5, 2, 2))) == (
        "the output (out_axes = ['i', None]): a list spec without '...' asserts rank 2, but the output has rank 3 "
        "(2 positional dims per element, shape (2, 2), plus 1 named). Fix: end the list with ... to allow more dims"
    )
    k = xmap(lambda v: jnp.sum(v), in_axes=(["i", ...],), out_axes={1: "i"})
    assert call_error(k, A) == (
        "the output (out_axes = {1: 'i'}) puts axis 'i' at dim 1, which needs at least 1 positional dims per "
        "element, but the result has 0 (shape ()). Fix: use lower positions in out_axes"
    )


def test_inconsistent_sizes():
    f = xmap(jnp.add, in_axes=(["i", ...], ["i", ...]), out_axes=["i", ...])
    assert call_error(f, A, np.ones((7, 3))) == (
        "axis 'i' has size 5 from args[0] (in_axes[0] = ['i', ...]), dim 0, but size 7 in args[1] (in_axes[1] = "
        "['i', ...]), dim 0 (shape (7, 3)). One axis has one size in an xmap call. Fix: make the sizes agree, or "
        "give the two axes different names"
    )
    g = xmap(identity, in_axes=(["i", ...],), out_axes=["i", ...], axis_sizes={"i": 4})
    assert call_error(g, A).startswith("axis 'i' has size 4 from axis_sizes['i'], but size 5 in args[0]")


def test_not_a_tree_prefix():
    f = xmap(lambda d: d["w"], in_axes=({"w": ["i", ...], "b": {}},), out_axes=["i", ...])
    assert call_error(f, {"w": A}).startswith(
        "in_axes must be a tree prefix of the argument tuple, but in_axes has structure"
    )
    g = xmap(lambda v: (v, v), in_axes=(["i", ...],), out_axes=(["i", ...], ["i", ...], ["i", ...]))
    assert call_error(g, A).startswith("out_axes must be a tree prefix of what <lambda> returns")


def test_path_inside_a_dict_argument():
    f = xmap(lambda d: d["w"], in_axes=({"w": ["i", "j"]},), out_axes=["i", "j"])
    assert call_error(f, {"w": A[0]}) == (
        "in_axes[0]['w'] (for args[0]['w']) = ['i', 'j']: a list spec without '...' asserts rank 2, but the value "
        "has rank 1 (shape (3,)). Fix: end the list with ... to allow more dims"
    )


def test_missing_in_axes_needs_named_arrays():
    f = xmap(identity, out_axes=["i", ...])
    assert call_error(f, A) == (
        "xmap was called without in_axes, so every argument must be a NamedArray, but args[0] is a positional "
        "array of shape (5, 3). "
        "Fix: pass in_axes=..., or name it with tx.named(array, axes)"
    )


def test_named_array_axis_named_twice():
    f = xmap(identity, in_axes=(["i", ...],), out_axes=["i", ...])
    assert call_error(f, tx.named(A, {1: "i"})).startswith("in_axes[0] = ['i', ...] names axis 'i' for args[0]")


def test_typed_body_returning_a_foreign_axis():
    from typed_xmap import NamedArray, f32

    def body(v: NamedArray[f32, "i"]):
        return tx.named(jnp.ones(2), ["zz"]) * v

    f = xmap(body, in_axes=(["i", ...],), out_axes=["i", ...])
    assert "carries axis 'zz', which is not an axis of this xmap" in call_error(f, A[:, 0])


def test_collective_over_an_unbound_name_is_worded_for_xmap():
    with pytest.raises(tx.UnboundAxisError) as info:
        xmap(lambda a: lax.psum(a, "zz"), in_axes=["i", ...], out_axes=["i", ...])(np.ones((3, 4), np.float32))
    assert str(info.value).startswith(
        "a collective in <lambda> uses axis 'zz', which no enclosing xmap or vmap binds (axes in scope: 'i'). "
        "Fix: use one of those names, or map 'zz' with an enclosing xmap (in_axes or axis_sizes)"
    )
    assert isinstance(info.value, NameError)  # code catching JAX's NameError keeps working
    assert isinstance(info.value.__cause__, NameError)  # JAX's own error stays attached, as raised


@pytest.mark.parametrize(
    "collective",
    [lambda a: lax.all_gather(a, "zz"), lambda a: a * lax.axis_size("zz"), lambda a: lax.psum_scatter(a, "zz")],
    ids=["all_gather", "axis_size", "psum_scatter"],
)
def test_every_collective_over_an_unbound_name_is_worded_for_xmap(collective):
    """JAX words these without the period psum's message has ("unbound axis name: zz"): ours all the same."""
    with pytest.raises(tx.UnboundAxisError, match=r"^a collective in <lambda> uses axis 'zz', which no enclosing"):
        xmap(collective, in_axes=["i", ...], out_axes=["i", ...])(np.ones((4, 4), np.float32))


def test_input_committed_to_other_devices():
    with jax.set_mesh(jax.make_mesh((1,), ("a",))):
        x = jnp.ones((8,))
    with jax.set_mesh(jax.make_mesh((4, 2), ("x", "y"))):
        with pytest.raises(NamedShapeError) as info:
            xmap(lambda v: v, in_axes=["i"], out_axes=["i"], axis_resources={"i": "x"})(x)
    assert str(info.value) == (
        "xmap of <lambda>: args[0] is a jax.Array placed on devices [0], but the call runs on the current mesh's "
        "8 devices; xmap does not move committed arrays between devices implicitly. Fix: create it under the "
        "same mesh, or move it first: jax.device_put(x, jax.sharding.NamedSharding(mesh, jax.P()))"
    )
