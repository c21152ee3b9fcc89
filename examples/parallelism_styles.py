"""One layer, ``sigmoid(x @ W + b)``, three ways to parallelise it, all by axis name.

x: "in", W: "in out", b: "out". ``in`` goes on mesh axis ``x`` and ``out`` on mesh axis ``y``.

- automatic: place the inputs by name with ``tx.shard`` and ``jax.jit`` the plain function; the
  compiler propagates the placement;
- semi-automatic: ``jax.jit`` with ``tx.constrain`` by name at chosen points;
- manual: ``tx.xmap`` with ``axis_resources``, the contraction over ``in`` a named ``psum``
  (or, typed, a brace ``einsum``, which compiles to one ``dot_general``).

Run it: ``python examples/parallelism_styles.py``. It asks XLA for 8 CPU devices and runs on a 4x2 mesh of
them when the default backend (one GPU, say) has fewer; with fewer CPU devices too
(``XLA_FLAGS=--xla_force_host_platform_device_count=2``) the mesh shrinks to fit (2x1, 1x1): ``tx.fitting_mesh``.
"""

from __future__ import annotations

import os

if "jax" not in __import__("sys").modules:
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax
import numpy as np

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

RESOURCES = {"in": "x", "out": "y"}

In = NamedArray[f32, "in"]
Weights = NamedArray[f32, "in out"]
Out = NamedArray[f32, "out"]


def layer(x: In, W: Weights, b: Out) -> Out:
    """The unsharded reference: one named contraction, a bias, a sigmoid."""
    return tnp.sigmoid(tnp.einsum("{in},{in,out}->{out}", x, W) + b)


def automatic(x: In, W: Weights, b: Out) -> Out:
    """Values placed by name; ``jit`` partitions the computation from their shardings."""
    return jax.jit(layer)(tx.shard(x, RESOURCES), tx.shard(W, RESOURCES), tx.shard(b, RESOURCES))


@jax.jit
def semi_automatic(x: In, W: Weights, b: Out) -> Out:
    """Constraints by name inside ``jit`` say where the weights and the result live."""
    W = tx.constrain(W, RESOURCES)
    return tx.constrain(layer(x, W, b), {"out": "y"})


def _manual_body(x: jax.Array, W: jax.Array, b: jax.Array) -> jax.Array:
    # per element of "in" and "out": x and b are scalars, W a scalar; psum sums over "in" by name
    return jax.nn.sigmoid(jax.lax.psum(x * W, "in") + b)


manual = tx.xmap(
    _manual_body,
    in_axes=(["in", ...], ["in", "out", ...], ["out", ...]),
    out_axes=["out", ...],
    axis_resources=RESOURCES,
)
"""Manual: xmap over the named axes, each on its mesh axis, with a named psum."""


@tx.typed
def _manual_typed_body(x: In, W: Weights, b: Out) -> Out:
    return tnp.sigmoid(tnp.einsum("{in},{in,out}->{out}", x, W) + b)


manual_typed = tx.xmap(
    _manual_typed_body,
    in_axes=(["in", ...], ["in", "out", ...], ["out", ...]),
    out_axes=["out", ...],
    axis_resources=RESOURCES,
)
"""Manual and typed: the body sees NamedArrays; the contraction is one ``dot_general``."""


def inputs(n_in: int = 8, n_out: int = 4) -> tuple[In, Weights, Out]:
    kx, kw, kb = jax.random.split(jax.random.key(0), 3)
    return (
        tx.named(jax.random.normal(kx, (n_in,)), ["in"]),
        tx.named(jax.random.normal(kw, (n_in, n_out)), ["in", "out"]),
        tx.named(jax.random.normal(kb, (n_out,)), ["out"]),
    )


def main() -> None:
    x, W, b = inputs()
    reference = tx.positional(layer(x, W, b), ["out"])
    positional = (tx.positional(x, ["in"]), tx.positional(W, ["in", "out"]), tx.positional(b, ["out"]))
    mesh = tx.fitting_mesh((4, 2), ("x", "y"), emulate=True)
    print(f"on {mesh.devices.flat[0].platform}, mesh {dict(mesh.shape)} (default backend: {jax.default_backend()})")
    with jax.set_mesh(mesh), jax.default_device(mesh.devices.flat[0]):
        results = {
            "automatic": tx.positional(automatic(x, W, b), ["out"]),
            "semi-automatic": tx.positional(semi_automatic(x, W, b), ["out"]),
            "manual (xmap + psum)": manual(*positional),
            "manual, typed (xmap + einsum)": manual_typed(*positional),
        }
    for name, result in results.items():
        equal = np.allclose(result, reference, atol=1e-6)
        status = "equal" if equal else "DIFFERENT"
        print(f"{name:<32} {status} to the unsharded result; sharding {result.sharding.spec}")
        if not equal:
            raise SystemExit(f"{name}: the sharded result differs from the unsharded one")


if __name__ == "__main__":
    main()
