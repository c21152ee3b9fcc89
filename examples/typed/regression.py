"""Linear regression with named axes, checked statically by the typed_xmap mypy plugin.

typed-xmap check examples/typed/regression.py
"""

from __future__ import annotations

import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

Batch = NamedArray[f32, "batch in_features"]


def predict(x: Batch, w: NamedArray[f32, "in_features"], b: NamedArray[f32, ""]) -> NamedArray[f32, "batch"]:
    return tnp.einsum("{in_features},{in_features}->{}", x, w) + b


def loss(
    x: Batch, y: NamedArray[f32, "batch"], w: NamedArray[f32, "in_features"], b: NamedArray[f32, ""]
) -> NamedArray[f32, ""]:
    error = predict(x, w, b) - y
    return tnp.mean(error * error, "batch")
