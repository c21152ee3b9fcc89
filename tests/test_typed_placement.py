"""``@tx.typed`` with placements in annotations (``NamedArray[f32, "batch@data embed"]``) on the 8-device CPU
mesh: checked where the value's placement is known (a concrete value's ``NamedSharding``, a traced value on
Explicit mesh axes), ignored where it is not (gradual)."""

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AxisType

import typed_xmap as tx
from typed_xmap import NamedArray, NamedShapeError, f32


@tx.typed
def pooled(x: NamedArray[f32, "batch@data embed"]) -> NamedArray[f32, "batch@data"]:
    return x.sum("embed")


@tx.typed
def wide(x: NamedArray[f32, "batch@(data,model) embed"]) -> NamedArray[f32, "batch embed"]:
    return x * 2.0


def value():
    return tx.named(jnp.ones((8, 4)), ["batch", "embed"])


@pytest.fixture(params=["explicit", "auto"])
def mesh(request):
    types = (AxisType.Explicit if request.param == "explicit" else AxisType.Auto,) * 2
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=types)
    with jax.set_mesh(mesh):
        yield request.param


def test_a_value_placed_as_annotated_passes(mesh):
    placed = tx.shard(value(), {"batch": "data"})
    assert tx.resources_of(pooled(placed)) == {"batch": "data"}
    assert tx.resources_of(jax.jit(pooled)(placed)) == {"batch": "data"}
    assert wide(tx.shard(value(), {"batch": ("data", "model")})).named_shape == {"batch": 8, "embed": 4}


def test_a_value_placed_otherwise_is_rejected_where_its_placement_is_known(mesh):
    misplaced = tx.shard(value(), {"batch": "model"})
    with pytest.raises(NamedShapeError) as caught:
        pooled(misplaced)
    assert "axis 'batch' is split over mesh axis 'model' but the annotation says batch@data" in str(caught.value)
    if mesh == "explicit":  # traced on Explicit axes: the placement is in the value's type
        with pytest.raises(NamedShapeError, match="split over mesh axis 'model' but the annotation says batch@data"):
            jax.jit(pooled)(misplaced)
    else:  # Auto axes inside jit: the compiler places the value later, so its placement is unknown
        assert jax.jit(pooled)(misplaced).named_shape == {"batch": 8}


def test_a_replicated_value_is_not_split(mesh):
    with pytest.raises(
        NamedShapeError, match=r"axis 'batch' is whole \(replicated\) here, but the annotation declares 'batch@data'"
    ):
        pooled(tx.shard(value(), {}))
    with pytest.raises(
        NamedShapeError, match=r"split over mesh axis 'data' but the annotation says batch@\(data,model\)"
    ):
        wide(tx.shard(value(), {"batch": "data"}))


@tx.typed
def gathered(x: NamedArray[f32, "batch@() embed"]) -> NamedArray[f32, "batch"]:
    return x.sum("embed")


def test_an_axis_declared_whole_takes_a_replicated_value_and_rejects_a_split_one(mesh):
    """``"batch@()"``: split over no mesh axis (the ``PartitionSpec`` entry ``None``), as the checker reads it."""
    assert gathered(tx.shard(value(), {"embed": "model"})).named_shape == {"batch": 8}
    with pytest.raises(NamedShapeError) as caught:
        gathered(tx.shard(value(), {"batch": "data"}))
    assert "axis 'batch' is split over mesh axis 'data', but the annotation declares it whole ('batch@()')" in str(
        caught.value
    )
    assert gathered(value()).named_shape == {"batch": 8}  # one device's array: placement unknown, not checked


def test_a_value_on_one_device_has_no_known_placement():
    assert pooled(value()).named_shape == {"batch": 8}


def test_the_layout_cache_does_not_accept_a_misplaced_value_after_a_placed_one(mesh):
    """A concrete value's sharding is not part of its layout: a placed call first must not admit a misplaced one."""
    pooled(tx.shard(value(), {"batch": "data"}))
    with pytest.raises(NamedShapeError, match="split over mesh axis 'model'"):
        pooled(tx.shard(value(), {"batch": "model"}))


def test_annotations_without_placement_keep_their_meaning(mesh):
    @tx.typed
    def f(x: NamedArray[f32, "batch embed"]) -> NamedArray[f32, "batch"]:
        return x.sum("embed")

    assert f(tx.shard(value(), {"batch": "model"})).named_shape == {"batch": 8}
