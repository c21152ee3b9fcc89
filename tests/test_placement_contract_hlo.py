"""Contractions over split axes against XLA (tests/programs/contract_comm.py): two contracted axes split over
different mesh axes, one contracted axis split two ways, a contracted axis split over a mesh axis the other
operand uses for a kept axis, operands that split the contracted axes apart (``_algebra/_placement_contract.py``).

On an Explicit mesh JAX raises for none of them (``tnp.einsum`` passes the result's sharding, so JAX's
"contracting dimensions are sharded" ``ShardingTypeError`` of a bare ``jnp.einsum`` never arises): the checker
reports none (the program checks clean), and the collectives ``--comm`` lists per function equal the compiled
HLO's (kind, mesh axes; a listed ``reshard`` matches the moves XLA chooses over its mesh axes), Explicit and Auto
alike, but for XLA_CHOICE's."""

from __future__ import annotations

import ast
import inspect
from collections import Counter

import jax
import jax.numpy as jnp
import pytest
from example_programs import load
from hlo_collectives import MESH, ROOT, compiled, listed, matched
from jax.sharding import AxisType

import typed_xmap as tx
from typed_xmap._algebra import parse_placed_text

PROGRAM = ROOT / "tests" / "programs" / "contract_comm.py"

XLA_CHOICE = {
    # x's embed split over data, w whole: each device can sum its block of the product (w sliced, free) and
    # all-reduce the result's block (what --comm lists, and XLA compiles for contracted_one_side), or gather
    # x's block over data. XLA compares the bytes each moves per device, which the mesh's sizes decide: here
    # x's gathered block (batch/model x embed) equals the result's block (batch/model x mlp) and XLA gathers
    # (measured on JAX 0.10.2: with embed 8 times larger it all-reduces). The checker does not know the mesh.
    "contracted_beside_kept": (Counter({("all-reduce", ("data",)): 1}), Counter({("all-gather", ("data",)): 1})),
}
"""Per function: what ``--comm`` lists that XLA does not compile, and what XLA compiles instead (and why)."""


def _arguments(function: object) -> list[tx.NamedArray]:
    """Ones of size 8 per axis, placed as the function's annotations say (``@()``: whole)."""
    node = ast.parse(inspect.getsource(function)).body[0]
    assert isinstance(node, ast.FunctionDef)
    values = []
    for parameter in node.args.args:
        spec = parameter.annotation.slice.elts[1].value  # type: ignore[union-attr]
        names = [token.partition("@")[0] for token in spec.split()]
        placed = parse_placed_text(spec)
        mapping = {n: (placed[n][0] if len(placed[n]) == 1 else placed[n]) if placed.get(n) else None for n in names}
        values.append(tx.shard(tx.named(jnp.ones((8,) * len(names)), names), mapping))
    return values


@pytest.fixture(scope="module")
def program():
    return load(PROGRAM, PROGRAM.stem)


@pytest.fixture(scope="module")
def static():
    return listed(PROGRAM)  # asserts the program checks clean: no conflict where JAX raises none


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def test_contractions_listed_collectives_equal_the_compiled_hlos(program, static, axis_type):
    functions = [f for name, f in vars(program).items() if inspect.isfunction(f) and f.__module__ == PROGRAM.stem]
    mesh = jax.make_mesh(tuple(MESH.values()), tuple(MESH), axis_types=(axis_type,) * len(MESH))
    with jax.set_mesh(mesh):
        hlo = {f.__name__: compiled(jax.jit(f), *_arguments(f)) for f in functions}
    assert hlo["split_apart"] == Counter({("all-gather", ("data",)): 1, ("all-gather", ("model",)): 1})
    for name, found in hlo.items():
        listed_here, compiled_here = static.get(name, Counter()), found
        if name in XLA_CHOICE:
            only_listed, only_compiled = XLA_CHOICE[name]
            listed_here, compiled_here = listed_here - only_listed, found - only_compiled
        left, compiled_left = matched(listed_here, compiled_here)
        assert +left == +compiled_left, (name, static.get(name), found)


def test_operands_split_apart_are_moved_then_summed_where_one_keeps_its_split(static):
    """The rule's three outcomes, as listed: moved only (mesh axes apart, the result whole there), moved and
    summed over the mesh axis both split over, moved and summed where the result keeps the other's mesh axis."""
    assert static["split_apart"] == Counter({("reshard", ("data", "model")): 1})
    assert static["apart_on_one_mesh_axis"] == Counter({("reshard", ("data",)): 1, ("all-reduce", ("data",)): 1})
    assert static["apart_beside_kept"] == Counter({("reshard", ("data", "model")): 1, ("all-reduce", ("data",)): 1})
    # one operand's split holds the other's: the partial sums are all-reduced, one per split axis
    assert static["nested_splits"] == Counter({("all-reduce", ("data",)): 1, ("all-reduce", ("model",)): 1})
