"""NamedArray values: named shape, operators broadcasting by name, pytree behaviour under transforms."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import typed_xmap as tx
from typed_xmap import NamedShapeError
from typed_xmap._value._printing import shape_repr


def ones(*named, positional=()):
    """A NamedArray of ones with named axes given as (name, size) pairs."""
    shape = tuple(positional) + tuple(s for _, s in named)
    return tx.named(jnp.ones(shape), {len(positional) + i: n for i, (n, _) in enumerate(named)})


def test_named_shape_shape_dtype_repr():
    x = tx.named(jnp.zeros((8, 3, 4)), {0: "batch", 2: "in_features"})
    assert x.named_shape == {"batch": 8, "in_features": 4}
    assert x.shape == (3,) and x.ndim == 1 and x.dtype == jnp.float32
    assert repr(x).startswith("NamedArray(float32[batch=8, in_features=4; 3], [[[0., 0., 0., 0.],")  # 96 values
    assert shape_repr(x) == "NamedArray(float32[batch=8, in_features=4; 3])"


def test_repr_shows_the_values_of_small_arrays_labelled_by_axis():
    x = tx.named(jnp.arange(6.0).reshape(3, 2), ["embed", "batch"])  # stored batch, embed
    text = "NamedArray(float32[batch=2, embed=3], [[0., 2., 4.],\n                                       [1., 3., 5.]])"
    assert repr(x) == str(x) == f"{x}" == text
    assert repr(tx.named(jnp.array([1, 2]), ["a"])) == "NamedArray(int32[a=2], [1, 2])"
    assert repr(tx.named(jnp.float32(2.0), [])) == "NamedArray(float32[], 2.)"
    assert repr(tx.named(jnp.array([1.0, jnp.nan]), ["a"])) == "NamedArray(float32[a=2], [ 1., nan])"
    p = tx.named(jnp.ones((2, 1)), ["a", ...])  # positional dims come first in the values
    assert repr(p) == "NamedArray(float32[a=2; 1], [[1., 1.]])"


def test_repr_summarises_large_arrays():
    x = tx.named(jnp.arange(200.0).reshape(2, 100).at[0, 0].set(jnp.nan), ["batch", "embed"])
    assert repr(x) == "NamedArray(float32[batch=2, embed=100], min=1, max=199, mean=100, nan=1)"
    assert repr(tx.named(jnp.zeros(101, bool), ["a"])) == "NamedArray(bool[a=101], true=0)"
    assert repr(tx.named(jnp.full(101, jnp.nan), ["a"])) == "NamedArray(float32[a=101], nan=101)"
    assert repr(tx.named(jnp.ones(101, jnp.bfloat16), ["a"])) == "NamedArray(bfloat16[a=101], min=1, max=1, mean=1)"


def test_tracers_print_their_named_shape_and_debug_print_shows_values(capsys):
    x = tx.named(jnp.arange(3.0), ["a"])
    seen = []

    @jax.jit
    def f(v):
        seen.append(repr(v))
        jax.debug.print("{}", v)
        return v

    jax.block_until_ready(f(x))
    jax.effects_barrier()
    assert seen == ["NamedArray(float32[a=3])"]
    assert capsys.readouterr().out == "NamedArray(float32[a=3], [0., 1., 2.])\n"


def test_messages_show_the_named_shape_never_the_values():
    x = tx.named(jnp.ones((2, 3)), ["batch", "embed"])
    with pytest.raises(NamedShapeError, match=r"the truth value of NamedArray\(float32\[batch=2, embed=3\]\) is"):
        bool(x)


def test_binary_ops_take_the_union_of_named_axes():
    x = tx.named(jnp.arange(6.0).reshape(2, 3), ["a", "b"])
    y = tx.named(jnp.arange(3.0 * 4).reshape(4, 3), ["c", "b"])
    z = x * y
    assert z.named_shape == {"a": 2, "b": 3, "c": 4}
    expected = np.einsum("ab,cb->abc", np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(4, 3))
    np.testing.assert_allclose(tx.positional(z, ["a", "b", "c"]), expected)
    # order of the named axes never matters
    np.testing.assert_allclose(tx.positional(y * x, ["a", "b", "c"]), expected)


def test_positional_dims_broadcast_numpy_style_next_to_names():
    x = tx.named(jnp.ones((2, 5)), {1: "a"})  # positional (2,), named a=5
    y = tx.named(jnp.ones((3, 1, 4)), {2: "b"})  # positional (3, 1), named b=4
    z = x + y
    assert z.shape == (3, 2) and z.named_shape == {"a": 5, "b": 4}
    assert (x + jnp.ones(2)).shape == (2,)
    assert (2.0 * x).named_shape == {"a": 5}


@pytest.mark.parametrize(
    "op",
    [
        "__add__",
        "__sub__",
        "__mul__",
        "__truediv__",
        "__pow__",
        "__lt__",
        "__ge__",
        "__eq__",
        "__ne__",
        "__radd__",
        "__rsub__",
        "__rmul__",
        "__rtruediv__",
    ],
)
def test_every_operator_matches_numpy(op):
    a = np.arange(1.0, 7.0).reshape(2, 3)
    b = np.arange(1.0, 4.0)
    x, y = tx.named(a, ["i", "j"]), tx.named(b, ["j"])
    got = tx.positional(getattr(x, op)(y), ["i", "j"])
    expected = getattr(a, op)(b[None, :])
    np.testing.assert_allclose(got, expected)


def test_unary_ops():
    x = tx.named(jnp.array([-1.0, 2.0]), ["i"])
    np.testing.assert_allclose(tx.positional(-x, ["i"]), [1.0, -2.0])
    np.testing.assert_allclose(tx.positional(abs(x), ["i"]), [1.0, 2.0])
    b = tx.named(jnp.array([True, False]), ["i"])
    np.testing.assert_array_equal(tx.positional(~b, ["i"]), [False, True])


def test_size_clash_message():
    x = tx.named(jnp.ones((8, 4)), ["batch", "in_features"])
    y = tx.named(jnp.ones(6), ["batch"])
    with pytest.raises(NamedShapeError) as info:
        x + y
    assert str(info.value) == (
        "axis 'batch' has size 8 in the left operand ('batch=8 in_features=4') but size 6 in the right "
        "operand ('batch=6') in `x + y`; values broadcast by name, so one axis name must have one size. "
        "Fix: rename one of the axes, or slice the larger to the smaller size: x[{'batch': slice(0, 6)}]"
    )
    with pytest.raises(TypeError):
        x - y
    with pytest.raises(ValueError):
        y * x


def test_ambiguous_conversions_raise():
    x = tx.named(jnp.ones((2, 3)), ["a", "b"])
    with pytest.raises(TypeError, match=r"tx.positional\(x, \['a', 'b', \.\.\.\]\)"):
        np.asarray(x)
    with pytest.raises(NamedShapeError, match="ambiguous"):
        bool(x > 0)
    with pytest.raises(TypeError, match=r"tnp\.einsum"):
        x @ x


def test_works_under_jit_and_is_cached_by_names():
    traces = []

    @jax.jit
    def f(x, y):
        traces.append(1)
        return x * y + 1.0

    x, y = ones(("a", 2), ("b", 3)), ones(("b", 3))
    assert f(x, y).named_shape == {"a": 2, "b": 3}
    f(x, y)
    assert len(traces) == 1
    f(tx.named(jnp.ones((3, 2)), ["b", "a"]), y)  # named in another order: the same named shape, no new trace
    assert len(traces) == 1


def test_grad_through_named_values():
    x = tx.named(jnp.arange(3.0), ["i"])
    w = tx.named(jnp.arange(4.0), ["j"])

    def loss(w):
        return jnp.sum((x * w).data ** 2)

    g = jax.grad(loss)(w)
    assert isinstance(g, tx.NamedArray) and g.named_shape == {"j": 4}
    expected = 2 * np.arange(4.0) * np.sum(np.arange(3.0) ** 2)
    np.testing.assert_allclose(tx.positional(g, ["j"]), expected)


def test_vmap_maps_positional_dims():
    x = tx.named(jnp.arange(2.0 * 5).reshape(2, 5), {1: "a"})  # positional (2,), a=5
    y = jax.vmap(lambda v: v * 2.0)(x)
    assert y.shape == (2,) and y.named_shape == {"a": 5}
    np.testing.assert_allclose(tx.positional(y, {1: "a"}), 2 * np.arange(10.0).reshape(2, 5))


def test_vmap_over_a_named_axis_is_a_clear_error():
    x = tx.named(jnp.ones((4, 3)), ["a", "b"])
    with pytest.raises(NamedShapeError, match=r"jax\.vmap maps a named axis"):
        jax.vmap(lambda v: v)(x)


def test_mapped_axes_broadcast_with_data_axes_inside_vmap():
    from typed_xmap._value._named_array import wrap

    w = tx.named(jnp.arange(3.0), ["feat"])
    c = tx.named(jnp.arange(4.0) * 10, ["batch"])  # 'batch' as a data dim, indexed per element

    def body(element):
        x = wrap(element, (), (("batch", 4),))
        result = x + w + c
        assert result.named_shape == {"feat": 3, "batch": 4} and result.mapped == (("batch", 4),)
        return result.data

    out = jax.vmap(body, axis_name="batch")(jnp.arange(4.0))
    np.testing.assert_allclose(out, 11 * np.arange(4.0)[:, None] + np.arange(3.0)[None, :])


def test_numpy_values_on_the_left_broadcast_too():
    x = tx.named(np.ones((2, 4), np.float32), {1: "b"})
    assert (np.float32(2) * x).named_shape == {"b": 4}
    assert (np.ones(2, np.float32) * x).shape == (2,)
    np.testing.assert_allclose(tx.positional(np.array(3.0) - x, {1: "b"}), np.full((2, 4), 2.0))


def test_a_value_without_named_axes_converts_to_numpy():
    x = tx.named(jnp.arange(6.0).reshape(2, 3), {})
    np.testing.assert_array_equal(np.asarray(x), np.arange(6.0).reshape(2, 3))


def test_jnp_on_a_named_array_points_at_tnp_and_jax_operators_still_defer():
    """jnp.exp(x) names tnp; jax's own operators (jnp array on the left) still reach our reflected ones."""
    import jax.numpy as jnp

    import typed_xmap as tx

    x = tx.named(jnp.arange(3.0), ["embed"])
    with pytest.raises(tx.NamedShapeError, match=r"Fix: use typed_xmap\.numpy \(tnp\.exp\(x\)"):
        jnp.exp(x)
    with pytest.raises(TypeError, match=r"tx\.positional"):
        jnp.asarray(x)
    for result in (jnp.ones(3) * x, jnp.ones(()) + x, jnp.zeros(()) < x, jnp.ones(()) == x):
        assert result.named_shape == {"embed": 3}
    assert (jnp.ones(()) - x).data.tolist() == [1.0, 0.0, -1.0]


