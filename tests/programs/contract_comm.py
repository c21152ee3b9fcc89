"""Contractions whose operands split the contracted axes over different mesh axes, or over a mesh axis another
operand uses for a kept axis: ``typed-xmap check --comm`` lists their collectives and
tests/test_placement_contract_hlo.py compares the list with the compiled HLO on an 8-device (data=4, model=2)
mesh, Explicit and Auto. Each function's parameters are placed as its annotations say (``@()``: whole)."""

import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


def two_axes_two_mesh_axes(
    a: NamedArray[f32, "i@data j@model"], b: NamedArray[f32, "i@data j@model k@()"]
) -> NamedArray[f32, "k"]:
    return tnp.einsum("{i,j},{i,j,k}->{k}", a, b)


def split_apart(a: NamedArray[f32, "i@data j@()"], b: NamedArray[f32, "i@() j@model k@()"]) -> NamedArray[f32, "k"]:
    return tnp.einsum("{i,j},{i,j,k}->{k}", a, b)


def contracted_where_kept(
    x: NamedArray[f32, "batch@() embed@data"], w: NamedArray[f32, "embed@() mlp@data"]
) -> NamedArray[f32, "batch mlp@data"]:
    return tnp.einsum("{batch,embed},{embed,mlp}->{batch,mlp}", x, w)


def contracted_two_ways(
    x: NamedArray[f32, "batch@() embed@data"], w: NamedArray[f32, "embed@model mlp@()"]
) -> NamedArray[f32, "batch mlp"]:
    return tnp.einsum("{batch,embed},{embed,mlp}->{batch,mlp}", x, w)


def contracted_one_side(
    x: NamedArray[f32, "batch@() embed@data"], w: NamedArray[f32, "embed@() mlp@model"]
) -> NamedArray[f32, "batch mlp@model"]:
    return tnp.einsum("{batch,embed},{embed,mlp}->{batch,mlp}", x, w)


def contracted_beside_kept(
    x: NamedArray[f32, "batch@model embed@data"], w: NamedArray[f32, "embed@() mlp@()"]
) -> NamedArray[f32, "batch@model mlp"]:
    return tnp.einsum("{batch,embed},{embed,mlp}->{batch,mlp}", x, w)


def contracted_over_both(
    x: NamedArray[f32, "batch@() embed@(data,model)"], w: NamedArray[f32, "embed@(data,model) mlp@()"]
) -> NamedArray[f32, "batch mlp"]:
    return tnp.einsum("{batch,embed},{embed,mlp}->{batch,mlp}", x, w)


def dot_over_model(
    x: NamedArray[f32, "batch@data embed@model"], w: NamedArray[f32, "embed@model mlp@()"]
) -> NamedArray[f32, "batch@data mlp"]:
    return tnp.dot(x, w, axis="embed")


def dot_two_ways(
    x: NamedArray[f32, "batch@() embed@model"], w: NamedArray[f32, "embed@data mlp@()"]
) -> NamedArray[f32, "batch mlp"]:
    return tnp.dot(x, w, axis="embed")


def apart_on_one_mesh_axis(
    a: NamedArray[f32, "i@data j@()"], b: NamedArray[f32, "i@() j@data k@()"]
) -> NamedArray[f32, "k"]:
    return tnp.einsum("{i,j},{i,j,k}->{k}", a, b)


def apart_beside_kept(
    a: NamedArray[f32, "i@data j@() b@model"], b: NamedArray[f32, "i@() j@model k@()"]
) -> NamedArray[f32, "b@model k"]:
    return tnp.einsum("{i,j,b},{i,j,k}->{b,k}", a, b)


def nested_splits(a: NamedArray[f32, "i@data j@model"], b: NamedArray[f32, "i@data j@() k@()"]) -> NamedArray[f32, "k"]:
    return tnp.einsum("{i,j},{i,j,k}->{k}", a, b)
