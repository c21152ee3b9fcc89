"""A typed regression loss: the demo runs it sharded, then plants a bug in a copy for the mypy plugin to find."""

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


@tx.typed
def regression_loss(
    x: NamedArray[f32, "batch in_features"],
    w: NamedArray[f32, "in_features out_features"],
    y: NamedArray[f32, "batch out_features"],
) -> NamedArray[f32, ""]:
    """Mean over the batch of the squared error summed over the outputs."""
    prediction = tnp.einsum("{in_features},{in_features,out_features}->{out_features}", x, w)
    error = prediction - y
    squared = error * error
    per_example = tnp.sum(squared, "out_features")
    return tnp.mean(per_example, "batch")
