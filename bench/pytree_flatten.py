"""Host cost of a ``jit`` call's pytree work: NamedArray trees against plain arrays, per-leaf nodes beside them.

Every ``jax.jit`` call flattens its arguments and unflattens its results in JAX's C++ pytree registry. Three
tables:

1. *Flatten + unflatten* of the transformer's params and AdamW state (``bench/_transformer_models.py``, 445
   leaves), per leaf, this thread's CPU time (host-only work: other processes on a shared machine do not
   count). Beside NamedArray: the floor of any per-leaf node (a class whose flatten is an attribute read and
   whose unflatten returns at once, ``floor node``), the floor of a node that builds its value and checks its
   leaf's rank as NamedArray's must (``checking node``: a value made in C, the rank read from the leaf's
   ``aval``), a ``register_dataclass`` node, an equinox ``Module`` and a Haliax ``NamedArray`` where installed.
   Goal (issue 27): NamedArray <= 3x plain arrays.
2. *A train-step-like call*: a jitted ``a + a`` over every leaf of params + Adam state, 10, 100 and 450 leaves
   of small ``[in, out]`` arrays, this thread's CPU time per call (the call's host work: flatten, dispatch,
   unflatten; XLA runs the program on its own threads, whose time on a loaded machine moved 2x between runs).
   Goal: <= 1.3x plain arrays.
3. *A training loop*: the 450-leaf call run as a loop runs it (``t = step(t)``), the mean per call, with the
   collections Python's cyclic GC ran: each NamedArray is an object the GC counts, so past ~350 leaves every
   call starts a young collection (plain arrays: past ~700), and every few hundred calls a full one.

Medians of interleaved rounds; ratios to plain arrays. NamedArray's ratios close ``typed-xmap bench``'s summary, a
row of the ``per call`` table, each against its goal.

Run: ``PYTHONPATH=. python bench/pytree_flatten.py`` or ``typed-xmap bench pytree_flatten``.
"""

import dataclasses
import gc
import operator
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _transformer_models as models
import jax
import jax.numpy as jnp
import numpy as np
import optax
from _timing import flatten_unflatten, interleaved, record

import typed_xmap as tx

FLATTEN_GOAL, CALL_GOAL = 3.0, 1.3
TABLE = (
    "per call: NamedArray against plain arrays, a jit call's host work (flatten+unflatten: per leaf); ! over the goal"
)


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class DataclassNode:
    """A node whose flatten JAX's C++ does alone (a data field and one static field); its unflatten calls it."""

    data: Any
    axes: tuple[str, ...] = dataclasses.field(metadata={"static": True})


class FloorNode:
    """The floor of any per-leaf node: the flatten reads a stored result, the unflatten returns at once."""

    __slots__ = ("_flat",)

    def __init__(self, data: Any, axes: tuple[str, ...]) -> None:
        self._flat = ((data,), axes)


jax.tree_util.register_pytree_node(FloorNode, operator.attrgetter("_flat"), lambda aux, children: children)


class CheckingNode:
    """The floor of a node that builds its value in Python and checks its leaf, as NamedArray's unflatten must (a
    ``jax.tree.map`` may change a leaf's rank): NamedArray's four slots, set on a value made in C (a class with no
    ``__init__``, called through ``type.__call__``), after the rank test alone, read from the leaf's ``aval``."""

    __slots__ = ("_flat", "axes", "data", "mapped")


def _checking_node(data: Any, axes: tuple[str, ...]) -> CheckingNode:
    x = _empty()
    x.data, x.axes, x.mapped, x._flat = data, axes, (), ((data,), (axes, len(axes)))
    return x


def _checking_unflatten(aux: tuple[tuple[str, ...], int], children: Any) -> CheckingNode:
    data = children[0]
    if len(data.aval.shape) < aux[1]:
        raise TypeError(f"CheckingNode: the bench gives every node a leaf with its dims, got {data!r}")
    x = _empty()
    x.data = data
    x.axes = aux[0]
    x.mapped = ()
    x._flat = (children, aux)
    return x


_empty = type.__call__.__get__(CheckingNode)
jax.tree_util.register_pytree_node(CheckingNode, operator.attrgetter("_flat"), _checking_unflatten)


def _others(plain: Any) -> dict[str, Any]:
    """The same leaves in the other libraries' per-leaf nodes that are installed."""
    out: dict[str, Any] = {}
    try:
        import equinox as eqx

        class EqxNamed(eqx.Module):  # type: ignore[misc]
            data: Any
            axes: tuple[str, ...] = eqx.field(static=True)

        out[f"equinox {eqx.__version__} Module"] = jax.tree.map(lambda a: EqxNamed(a, ("embed",)), plain)
    except ImportError:
        print("  (equinox is not installed: no equinox row)")
    try:
        import haliax as hax

        out["Haliax NamedArray"] = jax.tree.map(lambda a: hax.named(a, tuple(f"d{i}" for i in range(a.ndim))), plain)
    except ImportError:
        print("  (Haliax is not installed: no Haliax row)")
    return out


