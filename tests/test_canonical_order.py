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
    (a class token in another layout made every later layer norm reduce over a major dim). The layouts are
    those of traced values (what XLA compiles); the concrete results come back in name order."""
    images = np.arange(2 * 4 * 4 * 3, dtype=np.float32).reshape(2, 4, 4, 3)
    x = tx.named(jnp.asarray(images), ["batch", "height", "width", "channels"])  # stored (batch, channels, h, w)
    kernel = tx.named(jnp.ones((2, 2, 3, 5)), ["ph", "pw", "channels", "embed"])
    cls = tx.named(jnp.arange(5.0), ["embed"])
    layouts = {}

    def stem(x, kernel, cls):
        tiles = tx.split_axis(tx.split_axis(x, "height", {"gh": 2, "ph": 2}), "width", {"gw": 2, "pw": 2})
        emb = tnp.einsum("{ph,pw,channels},{ph,pw,channels,embed}->{embed}", tiles, kernel)
        seq = tx.merge_axes(emb, ("gh", "gw"), "seq")
        token = tx.broadcast_to(cls, {"batch": 2, "seq": 1, "embed": 5})
        joined = tnp.concatenate([token, seq], "seq")
        apart = tx.merge_axes(tiles, ("ph", "pw"), "p")  # not side by side: a transpose brings them together
        out = {"tiles": tiles, "emb": emb, "seq": seq, "token": token, "joined": joined, "apart": apart}
        layouts.update({k: v.axes for k, v in out.items()})
        return out

    out = jax.jit(stem)(x, kernel, cls)
    assert layouts == {
        "tiles": ("batch", "channels", "gh", "ph", "gw", "pw"),
        "emb": ("batch", "gh", "gw", "embed"),
        "seq": ("batch", "seq", "embed"),
        "token": ("batch", "seq", "embed"),
        "joined": ("batch", "seq", "embed"),
        "apart": ("batch", "channels", "gh", "p", "gw"),
    }
    assert all(v.axes == tuple(sorted(v.axes)) for v in out.values())  # concrete: in name order
    assert _transposes(lambda x: tx.split_axis(x, "height", {"gh": 2, "ph": 2}), x) == 0
    assert _transposes(lambda e: tx.merge_axes(e, ("gh", "gw"), "seq"), out["emb"]) == 0
    expected = images.reshape(2, 2, 2, 2, 2, 3)  # batch, gh, ph, gw, pw, channels
    np.testing.assert_array_equal(tx.positional(out["tiles"], ["batch", "gh", "ph", "gw", "pw", "channels"]), expected)
    seq = tx.positional(out["seq"], ["batch", "seq", "embed"])
    np.testing.assert_allclose(seq, tx.positional(out["emb"], ["batch", "gh", "gw", "embed"]).reshape(2, 4, 5))
    token = np.broadcast_to(np.arange(5.0), (2, 1, 5))
    np.testing.assert_array_equal(tx.positional(out["token"], ["batch", "seq", "embed"]), token)
    np.testing.assert_allclose(tx.positional(out["joined"], ["batch", "seq", "embed"]), np.concatenate([token, seq], 1))
    np.testing.assert_array_equal(
        tx.positional(out["apart"], ["batch", "gh", "gw", "p", "channels"]),
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


def _in_name_order(v):
    """Laid out in name order, and a jit call's flatten hands JAX the data as it is (no transpose to run)."""
    return v.axes == tuple(sorted(v.axes)) and jax.tree.leaves(v)[0] is v.data


def test_concrete_results_of_eager_operations_are_laid_out_in_name_order():
    """Issue 27: an operation that lays out its result in another order (for XLA, under a trace) gives a
    concrete result in name order, so passing it to ``jit`` runs no transpose at the boundary, first call on."""
    x, g = values()
    w = tx.named(jnp.arange(12.0).reshape(3, 4), ["embed", "a"])
    produced = {
        "rename": x.rename({"batch": "z"}),  # [z, embed] as produced
        "einsum": tnp.einsum("{embed},{embed,a}->{a}", x, w),  # dot_general's [batch, a]
        "broadcast_to": tx.broadcast_to(g, {"seq": 2, "embed": 3}),  # the target's [seq, embed]
        "outer broadcast": x + tx.named(jnp.arange(4.0), ["a"]),  # [batch, embed] + [a]
        "constructor": tx.NamedArray(jnp.asarray(X), ["z", "embed"]),
        "numpy data": tx.NamedArray(X, ["z", "embed"]),
    }
    for name, v in produced.items():
        assert _in_name_order(v), name
    np.testing.assert_array_equal(tx.positional(produced["rename"], ["z", "embed"]), X)
    np.testing.assert_allclose(tx.positional(produced["einsum"], ["batch", "a"]), X @ np.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(tx.positional(produced["broadcast_to"], ["seq", "embed"]), np.stack([G, G]))
    outer = X[:, :, None] + np.arange(4.0)
    np.testing.assert_array_equal(tx.positional(produced["outer broadcast"], ["batch", "embed", "a"]), outer)
    np.testing.assert_array_equal(tx.positional(produced["constructor"], ["z", "embed"]), X)
    np.testing.assert_array_equal(tx.positional(produced["numpy data"], ["z", "embed"]), X)
    times = tx.named(jnp.arange(12.0).reshape(4, 3), ["time", "embed"])
    _, ys = tx.scan(lambda c, t: (c, t * c), g, times, axis="time")  # time-major outputs
    assert _in_name_order(ys)
    np.testing.assert_allclose(tx.positional(ys, ["time", "embed"]), np.arange(12.0).reshape(4, 3) * G)


def test_traced_values_keep_the_layout_their_operation_produced():
    """Under a trace the order an operation produced stays (what XLA compiles best); the jit's result is put in
    name order inside the program (its flatten, in the trace) and comes back so."""
    x, _ = values()
    seen = []

    def f(x):
        renamed = x.rename({"batch": "z"})
        seen.append(renamed.axes)
        return renamed

    out = jax.jit(f)(x)
    assert seen == [("z", "embed")]
    assert _in_name_order(out)
    np.testing.assert_array_equal(tx.positional(out, ["z", "embed"]), X)


def test_an_operation_reads_back_the_layout_it_asked_for():
    """``in_order`` lays a concrete value out as asked (an operation reads the data by position)."""
    from typed_xmap._value._named_array import in_order

    x, _ = values()
    swapped = in_order(x, ("embed", "batch"))
    assert swapped.axes == ("embed", "batch")
    np.testing.assert_array_equal(swapped.data, X.T)
    np.testing.assert_array_equal(tx.positional(tnp.concatenate([swapped, x], "batch"), ["batch", "embed"]), [*X, *X])


def test_data_matches_axes_and_positional_gives_the_order_asked():
    """Issue 29.5: ``.data`` never mislabels: its dims are in ``.axes`` order (name order for a concrete value,
    not the order given to ``tx.named``), and ``tx.positional`` lays the data out in the order it is given."""
    q = tx.named(jnp.arange(64.0).reshape(8, 2, 4), ["embed", "heads", "head_dim"])
    assert q.axes == ("embed", "head_dim", "heads")
    assert q.data.shape == tuple(q.named_shape[a] for a in q.axes) == (8, 4, 2)
    np.testing.assert_array_equal(q.data, np.arange(64.0).reshape(8, 2, 4).transpose(0, 2, 1))
    np.testing.assert_array_equal(tx.positional(q, ["embed", "heads", "head_dim"]), np.arange(64.0).reshape(8, 2, 4))