def test_a_named_array_with_no_named_axes_converts_like_an_array():
    import jax.numpy as jnp
    import numpy as np

    import typed_xmap as tx
    import typed_xmap.numpy as tnp

    loss = tnp.sum(tx.named(jnp.ones((2, 3)), ["a", "b"]), ("a", "b"))
    assert float(jnp.asarray(loss)) == 6.0 and float(np.asarray(loss)) == 6.0
    assert bool(jnp.allclose(loss, 6.0))


def test_leaves_reduced_to_scalars_leave_the_tree_plain_optax_norms_work():
    """jax.tree.map(jnp.sum, params) gives scalars where NamedArrays were; optax's global norm and clipping
    on NamedArray parameters work."""
    import jax
    import jax.numpy as jnp
    import optax

    import typed_xmap as tx

    params = {"w": tx.named(jnp.full((2, 3), 2.0), ["a", "b"]), "b": tx.named(jnp.ones(3), ["b"])}
    sums = jax.tree.map(jnp.sum, params)
    assert float(sums["w"]) == 12.0 and float(sums["b"]) == 3.0
    assert float(optax.tree.norm(params)) == pytest.approx((6 * 4.0 + 3.0) ** 0.5)
    clipped, _ = optax.clip_by_global_norm(1.0).update(params, optax.clip_by_global_norm(1.0).init(params))
    assert clipped["w"].named_shape == {"a": 2, "b": 3}
    assert float(optax.tree.norm(clipped)) == pytest.approx(1.0, rel=1e-5)
