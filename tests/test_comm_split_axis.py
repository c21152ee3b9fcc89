"""``typed-xmap check --comm`` against XLA for operations along an axis split over the mesh
(tests/programs/split_axis_comm.py): segment reductions (one all-reduce over the segmented axis's mesh axes),
splits into equal pieces (a collective-permute per piece), sorts, picks, selections and scans (all-gathers),
slices of a split axis (a reshard: the blocks moved as XLA chooses), lookups from a table split by row (an
all-reduce over the rows' mesh axes, the indices all-gathered first over those they share). Each function is
jitted alone on an 8-device (data=4, model=2) mesh, Explicit and again Auto, its inputs placed as its
annotations say; the collectives of its compiled HLO (each value a collective carries once: two picks of one
sorted value gather it whole once) must equal the listed ones, except where XLA chooses
otherwise on an Auto mesh (AUTO_CHOICES, with why: what the checker cannot know)."""

from __future__ import annotations

import typing
from collections import Counter

import jax
import jax.numpy as jnp
import pytest
from hlo_collectives import MESH, ROOT, Listed, compiled, listed, matched
from jax.sharding import AxisType
from test_comm_hlo import _imported

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap._algebra import CollectiveKind, gather_placement, segment_placement
from typed_xmap._value._placement import known_placement

PROGRAM = ROOT / "tests" / "programs" / "split_axis_comm.py"
SIZES = {"edge": 32, "out": 8, "node": 8, "hidden": 16, "batch": 8, "point": 8, "vocab": 16, "seq": 4, "embed": 8}

AUTO_CHOICES: dict[str, tuple[str, Listed]] = {
    # A sort along a split axis on Auto axes: XLA sorts across the devices (all-to-alls), where the runtime
    # gathers the axis on an Explicit mesh; and it picks an index by summing the owning block's row (a value per
    # pick, the two packed into one tuple all-reduce).
    "sorted_middle": (
        "XLA sorts across devices and picks by an all-reduce",
        Counter(
            {
                ("all-gather", ("model",)): 1,
                ("all-to-all", ("model",)): 3,
                ("collective-permute", ("model",)): 1,
                ("all-reduce", ("model",)): 2,
            }
        ),
    ),
    # top_k along a split axis on Auto axes: XLA selects each block's best, then merges them across devices.
    "top_probabilities": (
        "XLA merges the blocks' best across devices",
        Counter(
            {
                ("all-reduce", ("model",)): 3,
                ("collective-permute", ("model",)): 4,
                ("all-to-all", ("model",)): 3,
                ("all-gather", ("model",)): 2,
            }
        ),
    ),
    # A lookup whose indices share mesh axes with the table's rows, on Auto axes: XLA may gather the (small)
    # table's rows over the shared axes instead of the indices (its choice by the sizes), then sums over the
    # rest; a row order it cannot slice in place (rows over (data, model), gathered over data) is permuted.
    # (tnp.take(table, ids) of one index per batch element, rows over (data, model), ids over model: XLA gathers
    # the ids, as the runtime does on an Explicit mesh, and agrees.)
    "lookup_rows_shared": (
        "XLA gathers the table's rows over data, not the indices",
        Counter(
            {("all-gather", ("data",)): 1, ("collective-permute", ("data", "model")): 1, ("all-reduce", ("model",)): 1}
        ),
    ),
}


def _argument(hint: typing.Any) -> tx.NamedArray:
    """A value of the annotation's named shape (SIZES), placed as it says (``axis@()``: whole)."""
    names = [token.partition("@")[0] for token in hint.hint_args[1].split()]
    shape = tuple(SIZES[n] for n in names)
    dtype = jnp.int32 if hint.hint_args[0] == "int32" else jnp.float32
    values = (jnp.arange(int(jnp.prod(jnp.array(shape)))).reshape(shape) % SIZES["node"]).astype(dtype)
    placement = {n: m if len(m) != 1 else m[0] for n, m in hint.placement.items() if m}
    return tx.shard(tx.named(values, names), placement)


