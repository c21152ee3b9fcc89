"""The placement rules of ``top_k``, ``split``, gathers, updates, ``vmap``, reductions over several split axes
(``_algebra/_placement.py``), of moves (``_placement_moves.py``) and of normalisations, index reductions and scans
(``_normalise_placement.py``) against what JAX and XLA do on 8 emulated devices: the results' placement and the
collectives in the compiled HLO (kinds, and for the rules that say so, mesh axes and counts)."""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.numpy as jnp
import pytest
from hlo_collectives import MESH, compiled, matched
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap._algebra import (
    CollectiveKind,
    gather_placement,
    index_reduce_placement,
    move_placement,
    normalise_placement,
    reduce_placement,
    scan_placement,
    select_placement,
    sort_placement,
    split_placement,
    update_placement,
    vmap_placement,
)

COLLECTIVES = r"= \S+ (all-reduce|all-gather|all-to-all|collective-permute|reduce-scatter)(?:-start)?\("


def _mesh(kind: AxisType) -> jax.sharding.Mesh:
    return jax.make_mesh((2, 4), ("data", "model"), axis_types=(kind, kind))


def _compiled(f, mesh, spec):
    with jax.set_mesh(mesh):
        x = jax.device_put(jnp.arange(128.0).reshape(8, 16), NamedSharding(mesh, spec))
        compiled = jax.jit(f).lower(x).compile()
    return set(re.findall(COLLECTIVES, compiled.as_text())), [s.spec for s in compiled.output_shardings]


def test_split_into_equal_pieces_keeps_the_split_axis_placed_and_permutes():
    found = split_placement(["batch", "seq"], {"batch": ("data",), "seq": ("model",)}, "seq", sections=2, operation="s")
    kinds, specs = _compiled(lambda x: jnp.split(x, 2, axis=1), _mesh(AxisType.Explicit), P("data", "model"))
    assert found.placement == {"batch": ("data",), "seq": ("model",)}
    assert specs == [P("data", "model"), P("data", "model")]
    assert {c.kind.value for c in found.collectives} == kinds == {"collective-permute"}


def test_split_along_an_axis_that_is_whole_needs_nothing():
    found = split_placement(["batch", "seq"], {"batch": ("data",)}, "seq", sections=2, operation="s")
    kinds, specs = _compiled(lambda x: jnp.split(x, 2, axis=1), _mesh(AxisType.Explicit), P("data", None))
    assert found.placement == {"batch": ("data",)} and not found.collectives
    assert specs == [P("data", None), P("data", None)] and not kinds


def test_split_into_unequal_pieces_is_a_reshard_and_leaves_the_axis_unknown():
    found = split_placement(
        ["batch", "seq"], {"batch": ("data",), "seq": ("model",)}, "seq", sections=None, operation="s"
    )
    assert found.placement == {"batch": ("data",)}
    assert [c.kind for c in found.collectives] == [CollectiveKind.RESHARD]
    kinds, _ = _compiled(lambda x: jnp.split(x, [3], axis=1), _mesh(AxisType.Auto), P("data", "model"))
    assert kinds >= {"all-gather", "collective-permute"}  # XLA gathers and moves: its choice
    with pytest.raises(Exception, match="not divisible"):  # JAX's ShardingTypeError on an Explicit mesh
        _compiled(lambda x: jnp.split(x, [3], axis=1), _mesh(AxisType.Explicit), P("data", "model"))


def test_top_k_along_a_split_axis_gathers_it():
    found = select_placement(["batch", "best"], {"batch": ("data",), "seq": ("model",)}, "seq", operation="t")
    assert found.placement == {"batch": ("data",)}
    assert [(c.kind, c.mesh_axes) for c in found.collectives] == [(CollectiveKind.ALL_GATHER, ("model",))]
    kinds, specs = _compiled(lambda x: jax.lax.top_k(x, 3), _mesh(AxisType.Auto), P("data", "model"))
    assert "all-gather" in kinds and specs[0] == P("data")
    with pytest.raises(Exception, match="unsharded over the axis along which to compute the top_k"):
        _compiled(lambda x: jax.lax.top_k(x, 3), _mesh(AxisType.Explicit), P("data", "model"))


