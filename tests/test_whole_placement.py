"""Known whole (``"batch@()"``: split over no mesh axis) in the algebra: the notation, the rules' handling of a whole
axis (``_algebra/_whole.py``, ``_placement.py``) and the check of a declared placement against it. Pure, no jax."""

from __future__ import annotations

import pytest

from typed_xmap._algebra import (
    AxisSpec,
    CollectiveKind,
    NamedShapeSyntaxError,
    broadcast_placement,
    contract_placement,
    declared_placement_error,
    describe_placed,
    gather_placement,
    mapped_placement,
    parse_placed_text,
    parse_shape_spec,
    placement_mismatch,
    reduce_placement,
    shown_spec,
    symbolic_spec,
    update_placement,
    window_placement,
)

DATA = ("data",)
MODEL = ("model",)
WHOLE: tuple[str, ...] = ()


def test_at_empty_parens_is_known_whole_and_prints_back() -> None:
    spec = parse_shape_spec("batch@()=8 seq@( ) embed@data")
    assert spec.axes == (AxisSpec("batch", 8, WHOLE), AxisSpec("seq", None, WHOLE), AxisSpec("embed", None, DATA))
    assert spec.placement == {"batch": WHOLE, "seq": WHOLE, "embed": DATA}
    assert spec.named_text() == "batch@()=8 seq@() embed@data"
    assert parse_shape_spec(spec.named_text()) == spec


@pytest.mark.parametrize(
    ("text", "problem"),
    [("batch@", "'@' names no mesh axis"), ("batch@(x,x)", "lists a mesh axis twice"), ("batch@(,)", "names no")],
)
def test_a_missing_or_repeated_mesh_axis_stays_a_syntax_error(text: str, problem: str) -> None:
    with pytest.raises(NamedShapeSyntaxError, match=problem):
        parse_shape_spec(text)


def test_the_plugins_notation_keeps_whole_and_shows_it_as_the_plain_name() -> None:
    text = symbolic_spec({"batch": 8, "seq": None, "embed": None}, {"batch": DATA, "seq": WHOLE})
    assert text == "batch@data=8 seq@() embed"
    assert parse_placed_text(text) == {"batch": DATA, "seq": WHOLE}
    assert shown_spec(text) == "batch@data=8 seq embed"
    assert describe_placed(["batch", "seq"], {"batch": DATA, "seq": WHOLE}) == "'batch@data seq'"


def test_a_mapping_places_what_it_names_and_leaves_every_other_axis_whole() -> None:
    assert mapped_placement(["batch", "seq", "embed"], {"batch": DATA}) == {"batch": DATA, "seq": WHOLE, "embed": WHOLE}


def test_whole_meets_split_as_split_without_a_collective() -> None:
    placed = broadcast_placement(
        ["batch", "embed"], [{"batch": WHOLE, "embed": WHOLE}, {"batch": DATA}], operation="x + y", axes=[None, None]
    )
    assert placed.placement == {"batch": DATA}  # embed: the second operand may split it (unknown axes)
    assert placed.collectives == ()


def test_an_axis_is_whole_only_where_every_operand_that_has_it_knows_it_whole() -> None:
    operands = [{"batch": WHOLE, "seq": WHOLE}, {"embed": WHOLE, "seq": WHOLE}]
    names = ["batch", "seq", "embed"]
    exact = broadcast_placement(names, operands, operation="x + y", axes=[["batch", "seq"], ["embed", "seq"]])
    assert exact.placement == {"batch": WHOLE, "seq": WHOLE, "embed": WHOLE}
    unknown_in_one = broadcast_placement(names, operands, operation="x + y", axes=[["batch", "seq"], names])
    assert unknown_in_one.placement == {"seq": WHOLE, "embed": WHOLE}  # the second has batch, placement unknown
    without_axes = broadcast_placement(names, operands, operation="x + y")
    assert without_axes.placement == {"seq": WHOLE}  # only what every operand places whole


def test_no_collective_over_a_whole_axis() -> None:
    assert reduce_placement({"batch": DATA, "embed": WHOLE}, ["embed"], operation="sum").collectives == ()
    assert reduce_placement({"batch": DATA, "embed": WHOLE}, ["embed"], operation="sum").placement == {"batch": DATA}
    contracted = contract_placement(
        ["batch"], ["embed"], [{"batch": DATA, "embed": WHOLE}, {"embed": WHOLE}], operation="einsum"
    )
    assert contracted.placement == {"batch": DATA}
    assert contracted.collectives == ()
    assert window_placement({"seq": WHOLE}, {"seq": 3}, {"seq": 1}, operation="pool").collectives == ()
    assert update_placement(["batch"], {"batch": DATA}, {"batch": WHOLE}, operation="x.at[...].set").collectives == ()


def test_a_split_contracted_axis_still_all_reduces_where_the_other_operand_has_it_whole() -> None:
    placed = contract_placement(["batch"], ["embed"], [{"embed": WHOLE}, {"embed": MODEL}], operation="einsum")
    assert [(c.kind, c.mesh_axes) for c in placed.collectives] == [(CollectiveKind.ALL_REDUCE, MODEL)]


def test_a_gather_keeps_the_operands_whole_axes_its_indices_do_not_have() -> None:
    placed = gather_placement(
        ["batch", "embed"],
        {"vocab": MODEL, "embed": WHOLE},
        ["vocab"],
        [{"batch": DATA}],
        operation="emb[...]",
        axes=[["vocab", "embed"], ["batch"]],
    )
    assert placed.placement == {"batch": DATA, "embed": WHOLE}


def test_a_known_whole_value_where_a_split_is_declared_is_a_placement_error_saying_so() -> None:
    error = declared_placement_error("argument 'w' of readout", {"hidden": MODEL}, {"hidden": WHOLE, "cls": DATA})
    assert error is not None
    assert str(error) == (
        "argument 'w' of readout is placed other than its annotation says: axis 'hidden' is whole (replicated) "
        "here, but the annotation declares 'hidden@model'. Fix: move the value with tx.constrain(..., "
        "{'hidden': 'model'}), or correct the annotation"
    )


def test_a_split_value_where_whole_is_declared_is_a_placement_error() -> None:
    error = declared_placement_error("the return value of f", {"batch": WHOLE}, {"batch": DATA})
    assert error is not None
    assert "axis 'batch' is split over mesh axis 'data', but the annotation declares it whole ('batch@()')" in str(
        error
    )
    assert "tx.constrain(..., {'batch': None})" in str(error)


def test_whole_against_whole_or_unknown_fits() -> None:
    assert declared_placement_error("x", {"batch": WHOLE}, {"batch": WHOLE}) is None
    assert declared_placement_error("x", {"batch": WHOLE}, {}) is None  # unknown: gradual
    assert declared_placement_error("x", {"batch": DATA}, {"seq": WHOLE}) is None
    assert placement_mismatch({"batch": WHOLE}, None) is None  # the runtime: placement not known
    assert placement_mismatch({"batch": WHOLE}, {}) is None  # the runtime: replicated


def test_hovers_show_a_known_whole_axis_as_its_plain_name() -> None:
    """``typed-xmap lsp`` hovers and ``typed-xmap inspect`` format types with the plugin's message formatter."""
    from typed_xmap._tools._lsp._format import format_type

    inspected = "\"NamedArray_[floating[_32Bit], Shape_[Literal['batch@data=8 seq@() embed@()']], tuple[()]]\""
    assert format_type(inspected) == 'NamedArray[f32, "batch@data=8 seq embed"]'
