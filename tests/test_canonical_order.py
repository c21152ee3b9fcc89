"""A named shape is a set: a NamedArray's pytree structure never depends on the order its axes came in."""

import jax
import jax.numpy as jnp
import numpy as np

import typed_xmap as tx
import typed_xmap.numpy as tnp

X = np.arange(6, dtype=np.float32).reshape(2, 3)  # batch, embed
G = np.array([1.0, 0.5, 2.0], dtype=np.float32)  # embed


def values():
    return tx.named(jnp.asarray(X), ["batch", "embed"]), tx.named(jnp.asarray(G), ["embed"])


def test_the_order_an_array_is_named_in_is_not_structure():
    a = tx.named(jnp.asarray(X), ["batch", "embed"])
    b = tx.named(jnp.asarray(X.T), ["embed", "batch"])
    assert jax.tree.structure(a) == jax.tree.structure(b)
    np.testing.assert_array_equal(tx.positional(b, ["batch", "embed"]), X)
    np.testing.assert_array_equal(tx.positional(b, ["embed", "batch"]), X.T)


def test_operations_give_the_same_structure_whatever_order_they_produce():
    x, g = values()
    w = tx.named(jnp.ones((3, 4)), ["embed", "mlp"])
    assert jax.tree.structure(g * x) == jax.tree.structure(x)
    assert jax.tree.structure(x * g) == jax.tree.structure(g * x)
    h = tnp.einsum("{embed},{embed,mlp}->{mlp}", x, w)
    assert jax.tree.structure(h) == jax.tree.structure(tx.named(jnp.ones((4, 2)), ["mlp", "batch"]))


def test_scan_carry_with_a_result_in_another_order():
    x, g = values()
    out, _ = jax.lax.scan(lambda c, _: (g * c, None), x, None, length=3)
    assert out.named_shape == {"batch": 2, "embed": 3}
    np.testing.assert_allclose(tx.positional(out, ["batch", "embed"]), X * G**3)
    jitted, _ = jax.jit(lambda x: jax.lax.scan(lambda c, _: (g * c, None), x, None, length=3))(x)
    np.testing.assert_allclose(tx.positional(jitted, ["embed", "batch"]), (X * G**3).T)


def test_cond_branches_in_different_orders():
    x, g = values()

    def f(p, x):
        return jax.lax.cond(p, lambda v: g * v, lambda v: v + 1.0, x)

    for p, expected in ((True, X * G), (False, X + 1.0)):
        out = jax.jit(f)(p, x)
        np.testing.assert_allclose(tx.positional(out, ["batch", "embed"]), expected)


def test_while_loop_carry_in_another_order():
    x, g = values()

    def body(carry):
        i, v = carry
        return i + 1, g * v

    _, out = jax.lax.while_loop(lambda c: c[0] < 2, body, (0, x))
    np.testing.assert_allclose(tx.positional(out, ["batch", "embed"]), X * G**2)


def test_mapped_axes_order_is_not_structure():
    from typed_xmap._value._named_array import wrap

    a = wrap(jnp.ones(()), (), (("i", 2), ("j", 3)))
    b = wrap(jnp.ones(()), (), (("j", 3), ("i", 2)))
    assert jax.tree.structure(a) == jax.tree.structure(b)


def test_the_common_paths_add_no_transposes_under_jit():
    """Stored sorted, a matmul, bias add and reduction compile to the ops plain jnp compiles to."""
    x = tx.named(jnp.ones((8, 16)), ["seq", "embed"])  # stored (embed, seq)
    w = tx.named(jnp.ones((16, 32)), ["embed", "mlp"])
    b = tx.named(jnp.ones((32,)), ["mlp"])

    def named(x, w, b):
        return tnp.sum(tnp.einsum("{embed},{embed,mlp}->{mlp}", x, w) * b + 1.0, "mlp")

    def plain(x, w, b):
        return jnp.sum(jnp.einsum("es,em->sm", x, w) * b + 1.0, axis=1)

    named_hlo = jax.jit(named).lower(x, w, b).compile().as_text()
    plain_hlo = jax.jit(plain).lower(x.data, w.data, b.data).compile().as_text()
    assert named_hlo.count("transpose(") == plain_hlo.count("transpose(")
    np.testing.assert_allclose(named(x, w, b).data, plain(x.data, w.data, b.data))


def test_a_placeholder_leaf_never_changes_the_structure_of_real_values():
    """jax builds NamedArrays around placeholders (no ``ndim``), which flatten unsorted; that must not make
    a real value named in the same order flatten unsorted too."""
    from typed_xmap._value._named_array import wrap

    jax.tree.flatten(wrap(None, ("embed", "batch")))  # a placeholder, named unsorted, flattens first
    a = tx.named(jnp.asarray(X), ["batch", "embed"])
    b = wrap(jnp.asarray(X.T), ("embed", "batch"))  # laid out unsorted, as an operation may produce it
    assert jax.tree.structure(a) == jax.tree.structure(b)
    np.testing.assert_array_equal(jax.tree.leaves(b)[0], X)


