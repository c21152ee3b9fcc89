"""``typed-xmap check --comm`` against XLA for the MoE helpers (tests/programs/moe_comm.py): the collectives listed
per function equal the compiled HLO's on the 8-device mesh (data=4, model=2), Explicit and Auto, by (kind, mesh
axes) and count, each value a collective carries once (a tuple all-reduce XLA's combiner packs counts once per
operand). ``tx.moe_route`` per split axis of its logits: a token axis is an all-gather (the running count of the
slots taken) and an all-reduce per value summed along it (each choice's tokens per expert for the tables, the
tokens each expert takes and the gates for the balance loss, each later token axis's sum under an earlier one for
the running count), a group axis the balance loss's all-reduce, the expert axis the softmax's two all-reduces,
the top-k's all-gather and the balance loss's sum; results the function never reads compile away.
``tx.moe_dispatch`` is a contraction over the tokens and a move, ``tx.moe_combine`` a move and a contraction."""

from __future__ import annotations

import functools
from collections import Counter

import jax
import pytest
from example_programs import load
from hlo_collectives import MESH, ROOT, compiled, listed
from jax.sharding import AxisType

import typed_xmap as tx

PROGRAM = ROOT / "tests" / "programs" / "moe_comm.py"
SIZES = {"batch": 8, "seq": 16, "pos": 4, "expert": 4, "slot": 4, "embed": 8}
ARGUMENTS = {
    "route_sequences": [("batch seq expert", {"batch": "data", "seq": "model"})],
    "route_tables": [("batch seq expert", {"batch": "data", "seq": "model"})],
    "route_balance": [("batch seq expert", {"batch": "data", "seq": "model"})],
    "route_batches": [("batch seq expert", {"batch": ("data", "model")})],
    "route_two_token_axes": [("batch seq pos expert", {"seq": "model", "pos": "data"})],
    "route_split_experts": [("batch seq expert", {"batch": "data", "expert": "model"})],
    "dispatch_sequences": [
        ("batch seq embed", {"batch": "data", "seq": "model"}),
        ("batch seq expert slot", {"batch": "data", "seq": "model"}),
    ],
    "dispatch_whole": [
        ("batch seq embed", {"batch": "data", "seq": "model"}),
        ("batch seq expert slot", {"batch": "data", "seq": "model"}),
    ],
    "combine_sequences": [
        ("batch expert slot embed", {"batch": "data", "expert": "model"}),
        ("batch seq expert slot", {"batch": "data", "seq": "model"}),
    ],
}
"""Each function's arguments: axes and placement (as its annotations declare them)."""
AUTO_CHOSEN = {
    # The router's softmax and top-k along a split expert axis: on an Explicit mesh the listed all-reduces and
    # all-gather; on an Auto one XLA moves the logits' blocks its own way (all-to-alls and collective-permutes
    # over model, no all-gather), as it does for tnp.top_k along a split axis.
    "route_split_experts": {("all-to-all", ("model",)), ("collective-permute", ("model",))},
}
"""Functions whose compiled collectives on an Auto mesh are XLA's own choice: kinds it compiles there."""


@functools.cache
def _listed():
    return listed(PROGRAM)


@functools.cache
def _program():
    return load(PROGRAM, PROGRAM.stem)


def _compiled(axis_type: AxisType) -> dict[str, Counter]:
    mesh = jax.make_mesh(tuple(MESH.values()), tuple(MESH), axis_types=(axis_type,) * len(MESH))
    keys = iter(jax.random.split(jax.random.key(0), 32))
    with jax.set_mesh(mesh):
        found = {}
        for name, arguments in ARGUMENTS.items():
            args = [
                tx.shard(tx.random.uniform(next(keys), {a: SIZES[a] for a in axes.split()}), placement)
                for axes, placement in arguments
            ]
            found[name] = compiled(jax.jit(getattr(_program(), name)), *args, combined=False)
    return found


def test_moe_route_lists_per_split_axis_and_leaves_out_unused_results():
    """The listing itself: a token axis's running count and its three sums (one for the tables, two for the
    balance loss), a group axis's balance-loss mean, the expert axis's softmax, top-k and balance sum; the unused
    tables drop the running count and their sum, the unused balance loss its sums; a second token axis adds the
    running count's sum of it under the first."""
    static = _listed()
    model, data = ("model",), ("data",)
    assert static["route_sequences"] == Counter(
        {("all-gather", model): 1, ("all-reduce", model): 3, ("all-reduce", data): 1}
    )
    assert static["route_tables"] == Counter({("all-gather", model): 1, ("all-reduce", model): 1})
    assert static["route_balance"] == Counter({("all-reduce", model): 2, ("all-reduce", data): 1})
    assert static["route_two_token_axes"] == Counter(
        {("all-gather", model): 1, ("all-reduce", model): 3, ("all-gather", data): 1, ("all-reduce", data): 4}
    )
    assert static["route_split_experts"] == Counter(
        {("all-reduce", model): 3, ("all-gather", model): 1, ("all-reduce", data): 1}
    )
    assert static["dispatch_whole"] == Counter({("all-reduce", model): 1, ("all-gather", data): 1})


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def test_moe_helpers_listed_collectives_equal_the_compiled_hlos(axis_type):
    static = _listed()
    hlo = _compiled(axis_type)
    assert hlo["route_sequences"]  # the programs do communicate
    if axis_type == AxisType.Auto:
        for name, kinds in AUTO_CHOSEN.items():
            assert kinds <= set(hlo.pop(name)), name
    assert {name: static.get(name, Counter()) for name in hlo} == hlo