def _arguments(function: object) -> list[tx.NamedArray]:
    return [_argument(hint) for name, hint in typing.get_type_hints(function).items() if name != "return"]


@pytest.fixture(scope="module")
def static() -> dict[str, Listed]:
    return listed(PROGRAM)


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["Explicit", "Auto"])
def test_listed_collectives_along_split_axes_equal_the_compiled_hlos(static, axis_type):
    program = _imported(PROGRAM)
    names = [
        n for n in vars(program) if callable(getattr(program, n)) and getattr(program, n).__module__ == program.__name__
    ]
    mesh = jax.make_mesh(tuple(MESH.values()), tuple(MESH), axis_types=(axis_type,) * len(MESH))
    with jax.set_mesh(mesh):
        hlo = {
            name: compiled(jax.jit(getattr(program, name)), *_arguments(getattr(program, name)), combined=False)
            for name in names
        }
    expected = {name: static.get(name, Counter()) for name in names}
    if axis_type == AxisType.Auto:
        expected |= {name: found for name, (_, found) in AUTO_CHOICES.items()}
    # a listed reshard stands for the moves XLA picks over its mesh axes (a slice's collective-permutes)
    left = {name: matched(expected[name], hlo[name]) for name in names}
    assert {name: listed for name, (listed, _) in left.items()} == {name: moved for name, (_, moved) in left.items()}
    assert set(AUTO_CHOICES) <= set(names)
    # the programs do communicate, and the Auto choices are XLA's own (the listing says otherwise)
    assert all(static.get(name) for name in names if name != "segment_whole") and not static.get("segment_whole")
    assert all(static[name] != found for name, (_, found) in AUTO_CHOICES.items())


def test_segment_placement_keeps_the_data_axes_and_sums_the_split_segmented_axis():
    both = segment_placement(["out", "node"], {"edge": ("data",), "out": ("model",)}, {}, "edge", "node", operation="s")
    assert both.placement == {"out": ("model",), "node": ()}
    assert [(c.kind, c.mesh_axes) for c in both.collectives] == [(CollectiveKind.ALL_REDUCE, ("data",))]
    by_ids = segment_placement(
        ["out", "node"], {"edge": ()}, {"edge": ("data", "model")}, "edge", "node", operation="s"
    )
    assert [(c.kind, c.mesh_axes) for c in by_ids.collectives] == [(CollectiveKind.ALL_REDUCE, ("data", "model"))]
    assert not segment_placement(["node"], {"edge": ()}, {}, "edge", "node", operation="s").collectives
    apart = segment_placement(["node"], {"edge": ("data",)}, {"edge": ("model",)}, "edge", "node", operation="s")
    assert [(c.kind, c.mesh_axes) for c in apart.collectives] == [
        (CollectiveKind.RESHARD, ("data", "model")),
        (CollectiveKind.ALL_REDUCE, ("data",)),
    ]


def test_a_lookup_gathers_only_the_indices_that_share_the_rows_mesh_axes():
    def lookup(operand, indices, axes):
        found = gather_placement(
            ["batch", "embed"], operand, ["vocab"], [indices], operation="g", looked_up=["vocab"], axes=axes
        )
        return [(c.kind, c.mesh_axes) for c in found.collectives]

    table, tokens = [{"vocab", "embed"}, {"batch"}], {"batch": ("data",)}
    assert lookup({"vocab": ("data", "model")}, tokens, table) == [
        (CollectiveKind.ALL_GATHER, ("data",)),
        (CollectiveKind.ALL_REDUCE, ("data", "model")),
    ]
    assert lookup({"vocab": ("model",)}, tokens, table) == [(CollectiveKind.ALL_REDUCE, ("model",))]
    # a pointwise gather (the indices share 'embed' with the operand) and unknown axes: no gather of the indices
    assert lookup({"vocab": ("data",)}, {"embed": ("data",)}, [{"vocab", "embed"}, {"embed"}])[0][0] is not (
        CollectiveKind.ALL_GATHER
    )
    assert lookup({"vocab": ("data",)}, tokens, None) == [(CollectiveKind.ALL_REDUCE, ("data",))]


