"""Sharding by name: tx.shard, tx.constrain, tx.resources_of, tx.visualize."""

import io

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, PartitionSpec as P
from rich.console import Console

import typed_xmap as tx
from typed_xmap import AxisResourceConflict, NamedShapeError


@pytest.fixture(params=["explicit", "auto"])
def mesh(request):
    types = (AxisType.Explicit,) * 2 if request.param == "explicit" else (AxisType.Auto,) * 2
    mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=types)
    with jax.set_mesh(mesh):
        yield mesh


def value():
    return tx.named(jnp.arange(8.0 * 6 * 4).reshape(8, 6, 4), {0: "batch", 2: "feat"})  # positional (6,)


def test_shard_places_by_name(mesh):
    x = tx.shard(value(), {"batch": "x", "feat": "y"})
    assert x.data.sharding.spec == P(None, "x", "y")
    assert tx.resources_of(x) == {"batch": "x", "feat": "y"}
    np.testing.assert_array_equal(tx.positional(x, {0: "batch", 2: "feat"}), np.arange(192.0).reshape(8, 6, 4))
    both = tx.shard(value(), {"batch": ("x", "y")})
    assert tx.resources_of(both) == {"batch": ("x", "y")}


def test_none_leaves_an_axis_not_split_as_in_a_partition_spec(mesh):
    x = tx.shard(value(), {"batch": "x", "feat": None})
    assert x.data.sharding.spec == P(None, "x", None)
    assert tx.resources_of(x) == {"batch": "x"}


def test_shard_positional_array_with_axes(mesh):
    placed = tx.shard(jnp.ones((8, 4)), {"b": "x"}, axes=["b", ...])
    assert isinstance(placed, jax.Array) and placed.sharding.spec == P("x", None)


def test_memory_kind_round_trip(mesh):
    host = tx.shard(value(), {"batch": "x"}, memory_kind="pinned_host")
    assert host.data.sharding.memory_kind == "pinned_host"
    back = tx.shard(host, {"batch": "x"}, memory_kind="device")
    assert back.data.sharding.memory_kind == "device"
    np.testing.assert_array_equal(back.data, value().data)


def test_constrain_inside_jit(mesh):
    @jax.jit
    def f(v):
        return tx.constrain(v * 2.0, {"feat": "x"})

    out = f(tx.shard(value(), {"batch": "x"}))
    assert tx.resources_of(out) == {"feat": "x"}
    np.testing.assert_array_equal(out.data, 2.0 * value().data)


@pytest.mark.parametrize(
    ("resources", "error", "message"),
    [
        (
            {"batch": "x", "feat": "x"},
            AxisResourceConflict,
            "axes 'batch' and 'feat' are both assigned to mesh axis 'x', but they meet in the value given to "
            "tx.shard: one value cannot be split over one mesh axis along two of its axes. Fix: assign 'feat' to "
            "another mesh axis, or keep the two axes in separate values (reduce one of them first)",
        ),
        (
            {"feat": ("x", "y")},
            NamedShapeError,
            "axis 'feat' has (global) size 4, which is not divisible by the 8 parts of its resources mesh axis 'x' "
            "(4) x mesh axis 'y' (2). Fix: pad 'feat' to a multiple of 8, or assign it fewer resources",
        ),
        (
            {"batch": "q"},
            NamedShapeError,
            "tx.shard: axis_resources['batch'] names mesh axis 'q', but the current mesh has axes 'x', 'y'. "
            "Fix: use one of those, or set another mesh",
        ),
        (
            {"batch": tx.SerialLoop(2)},
            NamedShapeError,
            "tx.shard: axis_resources['batch'] is a SerialLoop; serial loops only exist inside xmap. "
            "Fix: assign mesh axes here",
        ),
    ],
)
def test_shard_errors(mesh, resources, error, message):
    with pytest.raises(error) as info:
        tx.shard(value(), resources)
    assert str(info.value) == message


def test_constrain_reports_conflicts_by_name(mesh):
    with pytest.raises(AxisResourceConflict, match=r"the value given to tx\.constrain"):
        jax.jit(lambda v: tx.constrain(v, {"batch": "y", "feat": "y"}))(value())


def test_no_mesh_is_a_clear_error():
    with pytest.raises(NamedShapeError, match=r"tx.shard needs a device mesh, but none is set"):
        tx.shard(value(), {"batch": "x"})


