"""The user code behind the first steps of ``typed-xmap demo``, written as a user writes it.

Like ``regression.py`` it is checked as user code (mypy strict with the typed_xmap plugin, through the
public stubs) by tests/test_self_checks.py.
"""

import numpy as np

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


def inputs() -> NamedArray[f32, "batch in_features"]:
    return tx.named(np.arange(8.0 * 4, dtype=np.float32).reshape(8, 4), ["batch", "in_features"])


def weights() -> NamedArray[f32, "in_features out_features"]:
    return tx.named(np.ones((4, 3), np.float32), ["in_features", "out_features"])


def broadcast(
    x: NamedArray[f32, "batch in_features"], w: NamedArray[f32, "in_features out_features"]
) -> NamedArray[f32, "batch in_features out_features"]:
    """``x * w``: the union of the named axes; their order never matters."""
    return x * w


def add_batch_of_six(x: NamedArray[f32, "batch in_features"]) -> NamedArray[f32, "batch in_features"]:
    """Raises ``NamedShapeError`` at run time unless ``x``'s batch has size 6."""
    return x + tx.named(np.ones(6, np.float32), ["batch"])


@tx.typed
def affine(
    x: NamedArray[f32, "batch in_features"],
    w: NamedArray[f32, "in_features out_features"],
    b: NamedArray[f32, "out_features"],
) -> NamedArray[f32, "batch out_features"]:
    return tnp.einsum("{in_features},{in_features,out_features}->{out_features}", x, w) + b
