"""Named transforms: ``tx.vmap`` over a named axis (per-example gradients, sharded) and ``tx.scan`` over layers."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

import typed_xmap as tx
import typed_xmap.numpy as tnp

KEYS = jax.random.split(jax.random.key(0), 4)


def model():
    w = tx.named(jax.random.normal(KEYS[0], (3, 4)), ["in", "out"])
    b = tx.named(jax.random.normal(KEYS[1], (4,)), ["out"])
    return {"w": w, "b": b}


def loss(params, x, y):
    pred = tnp.einsum("{in},{in,out}->{out}", x, params["w"]) + params["b"]
    return tx.positional(tnp.sum((pred - y) ** 2, "out"), [])


def reference_grads(params, x, y):
    def plain(p, xe, ye):
        return jnp.sum((xe @ p["w"] + p["b"] - ye) ** 2)

    p = {"w": tx.positional(params["w"], ["in", "out"]), "b": tx.positional(params["b"], ["out"])}
    return jax.vmap(jax.grad(plain), in_axes=(None, 0, 0))(p, x, y)


def test_per_example_gradients_of_an_unchanged_named_model():
    params = model()
    xs, ys = jax.random.normal(KEYS[2], (8, 3)), jax.random.normal(KEYS[3], (8, 4))
    x, y = tx.named(xs, ["batch", "in"]), tx.named(ys, ["batch", "out"])
    grads = tx.vmap(jax.grad(loss), axis="batch")(params, x, y)
    expected = reference_grads(params, xs, ys)
    assert grads["w"].named_shape == {"batch": 8, "in": 3, "out": 4}
    assert grads["b"].named_shape == {"batch": 8, "out": 4}
    np.testing.assert_allclose(tx.positional(grads["w"], ["batch", "in", "out"]), expected["w"], rtol=1e-5)
    np.testing.assert_allclose(tx.positional(grads["b"], ["batch", "out"]), expected["b"], rtol=1e-5)
    # the mean of the per-example gradients is the batch gradient
    batch_grad = jax.grad(lambda p: tx.positional(tnp.mean(tx.vmap(loss, axis="batch")(p, x, y), "batch"), []))
    np.testing.assert_allclose(
        tx.positional(tnp.mean(grads["w"], "batch"), ["in", "out"]),
        tx.positional(batch_grad(params)["w"], ["in", "out"]),
        rtol=1e-5,
    )


def test_arguments_without_the_axis_broadcast_and_outputs_get_it_back():
    x = tx.named(jnp.arange(6.0).reshape(2, 3), ["batch", "feat"])
    scale = tx.named(jnp.array([1.0, 10.0, 100.0]), ["feat"])

    def f(v, s, k):
        assert v.named_shape == {"batch": 2, "feat": 3}  # the mapped axis counts, held by the vmap level
        assert "batch" in dict(v.mapped)
        return {"scaled": v * s * k, "norm": tnp.sum(v, "feat"), "plain": tx.positional(v, ["feat"])}

    out = tx.vmap(f, axis="batch")(x, scale, 2.0)
    np.testing.assert_allclose(
        tx.positional(out["scaled"], ["batch", "feat"]), np.arange(6.0).reshape(2, 3) * 2 * [1, 10, 100]
    )
    np.testing.assert_allclose(tx.positional(out["norm"], ["batch"]), [3.0, 12.0])
    assert out["plain"].named_shape == {"batch": 2} and out["plain"].shape == (3,)


def test_collectives_by_name_inside_the_body():
    data = np.arange(12.0).reshape(4, 3)
    x = tx.named(data, ["batch", "feat"])
    centred = tx.vmap(lambda v: v - tnp.mean(v, "batch"), axis="batch")(x)
    np.testing.assert_allclose(tx.positional(centred, ["batch", "feat"]), data - data.mean(0), rtol=1e-6)
    total = tx.vmap(lambda v: jax.lax.psum(tx.positional(v, ["feat"]), "batch"), axis="batch")(x)
    np.testing.assert_allclose(tx.positional(total, ["batch", ...]), np.broadcast_to(data.sum(0), (4, 3)))


def test_several_axes_and_keyword_arguments():
    data = np.arange(24.0).reshape(2, 3, 4)
    x = tx.named(data, ["a", "b", "c"])
    out = tx.vmap(lambda v, *, w: tnp.sum(v * w, "c"), axis=("a", "b"))(x, w=tx.named(np.ones(4), ["c"]))
    np.testing.assert_allclose(tx.positional(out, ["a", "b"]), data.sum(-1))


def test_jit_of_vmap():
    x = tx.named(jnp.arange(6.0).reshape(3, 2), ["batch", "feat"])
    out = jax.jit(tx.vmap(lambda v: tnp.exp(v), axis="batch"))(x)
    np.testing.assert_allclose(tx.positional(out, ["batch", "feat"]), np.exp(np.arange(6.0).reshape(3, 2)), rtol=1e-6)


@pytest.mark.parametrize("axis_types", [None, (AxisType.Auto, AxisType.Auto)], ids=["explicit", "auto"])
def test_sharded_per_example_gradients_stay_sharded(axis_types):
    kwargs = {} if axis_types is None else {"axis_types": axis_types}
    mesh = jax.make_mesh((2, 4), ("data", "model"), **kwargs)
    params = model()
    xs, ys = jax.random.normal(KEYS[2], (8, 3)), jax.random.normal(KEYS[3], (8, 4))
    with jax.set_mesh(mesh):
        x = tx.named(jax.device_put(xs, NamedSharding(mesh, P("data"))), ["batch", "in"])
        y = tx.named(jax.device_put(ys, NamedSharding(mesh, P("data"))), ["batch", "out"])
        per_example = jax.jit(tx.vmap(jax.grad(loss), axis="batch", axis_resources={"batch": "data"}))
        grads = per_example(params, x, y)
        assert tx.resources_of(grads["w"]) == {"batch": "data"}
        assert grads["w"].data.sharding.spec[0] == "data"
    expected = reference_grads(params, xs, ys)
    np.testing.assert_allclose(tx.positional(grads["w"], ["batch", "in", "out"]), expected["w"], rtol=1e-5)


# -- scan ------------------------------------------------------------------------------------------------------
L, E, H = 4, 8, 16


def stacked_layers():
    return {
        "w1": tx.named(jax.random.normal(KEYS[0], (L, E, H)) / 4, ["layers", "embed", "hidden"]),
        "w2": tx.named(jax.random.normal(KEYS[1], (L, H, E)) / 4, ["layers", "hidden", "embed"]),
        "scale": tx.named(1.0 + jax.random.normal(KEYS[2], (L, E)) / 10, ["layers", "embed"]),
    }


def layer(h, p):
    """A residual MLP block with a layer norm over ``embed``."""
    centred = h - tnp.mean(h, "embed")
    normed = centred / tnp.sqrt(tnp.mean(centred * centred, "embed") + 1e-5) * p["scale"]
    z = tnp.tanh(tnp.einsum("{embed},{embed,hidden}->{hidden}", normed, p["w1"]))
    out = h + tnp.einsum("{hidden},{hidden,embed}->{embed}", z, p["w2"])
    return out, tnp.mean(out, ("batch", "seq", "embed"))


def run(params, x, reverse=False):
    h, means = tx.scan(layer, x, params, axis="layers", reverse=reverse)
    return tx.positional(tnp.sum(h * h, ("batch", "seq", "embed")), []), means


def plain_run(p, x, reverse=False):
    h, means = x, []
    for i in reversed(range(L)) if reverse else range(L):
        c = h - h.mean(-1, keepdims=True)
        n = c / jnp.sqrt((c * c).mean(-1, keepdims=True) + 1e-5) * p["scale"][i]
        h = h + jnp.tanh(n @ p["w1"][i]) @ p["w2"][i]
        means.append(h.mean())
    means = means[::-1] if reverse else means
    return jnp.sum(h * h), jnp.stack(means)


def plain_params(params):
    return {
        "w1": tx.positional(params["w1"], ["layers", "embed", "hidden"]),
        "w2": tx.positional(params["w2"], ["layers", "hidden", "embed"]),
        "scale": tx.positional(params["scale"], ["layers", "embed"]),
    }


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_over_a_stack_of_layers(reverse):
    params = stacked_layers()
    xs = jax.random.normal(KEYS[3], (2, 5, E))
    x = tx.named(xs, ["batch", "seq", "embed"])
    value, means = run(params, x, reverse)
    expected, expected_means = plain_run(plain_params(params), xs, reverse)
    np.testing.assert_allclose(value, expected, rtol=1e-5)
    assert means.named_shape == {"layers": L}
    np.testing.assert_allclose(tx.positional(means, ["layers"]), expected_means, rtol=1e-5, atol=1e-6)


def test_gradients_through_a_scan():
    params = stacked_layers()
    xs = jax.random.normal(KEYS[3], (2, 5, E))
    x = tx.named(xs, ["batch", "seq", "embed"])
    grads = jax.jit(jax.grad(lambda p: run(p, x)[0]))(params)
    expected = jax.grad(lambda p: plain_run(p, xs)[0])(plain_params(params))
    assert grads["w1"].named_shape == {"layers": L, "embed": E, "hidden": H}
    np.testing.assert_allclose(
        tx.positional(grads["w1"], ["layers", "embed", "hidden"]), expected["w1"], rtol=2e-4, atol=1e-5
    )
    np.testing.assert_allclose(
        tx.positional(grads["scale"], ["layers", "embed"]), expected["scale"], rtol=2e-4, atol=1e-5
    )


def test_scan_carry_is_order_free_and_unroll_passes_through():
    xs = {"w": tx.named(jnp.arange(6.0).reshape(3, 2), ["layers", "a"])}
    init = tx.named(jnp.zeros((2, 4)), ["a", "b"])

    def step(c, p):  # the new carry is built with its axes in another order
        new = tx.named(tx.positional(c + p["w"], ["b", "a"]), ["b", "a"])
        return new, tnp.sum(new, "b")

    carry, ys = tx.scan(step, init, xs, axis="layers", unroll=2)
    np.testing.assert_allclose(tx.positional(carry, ["a", "b"]), np.broadcast_to([[6.0], [9.0]], (2, 4)))
    np.testing.assert_allclose(tx.positional(ys, ["layers", "a"]), np.cumsum(np.arange(6.0).reshape(3, 2), 0) * 4)


def test_a_typed_model_sees_the_mapped_axis_by_name_as_in_an_xmap_body():
    from typed_xmap import NamedArray, f32

    @tx.typed
    def typed_loss(w: NamedArray[f32, "in out"], x: NamedArray[f32, "batch in"]) -> jax.Array:
        return tx.positional(tnp.sum(tnp.einsum("{in},{in,out}->{out}", x, w), "out"), [])

    w, x = tx.named(jnp.ones((3, 4)), ["in", "out"]), tx.named(jnp.ones((5, 3)), ["batch", "in"])
    grads = jax.jit(tx.vmap(jax.grad(typed_loss), axis="batch"))(w, x)
    assert grads.named_shape == {"batch": 5, "in": 3, "out": 4}
    np.testing.assert_allclose(tx.positional(grads, ["batch", "in", "out"]), np.ones((5, 3, 4)))


def test_a_per_example_annotation_may_leave_the_mapped_axis_out():
    """The idiom mypy and the runtime agree on: the per-example function is annotated without ``batch``
    (mypy types its body so, the plugin types ``tx.vmap(f, axis="batch")``); at run time an annotation may
    leave out the axes a ``tx.vmap`` level maps, while the other axes are checked as ever."""
    from typing import TypedDict

    from typed_xmap import NamedArray, f32

    class Params(TypedDict):
        w: NamedArray[f32, "in out"]
        b: NamedArray[f32, "out"]

    @tx.typed
    def per_example(params: Params, x: NamedArray[f32, "in"], y: NamedArray[f32, "out"]) -> jax.Array:
        return loss(params, x, y)

    @tx.typed
    def misnamed(params: Params, x: NamedArray[f32, "features"], y: NamedArray[f32, "out"]) -> jax.Array:
        return loss(params, x, y)

    params, x, y = model(), tx.named(jnp.ones((5, 3)), ["batch", "in"]), tx.named(jnp.ones((5, 4)), ["batch", "out"])
    grads = jax.jit(tx.vmap(jax.grad(per_example), axis="batch"))(params, x, y)
    expected = reference_grads(params, tx.positional(x, ["batch", "in"]), tx.positional(y, ["batch", "out"]))
    np.testing.assert_allclose(tx.positional(grads["w"], ["batch", "in", "out"]), expected["w"], rtol=1e-5)
    assert tx.vmap(per_example, axis="batch")(params, x, y).named_shape == {"batch": 5}
    with pytest.raises(tx.NamedShapeError, match=r"misnamed\(\) parameter 'x' .* it lacks 'features'"):
        tx.vmap(misnamed, axis="batch")(params, x, y)
    with pytest.raises(tx.NamedShapeError, match=r"per_example\(\) parameter 'x' .* it lacks 'in'"):
        per_example(params, tx.named(jnp.ones((5, 3)), ["batch", "features"]), y)
