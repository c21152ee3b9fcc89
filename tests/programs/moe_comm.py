"""Small MoE programs whose listed collectives (``typed-xmap check --comm``) tests/test_comm_moe.py compares with
the compiled HLO's on the 8-device mesh (data=4, model=2): ``tx.moe_route`` over logits split along their token,
group and expert axes, with its tables or its balance loss left unused; ``tx.moe_dispatch`` contracting split
tokens; ``tx.moe_combine`` moving the experts' outputs back."""

from __future__ import annotations

import typed_xmap as tx
from typed_xmap import NamedArray, f32

SEQUENCE = {"batch": "data", "seq": "model"}
EXPERTS = {"batch": "data", "expert": "model"}
CAPACITY = 4

Table = NamedArray[f32, "batch@data seq@model expert slot"]
Slots = NamedArray[f32, "batch expert slot embed"]
Routed = tuple[NamedArray[f32, "batch seq expert slot"], NamedArray[f32, "batch seq expert slot"], NamedArray[f32, ""]]


def route_sequences(logits: NamedArray[f32, "batch@data seq@model expert"]) -> Routed:
    return tx.moe_route(logits, 1, CAPACITY)


def route_tables(logits: NamedArray[f32, "batch@data seq@model expert"]) -> tuple[Table, Table]:
    dispatch, combine, _ = tx.moe_route(logits, 1, CAPACITY)
    return dispatch, combine


def route_balance(logits: NamedArray[f32, "batch@data seq@model expert"]) -> NamedArray[f32, ""]:
    _, _, balance = tx.moe_route(logits, 2, CAPACITY)
    return balance


def route_batches(logits: NamedArray[f32, "batch@(data,model) seq expert"]) -> Routed:
    return tx.moe_route(logits, 2, CAPACITY)


def route_two_token_axes(
    logits: NamedArray[f32, "batch seq@model pos@data expert"],
) -> tuple[
    NamedArray[f32, "batch seq pos expert slot"], NamedArray[f32, "batch seq pos expert slot"], NamedArray[f32, ""]
]:
    return tx.moe_route(logits, 1, CAPACITY, tokens=("seq", "pos"))


def route_split_experts(logits: NamedArray[f32, "batch@data seq expert@model"]) -> Routed:
    return tx.moe_route(logits, 1, CAPACITY)


def dispatch_sequences(x: NamedArray[f32, "batch@data seq@model embed"], dispatch: Table) -> Slots:
    return tx.moe_dispatch(x, dispatch, resources=EXPERTS, from_resources=SEQUENCE)


def dispatch_whole(x: NamedArray[f32, "batch@data seq@model embed"], dispatch: Table) -> Slots:
    return tx.moe_dispatch(x, dispatch, resources={})


def combine_sequences(
    y: NamedArray[f32, "batch@data expert@model slot embed"], combine: Table
) -> NamedArray[f32, "batch@data seq@model embed"]:
    return tx.moe_combine(y, combine, resources=SEQUENCE, from_resources=EXPERTS)
