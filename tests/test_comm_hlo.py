"""``typed-xmap check --comm`` against XLA: the collectives the plugin lists per jitted function (kind, mesh axes)
equal those in the compiled HLO on an 8-device Explicit mesh (data=4, model=2), for tests/programs/placement_comm.py.
Where XLA chooses how to move blocks (a conv over a split spatial axis), the plugin lists a ``reshard``, which the
test matches with any collective that moves blocks over those mesh axes."""

from __future__ import annotations

import functools
import math
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import typed_xmap as tx

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "programs" / "placement_comm.py"
MOE = ROOT / "examples" / "moe.py"
MESH = {"data": 4, "model": 2}
COLLECTIVE = re.compile(r"\b(all-reduce|reduce-scatter|all-gather|all-to-all|collective-permute)(?:-start)?\(")

Listed = Counter[tuple[str, tuple[str, ...]]]
MOVES = frozenset({"all-gather", "all-to-all", "collective-permute"})
"""What a listed ``reshard`` may compile to."""


def _permuted_axes(line: str) -> tuple[str, ...] | None:
    """The mesh axes a ``collective-permute``'s device pairs move along (device ids are row-major over MESH)."""
    found = re.search(r"source_target_pairs=\{(\{[^=]*\})\}", line)
    if found is None:
        return None
    sizes = list(MESH.values())

    def coordinates(device: int) -> list[int]:
        return [device // math.prod(sizes[i + 1 :]) % size for i, size in enumerate(sizes)]

    moved = set()
    for source, target in re.findall(r"\{(\d+),(\d+)\}", found[1]):
        pairs = zip(coordinates(int(source)), coordinates(int(target)), strict=True)
        moved |= {axis for axis, (a, b) in zip(MESH, pairs, strict=True) if a != b}
    return tuple(axis for axis in MESH if axis in moved)


def _group_size(line: str) -> int:
    """How many devices each replica group of an HLO collective holds, in the forms XLA prints."""
    if found := re.search(r"replica_groups=mesh\[([^\]]*)\][^{]*\{([^}]*)\}", line):
        sizes = {axis: int(size) for axis, size in re.findall(r"'(\w+)'=(\d+)", found[1])}
        return math.prod(sizes[axis] for axis in re.findall(r"'(\w+)'", found[2]))
    if found := re.search(r"replica_groups=\{\{([^}]*)\}", line):
        return len(found[1].split(","))
    if found := re.search(r"replica_groups=\[\d+,(\d+)\]<=", line):
        return int(found[1])
    raise AssertionError(f"replica groups in a form this test does not read: {line}")


def _mesh_axes(size: int) -> tuple[str, ...]:
    """The mesh axes whose devices make a group of ``size`` (the mesh's axes have distinct sizes)."""
    by_size = {math.prod(MESH[a] for a in axes): axes for axes in (("data",), ("model",), ("data", "model"))}
    return by_size[size]


def compiled(function: object, *args: object) -> Listed:
    hlo = function.lower(*args).compile().as_text()  # type: ignore[attr-defined]
    return Counter(
        (found[1], _permuted_axes(line) or _mesh_axes(_group_size(line)))
        for line in hlo.splitlines()
        if (found := COLLECTIVE.search(line))
    )


def listed(program: Path = PROGRAM) -> dict[str, Listed]:
    """The plugin's list, per function: ``typed-xmap check --comm``'s notes under "In function" lines."""
    command = [sys.executable, "-m", "typed_xmap._tools._cli", "check", "--comm", str(program.relative_to(ROOT))]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    found: dict[str, Listed] = {}
    function = ""
    for line in result.stdout.splitlines():
        if context := re.search(r'note: In function "(\w+)"', line):
            function = context[1]
        elif note := re.search(r":\d+: note: collective: ([\w-]+) over (\w+|\([\w,]+\)):", line):
            axes = tuple(note[2].strip("()").split(","))
            found.setdefault(function, Counter())[note[1], axes] += 1
    return found


@pytest.fixture(scope="module")
def program():
    sys.path.insert(0, str(PROGRAM.parent))
    try:
        import placement_comm
    finally:
        sys.path.remove(str(PROGRAM.parent))
    return placement_comm


def test_listed_collectives_equal_the_compiled_hlos(program):
    static = listed()
    with jax.set_mesh(jax.make_mesh(tuple(MESH.values()), tuple(MESH))):

        def value(axes: list[str], placement: dict[str, str]) -> tx.NamedArray:
            return tx.shard(tx.named(jnp.ones((8,) * len(axes)), axes), placement)

        calls = {
            "project": (value(["batch", "embed"], {"embed": "model"}), value(["embed", "mlp"], {"embed": "model"})),
            "pool": (value(["batch", "embed"], {"batch": "data"}),),
            "scale": (
                value(["batch", "embed"], {"batch": "data", "embed": "model"}),
                value(["embed"], {"embed": "model"}),
            ),
            "fsdp_matmul": (value(["batch", "embed"], {"batch": "data"}), value(["embed", "mlp"], {"embed": "data"})),
            "local_matmul": (value(["batch", "embed"], {"batch": "data"}), value(["embed", "mlp"], {"mlp": "model"})),
            "pool_windows": (value(["batch", "height", "width", "chan"], {"height": "model"}),),
            "pool_blocks": (value(["batch", "height", "width", "chan"], {"height": "model"}),),
            "conv_windows": (
                value(["batch", "height", "width", "chan"], {"batch": "data", "height": "model"}),
                tx.named(jnp.ones((3, 3, 8, 8)), ["kh", "kw", "chan", "out"]),
            ),
        }
        calls["xmapped_project"] = (value(["batch", "embed"], {}), value(["embed", "mlp"], {}))
        hlo = {name: compiled(jax.jit(getattr(program, name)), *args) for name, args in calls.items()}
    assert hlo["project"] == Counter({("all-reduce", ("model",)): 1})  # the programs do communicate
    assert hlo["pool"] == Counter({("all-reduce", ("data",)): 1})
    assert hlo["fsdp_matmul"] == Counter({("all-gather", ("data",)): 1})
    assert hlo["xmapped_project"] == Counter({("all-reduce", ("model",)): 1})  # placed by axis_resources
    assert hlo["pool_windows"] == Counter({("collective-permute", ("model",)): 2})  # a halo: one each way
    # A conv over a split spatial axis: the checker lists a reshard (XLA chooses how to move the blocks: an
    # all-gather of the operand here, a halo exchange elsewhere), which stands for any such collective.
    reshards = static.get("conv_windows", Counter()).pop(("reshard", ("model",)), 0)
    moved = sum(n for (kind, axes), n in hlo["conv_windows"].items() if axes == ("model",) and kind in MOVES)
    assert reshards == 1 and moved >= 1, (static.get("conv_windows"), hlo["conv_windows"])
    hlo["conv_windows"] = Counter({k: n for k, n in hlo["conv_windows"].items() if k[1] != ("model",)})
    assert {name: static.get(name, Counter()) for name in calls} == hlo


def test_the_moe_examples_moves_equal_the_compiled_hlos():
    """examples/moe.py's expert layer (``experts``, jitted alone, its input placed as ``TOKENS`` and its
    weights as ``PARAMS``): the all-to-alls the checker lists (``tx.moe_dispatch``/``moe_combine`` move the
    tokens from ``TOKENS`` to ``EXPERTS`` and back, placements their calls declare) equal the compiled HLO's.
    The HLO holds collectives of the routing too (the balance loss's mean over the split batch, an all-reduce;
    the routing tables' gathers), over a value whose placement ``experts``' signature does not declare
    (``Hidden`` has none: the example places its activations where it calls the step): the checker lists no
    collective for an axis of unknown placement, so those are left to XLA and not compared."""
    from example_programs import load

    static = listed(MOE).get("experts", Counter())
    moe = load(MOE, "moe_comm_example")
    c = moe.Config()
    params, (tokens, _) = moe.init(c, jax.random.key(0)), next(moe.batches(c))
    with jax.set_mesh(jax.make_mesh(tuple(MESH.values()), tuple(MESH))):
        placed = tx.shard(params, moe.PARAMS)
        x = tx.constrain(placed["embed"][{"vocab": tx.shard(tokens, moe.TOKENS)}], moe.TOKENS)
        hlo = compiled(jax.jit(functools.partial(moe.experts, capacity=c.capacity)), x, placed)
    moves = Counter({key: n for key, n in hlo.items() if key[0] == "all-to-all"})
    assert moves == Counter({("all-to-all", ("model",)): 2}), hlo  # dispatch and combine
    assert static == moves