def test_bad_memory_kind(mesh):
    with pytest.raises(NamedShapeError, match="memory_kind='hbm' is not a memory of this mesh's devices"):
        tx.shard(value(), {"batch": "x"}, memory_kind="hbm")


def test_visualize_draws_a_grid_with_axis_names(mesh):
    buffer = io.StringIO()
    tx.visualize(tx.shard(value(), {"batch": "x", "feat": "y"}), console=Console(file=buffer, width=100))
    drawing = buffer.getvalue()
    assert "split: batch -> x, feat -> y" in drawing
    assert "batch on x \\ feat on y" in drawing
    assert all(span in drawing for span in ("0:2", "2:4", "4:6", "6:8"))


def test_visualize_lists_replicated_devices(mesh):
    buffer = io.StringIO()
    tx.visualize(tx.shard(value(), {"batch": "y"}), console=Console(file=buffer, width=100))
    assert "0 2 4 6" in buffer.getvalue() and "1 3 5 7" in buffer.getvalue()


RESOURCES = {"batch": "x", "vocab": "y", "mlp": "y"}  # one model-wide mapping


def tree():
    return {
        "emb": tx.named(jnp.arange(8.0 * 4).reshape(8, 4), ["vocab", "embed"]),
        "w": tx.named(jnp.ones((4, 6)), ["embed", "mlp"]),
        "step": 3,
        "x": [tx.named(jnp.arange(8.0), ["batch"])],
    }


def test_shard_a_pytree_with_one_mapping(mesh):
    placed = tx.shard(tree(), RESOURCES)
    assert tx.resources_of(placed["emb"]) == {"vocab": "y"}
    assert tx.resources_of(placed["w"]) == {"mlp": "y"}
    assert tx.resources_of(placed["x"][0]) == {"batch": "x"}
    assert placed["step"] == 3  # other leaves are left as they are
    np.testing.assert_array_equal(tx.positional(placed["emb"], ["vocab", "embed"]), np.arange(32.0).reshape(8, 4))


def test_constrain_a_pytree_inside_jit(mesh):
    out = jax.jit(lambda t: tx.constrain(jax.tree.map(lambda v: v * 2, t), RESOURCES))(tree())
    assert tx.resources_of(out["emb"]) == {"vocab": "y"}
    assert tx.resources_of(out["x"][0]) == {"batch": "x"}
    np.testing.assert_array_equal(out["x"][0].data, 2 * np.arange(8.0))


def test_one_model_wide_mapping_serves_values_lacking_its_keys(mesh):
    """Parameters lack batch, a batch lacks mlp: each value takes the keys it carries (Haliax's rule)."""
    everything = {**RESOURCES, "batch": "x", "heads": "y"}
    params = tx.shard({k: v for k, v in tree().items() if k != "x"}, everything)
    assert tx.resources_of(params["w"]) == {"mlp": "y"}
    only_batch = tx.shard(tx.named(jnp.ones(8), ["batch"]), everything)
    assert tx.resources_of(only_batch) == {"batch": "x"}
    out = jax.jit(lambda t: tx.constrain(t, everything))(tree())
    assert tx.resources_of(out["emb"]) == {"vocab": "y"}


def test_conflicts_in_a_pytree_inside_jit_name_the_value(mesh):
    acts = {"q": tx.named(jnp.ones((8, 2)), ["seq", "heads"]), "k": tx.named(jnp.ones(8), ["seq"])}
    with pytest.raises(AxisResourceConflict) as info:
        jax.jit(lambda t: tx.constrain(t, {"seq": "x", "heads": "x"}))(acts)
    assert str(info.value) == (
        "axes 'heads' and 'seq' are both assigned to mesh axis 'x', but they meet in the value given to "
        "tx.constrain (at ['q']): one value cannot be split over one mesh axis along two of its axes. Fix: "
        "assign 'seq' to another mesh axis, or keep the two axes in separate values (reduce one of them first)"
    )


def test_xmap_axis_resources_keep_the_original_declaration_check():
    """xmap's axis_resources declare its own axes: a key that none of them is stays the original's error."""
    from typed_xmap._algebra import unknown_resource_keys

    assert unknown_resource_keys(["batch", "vocb"], ["batch", "vocab"]) == ["vocb"]