@pytest.mark.parametrize("kind", [AxisType.Explicit, AxisType.Auto])
def test_a_gather_whose_indices_clash_with_a_kept_axis_runs_and_one_of_them_keeps_the_mesh_axis(kind):
    found = gather_placement(
        ["embed", "batch", "seq"],
        {"embed": ("model",)},
        ["vocab"],
        [{"batch": ("data",), "seq": ("model",)}],
        operation="g",
    )
    assert found.placement == {"batch": ("data",)}
    assert [(c.kind, c.mesh_axes) for c in found.collectives] == [(CollectiveKind.RESHARD, ("model",))]
    with jax.set_mesh(_mesh(kind)):
        emb = tx.shard(tx.named(jnp.ones((16, 8)), ["vocab", "embed"]), {"embed": "model"})
        tokens = tx.shard(tx.named(jnp.zeros((4, 8), jnp.int32), ["batch", "seq"]), {"batch": "data", "seq": "model"})
        placed = tx.resources_of(jax.jit(lambda e, t: e[{"vocab": t}])(emb, tokens))
    # JAX/XLA choose (JAX 0.10.2: the indices' 'seq' on an Explicit mesh, the operand's 'embed' on an Auto one)
    assert placed in ({"batch": "data", "seq": "model"}, {"batch": "data", "embed": "model"})


@pytest.mark.parametrize("kind", [AxisType.Explicit, AxisType.Auto])
def test_an_update_placed_otherwise_is_placed_as_its_operand(kind):
    found = update_placement(["batch", "seq", "embed"], {"embed": ("data",)}, {"batch": ("data",)}, operation="u")
    assert found.placement == {"embed": ("data",)}
    assert [(c.kind, c.mesh_axes) for c in found.collectives] == [(CollectiveKind.RESHARD, ("data",))]
    with jax.set_mesh(_mesh(kind)):
        x = tx.shard(tx.named(jnp.ones((8, 4, 8)), ["batch", "seq", "embed"]), {"embed": "data"})
        u = tx.shard(tx.named(jnp.ones((8, 2, 8)), ["batch", "seq", "embed"]), {"batch": "data"})
        row = tx.shard(tx.named(jnp.ones((8, 8)), ["batch", "embed"]), {"batch": "data"})
        updated = jax.jit(lambda x, row: x.at[{"seq": 1}].set(row))(x, row)
        sliced = jax.jit(lambda x, u: tnp.dynamic_update_slice(x, u, {"seq": 0}))(x, u)
    assert tx.resources_of(updated) == tx.resources_of(sliced) == {"embed": "data"}


@pytest.mark.parametrize("kind", [AxisType.Explicit, AxisType.Auto])
def test_vmap_carries_the_mapped_arguments_placement_to_its_results(kind):
    """``tx.vmap`` without ``axis_resources``: the results' mapped axis is split as the arguments split it; inside
    the function the values are typed without it (``float32[16@model]``: only their own axes' placement)."""
    x_leaf = (("batch", "seq"), {"batch": ("data",), "seq": ("model",)})
    found = vmap_placement(["batch"], {}, [x_leaf, x_leaf])
    inside = []

    def per(v, w):
        inside.append(jax.typeof(v.data))
        return v + w

    with jax.set_mesh(_mesh(kind)):
        x = tx.shard(tx.named(jnp.ones((8, 16)), ["batch", "seq"]), {"batch": "data", "seq": "model"})
        result = jax.jit(tx.vmap(per, axis="batch"))(x, x)
    assert found == {"batch": ("data",)}
    assert tx.resources_of(result) == {"batch": "data", "seq": "model"}
    assert str(inside[0]) == ("float32[16@model]" if kind == AxisType.Explicit else "float32[16]")


@pytest.mark.parametrize("kind", [AxisType.Explicit, AxisType.Auto])
def test_vmap_over_arguments_placed_two_ways_leaves_the_mapped_axis_unknown(kind):
    """Two placements of the mapped axis: JAX raises on an Explicit mesh, XLA chooses on an Auto one (here
    neither: the result is whole), so the rule leaves it unknown; a leaf whose placement is unknown too;
    ``axis_resources`` (``spmd_axis_name``) places it whatever the arguments."""
    placed, other = (("batch",), {"batch": ("data",)}), (("batch",), {"batch": ("model",)})
    assert vmap_placement(["batch"], {}, [placed, other]) == {}
    assert vmap_placement(["batch"], {}, [placed, (("batch",), {})]) == {}
    resources = {"batch": ("model",)}  # spmd_axis_name places the body's values: it wins (Explicit: JAX raises)
    assert vmap_placement(["batch"], resources, [placed]) == resources
    assert vmap_placement(["batch"], resources, [(("batch",), {})]) == resources
    with jax.set_mesh(_mesh(kind)):
        x = tx.shard(tx.named(jnp.ones((8, 16)), ["batch", "seq"]), {"batch": "data"})
        y = tx.shard(tx.named(jnp.ones((8, 16)), ["batch", "seq"]), {"batch": "model"})
        if kind == AxisType.Explicit:
            with pytest.raises(ValueError, match="should be sharded the same"):
                jax.jit(tx.vmap(lambda a, b: a + b, axis="batch"))(x, y)
        else:
            assert "batch" not in tx.resources_of(jax.jit(tx.vmap(lambda a, b: a + b, axis="batch"))(x, y))