def _transposes(f, *args):
    return sum(e.primitive.name == "transpose" for e in jax.make_jaxpr(f)(*args).jaxpr.eqns)


def test_a_vit_stem_keeps_the_layout_jnp_gives_it():
    """Splitting an axis in place, merging side-by-side axes, a broadcast laid out in the target's order and a
    join in the largest operand's layout: the patch embedding and class token of a ViT, as jnp lays them out
    (a class token in another layout made every later layer norm reduce over a major dim)."""
    images = np.arange(2 * 4 * 4 * 3, dtype=np.float32).reshape(2, 4, 4, 3)
    x = tx.named(jnp.asarray(images), ["batch", "height", "width", "channels"])  # stored (batch, channels, h, w)
    tiles = tx.split_axis(tx.split_axis(x, "height", {"gh": 2, "ph": 2}), "width", {"gw": 2, "pw": 2})
    assert tiles.axes == ("batch", "channels", "gh", "ph", "gw", "pw")
    assert _transposes(lambda x: tx.split_axis(x, "height", {"gh": 2, "ph": 2}), x) == 0
    expected = images.reshape(2, 2, 2, 2, 2, 3)  # batch, gh, ph, gw, pw, channels
    np.testing.assert_array_equal(tx.positional(tiles, ["batch", "gh", "ph", "gw", "pw", "channels"]), expected)
    emb = tnp.einsum(
        "{ph,pw,channels},{ph,pw,channels,embed}->{embed}",
        tiles,
        tx.named(jnp.ones((2, 2, 3, 5)), ["ph", "pw", "channels", "embed"]),
    )
    assert emb.axes == ("batch", "gh", "gw", "embed")
    seq = tx.merge_axes(emb, ("gh", "gw"), "seq")
    assert seq.axes == ("batch", "seq", "embed")
    assert _transposes(lambda e: tx.merge_axes(e, ("gh", "gw"), "seq"), emb) == 0
    np.testing.assert_allclose(
        tx.positional(seq, ["batch", "seq", "embed"]),
        tx.positional(emb, ["batch", "gh", "gw", "embed"]).reshape(2, 4, 5),
    )
    cls = tx.named(jnp.arange(5.0), ["embed"])
    token = tx.broadcast_to(cls, {"batch": 2, "seq": 1, "embed": 5})
    assert token.axes == ("batch", "seq", "embed")
    np.testing.assert_array_equal(
        tx.positional(token, ["batch", "seq", "embed"]), np.broadcast_to(np.arange(5.0), (2, 1, 5))
    )
    joined = tnp.concatenate([token, seq], "seq")
    assert joined.axes == ("batch", "seq", "embed")
    np.testing.assert_allclose(
        tx.positional(joined, ["batch", "seq", "embed"]),
        np.concatenate([np.broadcast_to(np.arange(5.0), (2, 1, 5)), tx.positional(seq, ["batch", "seq", "embed"])], 1),
    )
    # merging axes that are not side by side still works (a transpose brings them together first)
    apart = tx.merge_axes(tiles, ("ph", "pw"), "p")
    assert apart.axes == ("batch", "channels", "gh", "p", "gw")
    np.testing.assert_array_equal(
        tx.positional(apart, ["batch", "gh", "gw", "p", "channels"]),
        expected.transpose(0, 1, 3, 2, 4, 5).reshape(2, 2, 2, 4, 3),
    )


def test_jit_results_flatten_to_the_structure_of_their_arguments():
    """A jit call's results come back through the unflatten's fast path; they flatten as the arguments did
    (the same shared aux, so jit's next call finds its cache), whatever order the step produced."""
    x, g = values()
    step = jax.jit(lambda x, g: (g * x, tnp.sum(x, "embed")))
    out, total = step(x, g)
    assert jax.tree.structure(out) == jax.tree.structure(x)
    assert jax.tree.structure(out).node_data()[1] is jax.tree.structure(x).node_data()[1]
    again, _ = step(out, g)
    np.testing.assert_allclose(tx.positional(again, ["batch", "embed"]), X * G**2)
    np.testing.assert_allclose(tx.positional(total, ["batch"]), X.sum(1))
    sums = jax.tree.map(jnp.sum, {"x": out})  # a leaf reduced to a scalar stays a plain scalar
    assert not isinstance(sums["x"], tx.NamedArray)
