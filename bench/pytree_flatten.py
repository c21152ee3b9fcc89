"""Host cost of a ``jit`` call's pytree work: flatten + unflatten of NamedArray trees against plain arrays.

Every ``jax.jit`` call flattens its arguments and unflattens its results in JAX's C++ pytree registry. The
trees here are the transformer's params and its AdamW state (``bench/_transformer_models.py``, 445 leaves),
as ``jnp`` arrays and as NamedArrays. A third row is the floor of any custom pytree node: the same leaves in
a class registered with ``jax.tree_util.register_dataclass``, whose flatten runs no Python at all (its
unflatten calls the class). Times are this thread's CPU time per leaf (host-only work: other processes on a
shared machine do not count), medians of interleaved rounds; the ratio is to plain arrays.
Goal (DESIGN.md): flatten + unflatten <= 1.5x plain arrays.

Run: ``PYTHONPATH=. python bench/pytree_flatten.py`` or ``typed-xmap bench pytree_flatten``.
"""

import dataclasses
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _transformer_models as models
import jax
import optax
from _timing import flatten_unflatten


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class DataclassNode:
    """The floor: a node whose flatten JAX's C++ does alone (a data field and one static field)."""

    data: Any
    axes: tuple[str, ...] = dataclasses.field(metadata={"static": True})


def trees() -> dict[str, Any]:
    raw = models.init_params(models.Config())
    out = {}
    plain = models.jnp_params(raw)
    named = models.named_params(raw)
    opt = optax.adamw(1e-3)
    out["plain arrays"] = (plain, opt.init(plain))
    out["NamedArray"] = (named, opt.init(named))
    out["dataclass node (floor)"] = jax.tree.map(lambda a: DataclassNode(a, ("embed",)), out["plain arrays"])
    return out


def main() -> int:
    cases = trees()
    per_leaf = flatten_unflatten(cases)
    base = len(jax.tree.leaves(cases["plain arrays"]))
    print(f"pytree flatten + unflatten, transformer params + AdamW state ({base} leaves), ns per leaf")
    print("  (goal: NamedArray flatten + unflatten <= 1.5x plain arrays)")
    plain_fl, plain_un = per_leaf["plain arrays"]
    for name, (fl, un) in per_leaf.items():
        ratio = (fl + un) / (plain_fl + plain_un)
        print(
            f"  {name:<24} flatten {fl * 1e9:7.1f} ({fl / plain_fl:5.2f}x)   unflatten {un * 1e9:7.1f}"
            f" ({un / plain_un:5.2f}x)   both {ratio:5.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
