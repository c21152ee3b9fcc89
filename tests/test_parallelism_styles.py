"""The three parallelism styles of examples/parallelism_styles.py equal the unsharded layer."""

import importlib.util
from pathlib import Path

import jax
import numpy as np
import pytest
from jax.sharding import AxisType

import typed_xmap as tx

PATH = Path(__file__).resolve().parents[1] / "examples" / "parallelism_styles.py"
spec = importlib.util.spec_from_file_location("parallelism_styles", PATH)
styles = importlib.util.module_from_spec(spec)
spec.loader.exec_module(styles)


@pytest.fixture(params=[AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def mesh(request):
    with jax.set_mesh(jax.make_mesh((4, 2), ("x", "y"), axis_types=(request.param,) * 2)) as mesh:
        yield mesh


@pytest.fixture
def layer_inputs():
    x, W, b = styles.inputs()
    reference = tx.positional(styles.layer(x, W, b), ["out"])
    return x, W, b, reference


def test_automatic(mesh, layer_inputs):
    x, W, b, reference = layer_inputs
    out = styles.automatic(x, W, b)
    assert tx.resources_of(out) == {"out": "y"}
    np.testing.assert_allclose(tx.positional(out, ["out"]), reference, atol=1e-6)


def test_semi_automatic(mesh, layer_inputs):
    x, W, b, reference = layer_inputs
    out = styles.semi_automatic(x, W, b)
    assert tx.resources_of(out) == {"out": "y"}
    np.testing.assert_allclose(tx.positional(out, ["out"]), reference, atol=1e-6)


@pytest.mark.parametrize("variant", ["manual", "manual_typed"])
def test_manual(mesh, layer_inputs, variant):
    x, W, b, reference = layer_inputs
    fn = getattr(styles, variant)
    args = (tx.positional(x, ["in"]), tx.positional(W, ["in", "out"]), tx.positional(b, ["out"]))
    out = fn(*args)
    assert out.sharding.spec[0] == "y"
    np.testing.assert_allclose(out, reference, atol=1e-6)
    hlo = fn.lower(*args).compile().as_text()
    assert "all-reduce" in hlo  # the contraction over "in" (split over mesh axis x) is a collective