@pytest.mark.parametrize("kind", [AxisType.Explicit, AxisType.Auto])
def test_vmap_over_a_whole_argument_and_a_split_one_leaves_the_mapped_axis_unknown(kind):
    """A whole leaf (``batch@()``) does not meet a split one as split: JAX raises on an Explicit mesh, XLA
    splits the result on an Auto one (its choice); leaves all whole keep the mapped axis whole."""
    split, whole = (("batch", "seq"), {"batch": ("data",)}), (("batch", "seq"), {"batch": (), "seq": ("model",)})
    assert vmap_placement(["batch"], {}, [split, whole]) == {}
    assert vmap_placement(["batch"], {}, [whole, whole]) == {"batch": ()}
    with jax.set_mesh(_mesh(kind)):
        x = tx.named(jnp.ones((8, 16)), ["batch", "seq"])
        a, b = tx.shard(x, {"batch": "data"}), tx.shard(x, {"seq": "model"})
        mapped = jax.jit(tx.vmap(lambda u, v: u + v, axis="batch"))
        assert "batch" not in tx.resources_of(mapped(b, b))
        if kind == AxisType.Explicit:
            with pytest.raises(ValueError, match="should be sharded the same"):
                mapped(a, b)
        else:
            assert tx.resources_of(mapped(a, b))["batch"] == "data"


def _collectives(f, kind, placement=None, axes=("batch", "vocab")) -> list[tuple[str, tuple[str, ...]]]:
    """The compiled HLO's collectives of ``f`` on a NamedArray of 8 per axis placed ``placement`` (``X``) on
    hlo_collectives' mesh (data=4, model=2): (kind, mesh axes) each, sorted."""
    mesh = jax.make_mesh(tuple(MESH.values()), tuple(MESH), axis_types=(kind,) * len(MESH))
    with jax.set_mesh(mesh):
        x = tx.shard(tx.named(jnp.arange(8.0 ** len(axes)).reshape((8,) * len(axes)), list(axes)), placement or X)
        return sorted(compiled(jax.jit(f), x).elements())


def _listed(placed) -> list[tuple[str, tuple[str, ...]]]:
    return sorted((c.kind.value, c.mesh_axes) for c in placed.collectives)


DATA, MODEL = ("data",), ("model",)
X = {"batch": DATA, "vocab": MODEL}
"""A value ``batch vocab`` placed ``batch@data vocab@model``."""


@pytest.mark.parametrize("kind", [AxisType.Explicit, AxisType.Auto])
@pytest.mark.parametrize(
    ("function", "runtime", "over", "names"),
    [
        ("softmax", lambda x: tnp.softmax(x, "vocab"), ["vocab"], ["batch", "vocab"]),
        ("log_softmax", lambda x: tnp.log_softmax(x, "vocab"), ["vocab"], ["batch", "vocab"]),
        ("logsumexp", lambda x: tnp.logsumexp(x, "vocab"), ["vocab"], ["batch"]),
        ("var", lambda x: x.var("vocab"), ["vocab"], ["batch"]),
        ("std", lambda x: tnp.std(x, ("batch", "vocab")), ["batch", "vocab"], []),
        ("log_softmax", lambda x: tnp.log_softmax(x, ("batch", "vocab")), ["batch", "vocab"], ["batch", "vocab"]),
    ],
)
def test_a_normalisation_over_a_split_axis_is_two_all_reduces_over_it(function, runtime, over, names, kind):
    found = normalise_placement(names, X, over, function=function, operation="n")
    assert found.placement == {n: X[n] for n in names}
    assert _listed(found) == _collectives(runtime, kind)
    assert len(found.collectives) == 2 * len(over)


@pytest.mark.parametrize("kind", [AxisType.Explicit, AxisType.Auto])
def test_an_index_reduction_and_a_scan_along_a_split_axis_gather_it(kind):
    argmax = index_reduce_placement(["batch"], X, "vocab", operation="a")
    assert argmax.placement == {"batch": ("data",)}
    assert _listed(argmax) == _collectives(lambda x: tnp.argmax(x, "vocab"), kind)
    assert [c.kind for c in argmax.collectives] == [CollectiveKind.ALL_GATHER] * 2
    cumsum = scan_placement(["batch", "vocab"], X, "vocab", operation="c")
    assert cumsum.placement == X
    assert _listed(cumsum) == _collectives(lambda x: tnp.cumsum(x, "vocab"), kind)
    assert _listed(scan_placement(["batch", "vocab"], X, "batch", operation="c")) == [("all-gather", ("data",))]