def flatten_table() -> float:
    """Print the table; return NamedArray's flatten + unflatten per leaf against plain arrays."""
    raw = models.init_params(models.Config())
    plain, named = models.jnp_params(raw), models.named_params(raw)
    opt = optax.adamw(1e-3)
    cases = {"plain arrays": (plain, opt.init(plain)), "NamedArray": (named, opt.init(named))}
    cases["floor node"] = jax.tree.map(lambda a: FloorNode(a, ("embed",)), cases["plain arrays"])
    cases["checking node"] = jax.tree.map(lambda a: _checking_node(a, ("embed",)[: a.ndim]), cases["plain arrays"])
    cases["dataclass node"] = jax.tree.map(lambda a: DataclassNode(a, ("embed",)), cases["plain arrays"])
    cases.update(_others(cases["plain arrays"]))
    per_leaf = flatten_unflatten(cases)
    base = len(jax.tree.leaves(cases["plain arrays"]))
    print(f"pytree flatten + unflatten, transformer params + AdamW state ({base} leaves), ns per leaf")
    print(f"  (goal: NamedArray flatten + unflatten <= {FLATTEN_GOAL:g}x plain arrays)")
    plain_fl, plain_un = per_leaf["plain arrays"]
    for name, (fl, un) in per_leaf.items():
        ratio = (fl + un) / (plain_fl + plain_un)
        print(
            f"  {name:<28} flatten {fl * 1e9:7.1f} ({fl / plain_fl:5.2f}x)   unflatten {un * 1e9:7.1f}"
            f" ({un / plain_un:5.2f}x)   both {ratio:5.2f}x"
        )
    return sum(per_leaf["NamedArray"]) / (plain_fl + plain_un)


def step_params(count: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Params of ``(count - 1) // 3`` small ``[in, out]`` arrays (with Adam's state, ``count`` leaves in all),
    plain and named."""
    rng = np.random.default_rng(0)
    plain = {f"w{i}": jnp.asarray(rng.normal(size=(4, 8)), jnp.float32) for i in range((count - 1) // 3)}
    return plain, {k: tx.named(v, ["in", "out"]) for k, v in plain.items()}


def _step_trees(count: int) -> tuple[Any, Any]:
    """Params + Adam state of ``count`` leaves in all (params, mu, nu and the step count), plain and named."""
    (plain, named), opt = step_params(count), optax.adam(1e-3)
    return (plain, opt.init(plain)), (named, opt.init(named))


def loop_means(
    step: Any, trees: dict[str, Any], calls: int, blocks: int = 6, runs: dict[str, list[int]] | None = None
) -> dict[str, float]:
    """``t = step(t)`` ``calls`` times per tree (the results are the next call's arguments, as params are), in
    alternating blocks: name -> the mean per call, this thread's CPU time. ``runs`` (name -> [young, middle,
    full]) counts the collections Python's cyclic GC ran during each tree's calls."""
    trees = {k: jax.block_until_ready(step(t)) for k, t in trees.items()}
    spent = dict.fromkeys(trees, 0.0)
    on = [next(iter(trees))]

    def counted(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and runs is not None:
            runs.setdefault(on[0], [0, 0, 0])[info["generation"]] += 1

    gc.callbacks.append(counted)
    try:
        for _ in range(blocks):
            for name in trees:
                on[0], t, start = name, trees[name], time.thread_time()
                for _ in range(calls // blocks):
                    t = jax.block_until_ready(step(t))
                spent[name] += time.thread_time() - start
                trees[name] = t
    finally:
        gc.callbacks.remove(counted)
    return {k: v / (calls // blocks * blocks) for k, v in spent.items()}


def call_table() -> dict[int, float]:
    """Print the table; return leaves -> the NamedArray call against plain arrays."""
    step = jax.jit(lambda tree: jax.tree.map(lambda a: a + a, tree))
    print(f"a train-step-like jit call over params + Adam state, per call  (goal: <= {CALL_GOAL:g}x plain arrays)")
    ratios = {}
    for count in (10, 100, 450):
        plain, named = _step_trees(count)
        leaves = len(jax.tree.leaves(plain))
        times = interleaved(
            {
                "plain": lambda plain=plain: jax.block_until_ready(step(plain)),
                "named": lambda named=named: jax.block_until_ready(step(named)),
            },
            rounds=9,
            calls=30,
            clock=time.thread_time,
        )
        print(
            f"  {leaves:4d} leaves   plain arrays {times['plain'] * 1e6:8.1f} us   NamedArray"
            f" {times['named'] * 1e6:8.1f} us   {times['named'] / times['plain']:5.2f}x"
        )
        ratios[leaves] = times["named"] / times["plain"]
    return ratios


def loop_table(count: int = 450, calls: int = 600, blocks: int = 6) -> tuple[int, float]:
    """Print a training loop's view of the call (``loop_means``); return its leaves and its mean NamedArray / plain
    arrays: the cyclic GC's full collections, tens of milliseconds each every few hundred calls, count in a mean,
    where the call table's medians drop them."""
    step = jax.jit(lambda tree: jax.tree.map(lambda a: a + a, tree))
    trees = dict(zip(("plain", "named"), _step_trees(count), strict=True))
    runs = {k: [0, 0, 0] for k in trees}
    mean = loop_means(step, trees, calls, blocks, runs)
    leaves = len(jax.tree.leaves(trees["plain"]))
    print(f"a training loop, t = step(t) {calls} times per tree, mean per call (the GC's full collections included)")
    print(
        f"  {leaves:4d} leaves   plain arrays {mean['plain'] * 1e6:8.1f} us   NamedArray {mean['named'] * 1e6:8.1f} us"
        f"   {mean['named'] / mean['plain']:5.2f}x"
    )
    for name, label in (("plain", "plain arrays"), ("named", "NamedArray")):
        young, middle, full = runs[name]
        print(f"  collections during the {label} calls: {young} young, {middle} middle, {full} full")
    return leaves, mean["named"] / mean["plain"]


def main() -> int:
    row = {"flatten+unflatten": (flatten_table(), FLATTEN_GOAL)}
    row.update({f"call, {n} leaves": (r, CALL_GOAL) for n, r in call_table().items()})
    leaves, ratio = loop_table()
    row[f"loop mean, {leaves} leaves"] = (ratio, CALL_GOAL)
    record("NamedArray / plain arrays", row, table=TABLE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
