"""Small programs whose operations run along an axis split over the mesh: segment reductions, splits into equal
pieces, sorts, selections and scans, and lookups from a table split by row. ``typed-xmap check --comm`` lists
their collectives; tests/test_comm_split_axis.py compares the list with the compiled HLO on an 8-device
(data=4, model=2) mesh, Explicit and Auto."""

import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32


def segment_both_split(
    msgs: NamedArray[f32, "edge@data out"], dst: NamedArray[i32, "edge@data"]
) -> NamedArray[f32, "out node"]:
    return tnp.segment_sum(msgs, dst, 8, axis="edge", new_axis="node")


def segment_ids_split(
    msgs: NamedArray[f32, "edge@() out@model"], dst: NamedArray[i32, "edge@data"]
) -> NamedArray[f32, "out@model node"]:
    return tnp.segment_max(msgs, dst, 8, axis="edge", new_axis="node")


def segment_sum_and_max(
    msgs: NamedArray[f32, "edge@(data,model) out"], dst: NamedArray[i32, "edge@(data,model)"]
) -> NamedArray[f32, "out node"]:
    total = tnp.segment_sum(msgs, dst, 8, axis="edge", new_axis="node")
    return total / (tnp.segment_max(msgs, dst, 8, axis="edge", new_axis="node") + 1.0)


def segment_whole(
    msgs: NamedArray[f32, "edge@() out@model"], dst: NamedArray[i32, "edge@()"]
) -> NamedArray[f32, "out@model node"]:
    return tnp.segment_sum(msgs, dst, 8, axis="edge", new_axis="node")


def glu_halves(h: NamedArray[f32, "node@data hidden@model"]) -> NamedArray[f32, "node@data hidden@model"]:
    value, gate = tnp.split(h, "hidden", 2)
    return value * tnp.sigmoid(gate)


def four_pieces(h: NamedArray[f32, "node hidden@model"]) -> NamedArray[f32, "node hidden@model"]:
    a, b, c, d = tnp.split(h, "hidden", 4)
    return a * b + c * d


def sorted_middle(x: NamedArray[f32, "batch@data point@model"]) -> NamedArray[f32, "batch@data"]:
    ordered = tnp.sort(x, "point")
    return (ordered[{"point": 3}] + ordered[{"point": 4}]) / 2


def top_probabilities(logits: NamedArray[f32, "batch@data vocab@model"]) -> NamedArray[f32, "batch@data best"]:
    best, _ = tnp.top_k(tnp.softmax(logits, "vocab"), 3, axis="vocab", new_axis="best")
    return best


def running_total(x: NamedArray[f32, "batch point@data"]) -> NamedArray[f32, "batch point@data"]:
    return tnp.cumsum(x, "point")


def lookup_rows_apart(
    table: NamedArray[f32, "vocab@model embed"], tokens: NamedArray[i32, "batch@data seq"]
) -> NamedArray[f32, "batch@data seq embed"]:
    return table[{"vocab": tokens}]


def lookup_rows_shared(
    table: NamedArray[f32, "vocab@(data,model) embed"], tokens: NamedArray[i32, "batch@data seq"]
) -> NamedArray[f32, "batch@data seq embed"]:
    return table[{"vocab": tokens}]


def take_rows_shared(
    table: NamedArray[f32, "vocab@(data,model) embed"], ids: NamedArray[i32, "batch@model"]
) -> NamedArray[f32, "batch@model embed"]:
    return tnp.take(table, ids, "vocab")


def glu_sliced(h: NamedArray[f32, "node@data hidden@model"]) -> NamedArray[f32, "node@data hidden"]:
    half = h.named_shape["hidden"] // 2
    return h[{"hidden": slice(0, half)}] * tnp.sigmoid(h[{"hidden": slice(half, None)}])
