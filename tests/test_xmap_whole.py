"""xmap bodies get a NamedArray whole where in_axes maps none of it; tx.named/tx.positional see mapped axes."""

import jax
import jax.numpy as jnp
import numpy as np

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, xmap

W = np.arange(12.0, dtype=np.float32).reshape(3, 4) / 10
X = np.arange(15.0, dtype=np.float32).reshape(5, 3)


def test_an_unannotated_body_gets_a_named_array_whole_with_in_axes_empty():
    seen = []
    w = tx.named(W, ["in", "out"])

    def body(params, x):
        seen.append((type(params).__name__, params.named_shape, type(x).__name__))
        return tx.positional(tnp.einsum("{in},{in,out}->{out}", tx.named(x, ["in"]), params), ["out"])

    f = xmap(body, in_axes=({}, ["batch", ...]), out_axes=["batch", ...])
    np.testing.assert_allclose(f(w, X), X @ W, rtol=1e-6)
    assert seen == [("NamedArray", {"in": 3, "out": 4}, "BatchTracer")]


def test_per_example_gradients_through_xmap_on_an_unchanged_model():
    w = tx.named(W, ["in", "out"])

    def loss(params, x):
        return tx.positional(tnp.sum(tnp.einsum("{in},{in,out}->{out}", x, params) ** 2, "out"), [])

    def grads(params, x):
        return tx.positional(jax.grad(loss)(params, tx.named(x, ["in"])), ["in", "out"])

    g = xmap(grads, in_axes=({}, ["batch", ...]), out_axes=["batch", ...])(w, X)
    expected = jax.vmap(jax.grad(lambda p, x: jnp.sum((x @ p) ** 2)), in_axes=(None, 0))(W, X)
    np.testing.assert_allclose(g, expected, rtol=1e-5)


def test_named_and_positional_count_mapped_axes_in_a_typed_body():
    x = tx.named(jnp.arange(6.0).reshape(2, 3), ["i", "j"])

    def body(v: NamedArray[f32, "i j"]) -> NamedArray[f32, "i j"]:
        p = tx.positional(v, ["i", "j"])  # the mapped axes are gathered into the data
        assert p.shape == (2, 3)
        return tx.named(p * 2, ["i", "j"])

    out = xmap(body, out_axes=["i", "j", ...])(x)
    np.testing.assert_allclose(out, np.arange(6.0).reshape(2, 3) * 2)
