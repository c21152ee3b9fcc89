"""A ``jit`` call with an input not laid out in name order, against the same input in name order (issue 27).

A concrete NamedArray is laid out in name order (its named dims sorted by name) when it is made, so the pytree
flatten of a ``jit`` call's arguments hands JAX the data as it is, whatever order the operation that made the
value produced (here ``x.rename({"a": "z"})``, whose data is laid out ``[z, b]``; a ``tnp.einsum`` result, a
``broadcast_to`` or ``tx.scan``'s time-major outputs are alike). The baseline is the same call on a value whose
producer's order is name order already (``x.rename({"a": "a2"})``, laid out ``[a2, b]``). Rows, for a small
``(4, 8)`` and a large ``(1024, 1024)`` input to a jitted ``v * 2``:

- *the same value every call* (parameters, constants, a batch reused);
- *a new value each call* (the first call on each value: made before the timing);
- *made and called*: the rename and the call timed together (a value made fresh for every step pays its
  one transpose when it is made, not at the call).

Wall-clock medians of interleaved rounds (device work counts); goal: every ratio <= 1.1x. A last line per size
times a second name-order value against the first (the same work): how far apart this machine measures two
identical calls.

Run: ``PYTHONPATH=. python bench/layout_call.py`` or ``typed-xmap bench layout_call``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import jax
import jax.numpy as jnp
import numpy as np
from _timing import interleaved, record

import typed_xmap as tx

GOAL = 1.1
TABLE = "layout: jit(v * 2), the input laid out in another order than name order; ! over the goal"
SIZES = {"small (4, 8)": ((4, 8), 15, 50), "large (1024, 1024)": ((1024, 1024), 31, 2)}  # shape, rounds, calls


def _cases(shape: tuple[int, int], rounds: int, calls: int) -> dict[str, object]:
    rng = np.random.default_rng(0)
    # every buffer here made by XLA (one made from a NumPy array read slower than one XLA wrote, 1.2-1.4x)
    x = tx.named(jnp.asarray(rng.normal(size=shape), jnp.float32) + 0, ["a", "b"])
    step = jax.jit(lambda v: v * 2)
    names = {"name order": {"a": "a2"}, "other order": {"a": "z"}}
    count = rounds * calls + 1  # + interleaved's warm-up call
    cases = {}
    for order, renames in names.items():
        kept = x.rename(renames)
        # each new value its own buffer on both sides (a buffer read every call stays in the CPU's caches)
        fresh = iter([tx.named(x.data + i, ["a", "b"]).rename(renames) for i in range(count)])
        cases[f"same value, {order}"] = lambda kept=kept: jax.block_until_ready(step(kept).data)
        cases[f"new value, {order}"] = lambda fresh=fresh: jax.block_until_ready(step(next(fresh)).data)
        cases[f"made and called, {order}"] = lambda r=renames: jax.block_until_ready(step(x.rename(r)).data)
    again = tx.named(x.data + 0, ["a3", "b"])  # the noise floor: another name-order value, the same work
    cases["same value, name order again"] = lambda: jax.block_until_ready(step(again).data)
    return cases


def main() -> int:
    print(f"jit(v * 2): input laid out in another order than name order vs in name order  (goal: <= {GOAL}x)")
    row = {}
    for label, (shape, rounds, calls) in SIZES.items():
        times = interleaved(_cases(shape, rounds, calls), rounds=rounds, calls=calls)  # type: ignore[arg-type]
        for kind in ("same value", "new value", "made and called"):
            base, other = times[f"{kind}, name order"], times[f"{kind}, other order"]
            print(
                f"  {label:<20} {kind:<16} name order {base * 1e6:9.1f} us   other order {other * 1e6:9.1f} us"
                f"   {other / base:5.2f}x"
            )
            if kind != "made and called":
                row[f"{kind}, {label.split()[0]}"] = (other / base, GOAL)
        floor = times["same value, name order again"] / times["same value, name order"]
        print(f"  {label:<20} noise floor: the same name-order call twice measures {floor:5.2f}x apart")
    record("other order / name order", row, table=TABLE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
