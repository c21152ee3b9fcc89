"""Issue 27's stretch item, measured: a params *container* whose one flatten carries every axis name.

A ``dict`` of NamedArrays is flattened by JAX child by child: one NamedArray node per leaf, so a ``jit`` call
runs the NamedArray unflatten once per result leaf and makes one Python object per leaf (which Python's
cyclic GC counts: past ~350 leaves every call starts a young collection, and every few hundred calls a full
one). The prototype here, ``NamedParams``, is a flat mapping name -> NamedArray registered as one node: its
flatten returns every array and, in its aux, every key and axis tuple (stored when it is made, so the
flatten is a C attribute read); its unflatten stores the leaves and the aux and makes no value; a value is
made when it is read (``params["w0"]``). Optax builds its state from it by ``jax.tree.map``, so ``mu`` and
``nu`` are ``NamedParams`` too.

Rows, 10 / 100 / 450 leaves (params + Adam state), a jitted ``a + a`` over every leaf: plain arrays, a
``dict`` of NamedArrays (today's way), the container; the median call (this thread's CPU time, interleaved)
and a training loop's mean (``t = step(t)``, the GC's collections included). Goal (issue 27, item 3): the
container <= 1.05x plain arrays at 450 leaves.

What it changes for users (why it is a prototype, not the library's): params must be built as the container
(``NamedParams({...})``) instead of a ``dict``, and a ``jax.tree.map`` over it hands the function the raw
arrays, not NamedArrays (``jax.tree.map(lambda p: p.sum("embed"), params)`` no longer works): the leaves of a
node are what its flatten returns, and the names are in the aux, out of a tree map's reach.

Run: ``PYTHONPATH=. python bench/container_call.py`` or ``typed-xmap bench container_call``.
"""

import gc
import operator
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import jax
import optax
from _timing import interleaved
from pytree_flatten import loop_means, step_params

import typed_xmap as tx
from typed_xmap import NamedArray

GOAL = 1.05


class NamedParams(Mapping[str, NamedArray]):
    """name -> NamedArray, flattened as one node: the arrays are its leaves, every key and axis tuple its aux."""

    __slots__ = ("_flat",)
    _flat: tuple[Any, tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]]

    def __init__(self, values: Mapping[str, NamedArray]) -> None:
        keys = tuple(values)
        self._flat = (
            tuple(values[k].data for k in keys),
            (keys, tuple(values[k].axes for k in keys)),
        )

    def __getitem__(self, key: str) -> NamedArray:
        leaves, (keys, axes) = self._flat
        i = keys.index(key)
        return tx.named(leaves[i], axes[i])

    def __iter__(self) -> Iterator[str]:
        return iter(self._flat[1][0])

    def __len__(self) -> int:
        return len(self._flat[1][0])


def _unflatten(aux: Any, children: Any) -> NamedParams:
    x = NamedParams.__new__(NamedParams)
    x._flat = (children, aux)
    return x


jax.tree_util.register_pytree_node(NamedParams, operator.attrgetter("_flat"), _unflatten)


def _trees(count: int) -> dict[str, Any]:
    """Params + Adam state of ``count`` leaves: plain arrays, a dict of NamedArrays, the container."""
    plain, named = step_params(count)
    opt = optax.adam(1e-3)
    trees = {"plain arrays": plain, "dict of NamedArrays": named, "NamedParams": NamedParams(named)}
    return {k: (p, opt.init(p)) for k, p in trees.items()}


def main() -> int:
    step = jax.jit(lambda tree: jax.tree.map(lambda a: a + a, tree))
    trees = _trees(10)
    out = step(trees["NamedParams"])[0]  # the container round-trips a call: the same values, named
    assert isinstance(out, NamedParams) and out["w0"].axes == ("in", "out")
    print(f"a jit call over params + Adam state, per call, against plain arrays  (goal: container <= {GOAL}x)")
    for count in (10, 100, 450):
        trees = _trees(count)
        leaves = len(jax.tree.leaves(trees["plain arrays"]))
        calls = {k: (lambda t=t: jax.block_until_ready(step(t))) for k, t in trees.items()}
        median = interleaved(calls, rounds=9, calls=30, clock=time.thread_time)
        gc.collect()
        mean = loop_means(step, trees, calls=300)
        for name in trees:
            print(
                f"  {leaves:4d} leaves   {name:<20} median call {median[name] * 1e6:8.1f} us"
                f" ({median[name] / median['plain arrays']:4.2f}x)   loop mean {mean[name] * 1e6:8.1f} us"
                f" ({mean[name] / mean['plain arrays']:4.2f}x)"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