LOOKUP_PLACEMENTS = [
    ({"batch": ("data", "model")}, {"vocab": ("data",)}),
    ({"batch": ("data", "model")}, {"vocab": ("data", "model")}),
    ({"batch": ("data",)}, {"vocab": ("data", "model")}),
    ({"batch": ("model", "data")}, {"vocab": ("model",)}),
    ({"batch": ("data",), "seq": ("model",)}, {"vocab": ("data", "model")}),
    ({"seq": ("model",)}, {"vocab": ("model",), "embed": ("data",)}),
    ({"batch": ("data",)}, {"vocab": ("model",)}),
]


@pytest.mark.parametrize(("indices", "rows"), LOOKUP_PLACEMENTS, ids=str)
def test_a_lookups_result_is_placed_as_the_checker_places_it(indices, rows):
    """On an Explicit mesh the runtime's lookup (the index array made whole over the rows' mesh axes, then split
    back) places its result as ``gather_placement`` does, the values those of one device. (An index axis and a
    kept table axis on one mesh axis: JAX chooses, the checker's placement unknown; not here.)"""
    table = jnp.arange(64 * 4.0).reshape(64, 4)
    tokens = (jnp.arange(8 * 2, dtype=jnp.int32).reshape(8, 2) * 7) % 64
    checker = gather_placement(
        ["batch", "seq", "embed"],
        rows,
        ["vocab"],
        [indices],
        operation="g",
        looked_up=["vocab"],
        axes=[{"vocab", "embed"}, {"batch", "seq"}],
    ).placement
    mesh = jax.make_mesh(tuple(MESH.values()), tuple(MESH), axis_types=(AxisType.Explicit,) * len(MESH))
    with jax.set_mesh(mesh):
        table_ = tx.shard(tx.named(table, ["vocab", "embed"]), rows)
        ids = tx.shard(tx.named(tokens, ["batch", "seq"]), indices)
        for run in (lambda t, i: t[{"vocab": i}], jax.jit(lambda t, i: t[{"vocab": i}])):
            looked_up = run(table_, ids)
            assert known_placement(looked_up) == checker
            assert (tx.positional(looked_up, ["batch", "seq", "embed"]) == table[tokens]).all()


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["Explicit", "Auto"])
def test_lookups_and_segment_reductions_over_split_axes_compute_what_one_device_does(axis_type):
    table = jnp.arange(64 * 4.0).reshape(64, 4)
    tokens = (jnp.arange(8 * 3, dtype=jnp.int32).reshape(8, 3) * 7) % 64
    msgs, dst = jnp.arange(32 * 4.0).reshape(32, 4), (jnp.arange(32, dtype=jnp.int32) * 5) % 8
    mesh = jax.make_mesh(tuple(MESH.values()), tuple(MESH), axis_types=(axis_type,) * len(MESH))
    with jax.set_mesh(mesh):
        rows = tx.shard(tx.named(table, ["vocab", "embed"]), {"vocab": ("data", "model")})
        ids = tx.shard(tx.named(tokens, ["batch", "seq"]), {"batch": "data"})
        looked_up = jax.jit(lambda t, i: t[{"vocab": i}])(rows, ids)
        edges = tx.shard(tx.named(msgs, ["edge", "out"]), {"edge": "data", "out": "model"})
        ends = tx.shard(tx.named(dst, ["edge"]), {"edge": "data"})
        summed = jax.jit(lambda m, d: tnp.segment_sum(m, d, 8, axis="edge", new_axis="node"))(edges, ends)
        if axis_type == AxisType.Explicit:  # placed as the rules say: the indices' batch, the data's kept axis
            assert tx.resources_of(looked_up) == {"batch": "data"}
            assert tx.resources_of(summed) == {"out": "model"}
    assert (tx.positional(looked_up, ["batch", "seq", "embed"]) == table[tokens]).all()
    assert (tx.positional(summed, ["node", "out"]) == jax.ops.segment_sum(msgs, dst, 8)).all()