@pytest.mark.parametrize("kind", [AxisType.Explicit, AxisType.Auto])
def test_a_reduction_over_two_split_axes_is_one_all_reduce_per_axis(kind):
    found = reduce_placement(X, ["batch", "vocab"], operation="s")
    assert _listed(found) == _collectives(lambda x: tnp.sum(x, ("batch", "vocab")), kind)
    assert len(found.collectives) == 2


@pytest.mark.parametrize("kind", [AxisType.Explicit, AxisType.Auto])
def test_a_lookup_along_a_split_axis_sums_the_blocks(kind):
    """``table[{"vocab": ids}]`` with ``vocab`` split: each device gathers the ids in its block; an all-reduce."""
    found = gather_placement(["k", "batch"], X, ["vocab"], [{}], operation="g", looked_up=["vocab"])
    assert found.placement == {"batch": ("data",)}
    ids = tx.named(jnp.array([1, 5, 7]), ["k"])
    assert _listed(found) == _collectives(lambda x: x[{"vocab": ids}], kind)
    assert not gather_placement(["k", "batch"], X, ["vocab"], [{}], operation="g").collectives  # a slice: none


MOVES_MEASURED = [
    ({"batch": DATA, "seq": MODEL}, {"batch": DATA}),  # a split axis made whole: all-gather
    ({"batch": DATA}, {"batch": DATA, "seq": MODEL}),  # a whole axis split: each device slices its own
    ({"batch": DATA, "seq": MODEL}, {"batch": DATA, "embed": MODEL}),  # model from seq to embed: all-to-all
    ({"batch": DATA, "seq": MODEL}, {"seq": DATA, "embed": MODEL}),  # two mesh axes, each to another axis: two
    ({"batch": ("data", "model")}, {"batch": DATA}),  # the minor mesh axis leaves
    ({"batch": ("data", "model")}, {"batch": DATA, "seq": MODEL}),  # ... for another axis
    ({"batch": DATA}, {"seq": DATA}),
    ({"batch": DATA, "seq": MODEL}, {}),  # both made whole: an all-gather each
    ({"batch": DATA}, {"batch": MODEL}),  # another mesh axis in the same place: a reshard (XLA's choice)
    ({"batch": DATA, "seq": MODEL}, {"batch": MODEL, "seq": DATA}),  # a swap: a reshard (moves by mesh sizes)
]


@pytest.mark.parametrize("kind", [AxisType.Explicit, AxisType.Auto])
@pytest.mark.parametrize(("source", "target"), MOVES_MEASURED)
def test_a_constrain_lists_the_collectives_of_its_move_per_named_axis(source, target, kind):
    """``tx.constrain`` of a value of known placement (``move_placement``): the compiled HLO's collectives, a
    listed ``reshard`` standing for the block moves XLA picks over its mesh axes."""
    axes = ("batch", "seq", "embed")
    found = move_placement(axes, source, target, operation="m")
    assert found.placement == target
    hlo = Counter(_collectives(lambda x: tx.constrain(x * 2, target) + 1, kind, source, axes))
    static, rest = matched(Counter(_listed(found)), hlo)
    if any(c.kind is CollectiveKind.RESHARD for c in found.collectives):
        assert hlo - rest  # the reshard stood for some of XLA's moves
    assert static == rest


def test_one_index_of_a_split_axis_is_gathered_first_on_an_explicit_mesh_and_sent_by_its_owner_on_an_auto_one():
    """``x[{"vocab": -1}]`` (an int or a scalar index) along a split axis: the runtime replicates the axis first
    on an Explicit mesh (JAX indexes a split dim only in place): the all-gather listed. On an Auto mesh XLA
    chooses otherwise (the owning block's row, summed and permuted): where ``--comm`` and XLA differ."""
    found = gather_placement(["batch"], X, ["vocab"], [], operation="i", picked=["vocab"])
    assert found.placement == {"batch": ("data",)}
    assert _listed(found) == _collectives(lambda x: x[{"vocab": -1}], AxisType.Explicit) == [("all-gather", ("model",))]
    assert {k for k, _ in _collectives(lambda x: x[{"vocab": -1}], AxisType.Auto)} == {
        "all-reduce",
        "collective-permute",
    }


def test_a_sort_along_a_split_axis_keeps_it_split_and_gathers_it_on_an_explicit_mesh():
    found = sort_placement(["batch", "vocab"], X, "vocab", operation="s")
    assert found.placement == X
    for sort in (lambda x: tnp.sort(x, "vocab"), lambda x: tnp.argsort(x, "vocab")):
        assert _listed(found) == _collectives(sort, AxisType.Explicit) == [("all-gather", ("model",))]
        assert ("all-to-all", ("model",)) in _collectives(sort, AxisType.Auto)  # XLA's own choice there
