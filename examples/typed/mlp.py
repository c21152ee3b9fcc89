"""A two-layer perceptron whose layer widths are named axes."""

from __future__ import annotations

import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


def dense(
    x: NamedArray[f32, "batch in"], w: NamedArray[f32, "in out"], b: NamedArray[f32, "out"]
) -> NamedArray[f32, "batch out"]:
    return tnp.einsum("{in},{in,out}->{out}", x, w) + b


def mlp(
    x: NamedArray[f32, "batch features=784"],
    w1: NamedArray[f32, "features hidden=512"],
    b1: NamedArray[f32, "hidden"],
    w2: NamedArray[f32, "hidden classes=10"],
    b2: NamedArray[f32, "classes"],
) -> NamedArray[f32, "batch classes"]:
    h = tnp.relu(tnp.einsum("{features},{features,hidden}->{hidden}", x, w1) + b1)
    logits = tnp.einsum("{hidden},{hidden,classes}->{classes}", h, w2) + b2
    return tnp.log_softmax(logits, "classes")


def accuracy(logits: NamedArray[f32, "batch classes"], labels: NamedArray[f32, "batch classes"]) -> NamedArray[f32, ""]:
    correct = tnp.sum(logits * labels, "classes")
    return tnp.mean(correct, "batch")
