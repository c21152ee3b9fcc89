"""The seed regression loss with brace einsum and named sums (typed_xmap.numpy) inside xmap, on the mesh."""

import jax
import numpy as np
import pytest
from jax.sharding import AxisType

from typed_xmap import NamedArray, f32, xmap

tnp = pytest.importorskip("typed_xmap.numpy")

IN_AXES = (["batch", "inputs", ...], ["inputs", "outputs", ...], ["batch", "outputs", ...])
RESOURCES = {"batch": "x", "outputs": "y"}


def untyped(x, w, y):
    pred = tnp.einsum("{inputs},{inputs,outputs}->{outputs}", x, w)
    return tnp.mean(tnp.sum((pred - y) ** 2, "outputs"), "batch")


def typed(
    x: NamedArray[f32, "batch inputs"], w: NamedArray[f32, "inputs outputs"], y: NamedArray[f32, "batch outputs"]
) -> NamedArray[f32, ""]:
    pred = tnp.einsum("{inputs},{inputs,outputs}->{outputs}", x, w)
    return tnp.mean(tnp.sum((pred - y) ** 2, "outputs"), "batch")


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
@pytest.mark.parametrize("body", [untyped, typed])
def test_regression_loss_with_tnp(body, axis_type):
    rng = np.random.default_rng(1)
    x, w, y = (rng.normal(size=s).astype(np.float32) for s in ((8, 4), (4, 6), (8, 6)))
    loss = xmap(body, in_axes=IN_AXES, out_axes=[...], axis_resources=RESOURCES)
    expected = np.mean(np.sum((x @ w - y) ** 2, axis=1))
    mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(axis_type,) * 2)
    with jax.set_mesh(mesh):
        np.testing.assert_allclose(loss(x, w, y), expected, rtol=1e-5)
        text = loss.lower(x, w, y).compile().as_text()
    assert "dot(" in text or "dot_general" in text or "convolution(" in text