@pytest.mark.parametrize("shape", [(3, 8), (8, 3), (3, 3)])
def test_a_conflict_is_reported_before_an_axis_that_does_not_divide(shape):
    """Two axes of one value on one mesh axis, one of them also not divisible by it: the conflict is the fault
    (the plugin names it too), for tx.shard, tx.constrain and xmap's arguments alike."""
    resources = {"a": "x", "b": "x"}
    with jax.set_mesh(jax.make_mesh((4, 2), ("x", "y"))):
        x = tx.named(jnp.ones(shape), ["a", "b"])
        calls = [
            lambda: tx.shard(x, resources),
            lambda: tx.constrain(x, resources),
            lambda: tx.xmap(lambda u: u * 2, in_axes=[["a", "b"]], out_axes=["a", "b"], axis_resources=resources)(
                np.ones(shape, np.float32)
            ),
        ]
        for call in calls:
            with pytest.raises(AxisResourceConflict, match="both assigned to mesh axis 'x'"):
                call()


def test_shard_inside_jit_says_to_constrain(mesh):
    with pytest.raises(NamedShapeError, match=r"tx\.shard is called inside jax\.jit .* use tx\.constrain\(x, "):
        jax.jit(lambda v: tx.shard(v, {"batch": "x"}))(value())


@pytest.mark.parametrize("resources", ["batch", ("x", None), [("batch", "x")], {"batch": 3}])
def test_shard_inside_jit_tells_a_malformed_mapping_as_outside(mesh, resources):
    with pytest.raises(NamedShapeError) as outside:
        tx.shard(value(), resources)
    with pytest.raises(NamedShapeError) as inside:
        jax.jit(lambda v: tx.shard(v, resources))(value())
    assert str(inside.value) == str(outside.value)
    assert "axis_resources" in str(inside.value)


def test_shard_none_inside_jit_says_to_constrain_with_an_empty_mapping(mesh):
    with pytest.raises(NamedShapeError, match=r"use tx\.constrain\(x, \{\}\)"):
        jax.jit(lambda v: tx.shard(v, None))(value())
    out = jax.jit(lambda v: tx.constrain(v, {}))(value())  # the advice given is a call that works
    assert tx.resources_of(out) == {}


def test_constrain_inside_jit_places_a_value_made_outside(mesh):
    made_outside = tx.named(jnp.ones((8, 4)), ["batch", "feat"])
    out = jax.jit(lambda v: v + tx.constrain(made_outside, {"batch": "x"}))(
        tx.named(jnp.ones((8, 4)), ["batch", "feat"])
    )
    np.testing.assert_array_equal(out.data, 2.0 * np.ones((8, 4)))


@pytest.mark.parametrize("strides", [1, 2])
def test_conv_and_pools_place_their_results_as_the_algebras_rules_say(strides):
    """On an Explicit mesh: a conv's split spatial axis ends whole (``conv_placement``: unknown to the checker,
    whole here), a pool keeps it split (``window_placement``)."""
    import typed_xmap.numpy as tnp
    from typed_xmap._algebra import contract_placement, conv_placement, window_placement

    with jax.set_mesh(jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)):
        placed = {"batch": ("x",), "width": ("y",)}
        images = tx.shard(tx.named(jnp.ones((8, 8, 8, 3)), ["batch", "height", "width", "chan"]), placed)
        kernel = tx.named(jnp.ones((3, 3, 3, 4)), ["kh", "kw", "chan", "out"])
        spatial = {"height": "kh", "width": "kw"}
        conv = jax.jit(lambda v, k: tnp.conv(v, k, spatial, "chan", strides=strides))(images, kernel)
        contracted = contract_placement(["batch", "height", "width", "out"], ["chan"], [placed], operation="c")
        windows = {"height": 3, "width": 3}
        rule = conv_placement(contracted, placed, windows, dict.fromkeys(windows, strides), operation="c")
        assert tx.resources_of(conv) == {n: m[0] for n, m in rule.placement.items()} == {"batch": "x"}
        pooled = jax.jit(lambda v: tnp.max_pool(v, {"height": 2, "width": 2}))(images)
        kept = window_placement(placed, {"height": 2, "width": 2}, {"height": 2, "width": 2}, operation="p")
        assert tx.resources_of(pooled) == {n: m[0] for n, m in kept.placement.items()} == {"batch": "x", "width": "y"}
