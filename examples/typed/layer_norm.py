"""Layer normalisation over a named feature axis."""

from __future__ import annotations

import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


def layer_norm(
    x: NamedArray[f32, "batch seq embed"], scale: NamedArray[f32, "embed"], bias: NamedArray[f32, "embed"]
) -> NamedArray[f32, "batch seq embed"]:
    mean = tnp.mean(x, "embed")
    centered = x - mean
    variance = tnp.mean(centered * centered, "embed")
    return centered / tnp.sqrt(variance + 1e-5) * scale + bias
