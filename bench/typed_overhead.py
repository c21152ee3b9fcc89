"""@tx.typed with 3 NamedArray arguments and a return: added time per eager call.

(No ``from __future__ import annotations`` here: jaxtyping must see real hints to check anything.)

Compared in one run, interleaved, with the undecorated function and with jaxtyping's
``Float[Array, "..."]`` under ``jaxtyped(typechecker=beartype)`` (goal: <= 3 us added per call); then
with keyword arguments, and with mixed hints (NamedArrays and a ``float`` and a ``bool``) (goal: <= 1.5 us).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import jax.numpy as jnp
from _timing import interleaved, print_table

import typed_xmap as tx
from typed_xmap import NamedArray, f32


def main() -> int:
    from beartype import beartype
    from jaxtyping import Array, Float, jaxtyped

    def plain(x, w, y):
        return y

    @tx.typed
    def typed(
        x: NamedArray[f32, "batch in"], w: NamedArray[f32, "in out"], y: NamedArray[f32, "batch out"]
    ) -> NamedArray[f32, "batch out"]:
        return y

    @jaxtyped(typechecker=beartype)
    def jaxtyping_checked(
        x: Float[Array, "batch in"], w: Float[Array, "in out"], y: Float[Array, "batch out"]
    ) -> Float[Array, "batch out"]:
        return y

    def plain_mixed(x, w, y, scale, flag=False):
        return y

    @tx.typed
    def typed_mixed(
        x: NamedArray[f32, "batch in"],
        w: NamedArray[f32, "in out"],
        y: NamedArray[f32, "batch out"],
        scale: float,
        flag: bool = False,
    ) -> NamedArray[f32, "batch out"]:
        return y

    xs = (jnp.ones((8, 4)), jnp.ones((4, 3)), jnp.ones((8, 3)))
    named = (tx.named(xs[0], ["batch", "in"]), tx.named(xs[1], ["in", "out"]), tx.named(xs[2], ["batch", "out"]))
    x, w, y = named
    cases = {
        "undecorated": lambda: plain(*named),
        "@tx.typed (3 NamedArray args + return)": lambda: typed(*named),
        "jaxtyping Float[Array] + beartype (same)": lambda: jaxtyping_checked(*xs),
        "undecorated, keywords": lambda: plain(x, w=w, y=y),
        "@tx.typed, keywords": lambda: typed(x, w=w, y=y),
        "undecorated, mixed": lambda: plain_mixed(x, w, y, 2.0, flag=True),
        "@tx.typed, mixed hints (+ float, bool)": lambda: typed_mixed(x, w, y, 2.0, flag=True),
    }
    times = interleaved(cases, rounds=9, calls=2000)  # one run: the tables below share its rounds
    rows = list(times)
    print_table(
        "runtime check, eager call", {k: times[k] for k in rows[:3]}, "undecorated", goal="<= 1 us added for @tx.typed"
    )
    print_table("with keyword arguments", {k: times[k] for k in rows[3:5]}, rows[3], goal="<= 1.5 us added")
    print_table("with mixed hints", {k: times[k] for k in rows[5:]}, rows[5], goal="<= 1.5 us added")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
