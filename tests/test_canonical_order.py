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
