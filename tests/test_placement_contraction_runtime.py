"""A contraction whose result puts two named axes on one mesh axis at run time (``tnp.einsum``, ``tnp.dot``,
``tnp.conv``).

On a mesh with Explicit axes JAX needs the result's sharding; the runtime asks the algebra's contraction rule
(``contract_placement``, the one the checker applies to the same call) and raises its ``AxisResourceConflict``
instead of leaving one of the axes whole in silence. On an Auto mesh XLA places the result and moves what it
must: no error there. The cases of the rule that are no conflict (a contracted axis on the result's mesh axis,
the FSDP pattern; distinct mesh axes) run and keep their placements.
"""

from __future__ import annotations

import traceback

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType

import typed_xmap as tx
import typed_xmap.numpy as tnp

SPEC = "{batch,seq,embed},{embed,mlp}->{batch,seq,mlp}"


def mesh(kind: AxisType) -> jax.sharding.Mesh:
    return jax.make_mesh((4, 2), ("data", "model"), axis_types=(kind, kind))


def operands(h_resources: dict, w_resources: dict) -> tuple[tx.NamedArray, tx.NamedArray]:
    h = tx.named(jnp.arange(4 * 8 * 8, dtype=jnp.float32).reshape(4, 8, 8), ["batch", "seq", "embed"])
    w = tx.named(jnp.arange(8 * 8, dtype=jnp.float32).reshape(8, 8) / 10, ["embed", "mlp"])
    return tx.shard(h, h_resources), tx.shard(w, w_resources)


def expected() -> np.ndarray:
    h = np.arange(4 * 8 * 8, dtype=np.float32).reshape(4, 8, 8)
    w = np.arange(8 * 8, dtype=np.float32).reshape(8, 8) / 10
    return np.einsum("bse,em->bsm", h, w)


CONTRACTIONS = {
    "einsum": lambda h, w: tnp.einsum(SPEC, h, w),
    "dot": lambda h, w: tnp.dot(h, w, axis="embed"),
    "einsum of three": lambda h, w: tnp.einsum(
        SPEC[: SPEC.index("->")] + ",{mlp}->{batch,seq,mlp}", h, w, w[{"embed": 0}]
    ),
}


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", list(CONTRACTIONS))
def test_two_result_axes_on_one_explicit_mesh_axis_raise_the_checkers_conflict(name, jit):
    contract = CONTRACTIONS[name]
    with jax.set_mesh(mesh(AxisType.Explicit)):
        h, w = operands({"seq": "model"}, {"mlp": "model"})
        with pytest.raises(
            tx.AxisResourceConflict, match="axes 'seq' and 'mlp' are both assigned to mesh axis 'model'"
        ):
            (jax.jit(contract) if jit else contract)(h, w)


def test_the_traceback_ends_at_the_users_line():
    def layer(h, w):
        return tnp.einsum(SPEC, h, w)  # the user's line

    with jax.set_mesh(mesh(AxisType.Explicit)):
        h, w = operands({"seq": "model"}, {"mlp": "model"})
        with pytest.raises(tx.AxisResourceConflict) as info:
            jax.jit(layer)(h, w)
    assert traceback.extract_tb(info.value.__traceback__)[-1].name == "layer"


def test_on_an_auto_mesh_xla_places_the_result():
    with jax.set_mesh(mesh(AxisType.Auto)):
        h, w = operands({"seq": "model"}, {"mlp": "model"})
        out = jax.jit(CONTRACTIONS["einsum"])(h, w)
    np.testing.assert_allclose(np.asarray(tx.positional(out, ["batch", "seq", "mlp"])), expected(), rtol=1e-6)


@pytest.mark.parametrize(
    ("h_resources", "w_resources", "resources"),
    [
        ({"seq": "model"}, {"mlp": "data"}, {"seq": "model", "mlp": "data"}),  # distinct mesh axes
        ({"batch": "data"}, {"embed": "data", "mlp": "model"}, {"batch": "data", "mlp": "model"}),  # FSDP: gathered
        ({"seq": "data", "embed": "model"}, {"embed": "model"}, {"seq": "data"}),  # partial sums combined
    ],
)
def test_the_rules_other_cases_run_and_keep_their_placements(h_resources, w_resources, resources):
    with jax.set_mesh(mesh(AxisType.Explicit)):
        h, w = operands(h_resources, w_resources)
        out = jax.jit(CONTRACTIONS["einsum"])(h, w)
    assert tx.resources_of(out) == resources
    np.testing.assert_allclose(np.asarray(tx.positional(out, ["batch", "seq", "mlp"])), expected(), rtol=1e-6)


def images(x_resources: dict, k_resources: dict) -> tuple[tx.NamedArray, tx.NamedArray]:
    x = tx.named(jnp.ones((4, 8, 8, 3)), ["batch", "height", "width", "channels"])
    k = tx.named(jnp.ones((3, 3, 3, 4)), ["kh", "kw", "channels", "out"])
    return tx.shard(x, x_resources), tx.shard(k, k_resources)


def conv(x, k):
    return tnp.conv(x, k, {"height": "kh", "width": "kw"}, "channels", padding="SAME")


def test_a_conv_whose_result_puts_two_axes_on_one_explicit_mesh_axis_raises_the_checkers_conflict():
    with jax.set_mesh(mesh(AxisType.Explicit)):
        x, k = images({"batch": "model"}, {"out": "model"})
        with pytest.raises(tx.AxisResourceConflict, match="axes 'batch' and 'out' are both assigned to mesh axis"):
            jax.jit(conv)(x, k)


@pytest.mark.parametrize(
    ("x_resources", "resources"),
    [
        ({"batch": "data"}, {"batch": "data", "out": "model"}),
        # the conv makes its spatial axes whole: a split one and the output feature never meet in the result
        ({"height": "model"}, {"out": "model"}),
        ({"batch": "data", "width": "model"}, {"batch": "data", "out": "model"}),
    ],
)
def test_a_conv_on_distinct_mesh_axes_runs(x_resources, resources):
    with jax.set_mesh(mesh(AxisType.Explicit)):
        x, k = images(x_resources, {"out": "model"})
        out = jax.jit(conv)(x, k)
    assert tx.resources_of(out) == resources
    assert float(out[{"batch": 0, "height": 3, "width": 3, "out": 0}]) == 27.0
