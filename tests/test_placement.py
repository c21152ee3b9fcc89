"""Placement in the algebra (``_algebra/_placement.py``) and the spec notation ``"batch@data seq"``: pure rules,
no jax."""

from __future__ import annotations

import pytest

from typed_xmap._algebra import (
    AxisResourceConflict,
    AxisSpec,
    Collective,
    CollectiveKind,
    NamedShapeSyntaxError,
    broadcast_placement,
    contract_placement,
    conv_placement,
    keep_placement,
    move_placement,
    parse_placed_text,
    parse_shape_spec,
    parse_symbolic_spec,
    reduce_placement,
    rename_placement,
    stack_placement,
    symbolic_spec,
    window_placement,
)

DATA = ("data",)
MODEL = ("model",)


def test_spec_reads_placements_and_prints_them_back() -> None:
    spec = parse_shape_spec("batch@data=32 seq, heads@(x, y) embed")
    assert spec.axes == (
        AxisSpec("batch", 32, DATA),
        AxisSpec("seq"),
        AxisSpec("heads", None, ("x", "y")),
        AxisSpec("embed"),
    )
    assert spec.placement == {"batch": DATA, "heads": ("x", "y")}
    assert spec.named_text() == "batch@data=32 seq heads@(x,y) embed"
    assert parse_shape_spec(spec.named_text()) == spec


def test_specs_without_placement_keep_their_meaning() -> None:
    spec = parse_shape_spec("batch=32, seq")
    assert spec.axes == (AxisSpec("batch", 32), AxisSpec("seq"))
    assert spec.placement == {}
    assert spec.named_text() == "batch=32 seq"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("batch@", "'@' names no mesh axis"),
        ("batch@=8", "'@' names no mesh axis"),
        ("batch@1x", "'1x' is not a mesh axis name"),
        ("batch@(x,x)", "'@(x,x)' lists a mesh axis twice"),
    ],
)
def test_bad_placements_are_syntax_errors(text: str, problem: str) -> None:
    with pytest.raises(NamedShapeSyntaxError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        parse_shape_spec(text)


def test_the_plugins_notation_carries_placement_beside_symbolic_sizes() -> None:
    text = symbolic_spec(
        {"batch": 8, "mlp": parse_symbolic_spec("mlp=cfg.mlp // 2")["mlp"], "heads": None},
        {"batch": DATA, "heads": ("x", "y")},
    )
    assert text == "batch@data=8 mlp=cfg.mlp // 2 heads@(x,y)"
    assert parse_placed_text(text) == {"batch": DATA, "heads": ("x", "y")}
    assert list(parse_symbolic_spec(text)) == ["batch", "mlp", "heads"]  # names without their placement


def test_broadcast_is_the_union_of_the_operands_placements() -> None:
    placed = broadcast_placement(["batch", "seq", "embed"], [{"batch": DATA}, {"embed": MODEL}], operation="x + y")
    assert placed.placement == {"batch": DATA, "embed": MODEL}
    assert placed.collectives == ()


def test_one_name_placed_two_ways_is_unknown_and_moved_not_an_error() -> None:
    placed = broadcast_placement(["batch"], [{"batch": DATA}, {"batch": MODEL}], operation="x + y")
    assert placed.placement == {}
    assert [c.kind for c in placed.collectives] == [CollectiveKind.RESHARD]
    assert placed.collectives[0].mesh_axes == ("data", "model")


def test_two_names_on_one_mesh_axis_in_a_result_are_the_resource_conflict() -> None:
    with pytest.raises(AxisResourceConflict) as caught:
        broadcast_placement(["batch", "heads"], [{"batch": DATA}, {"heads": DATA}], operation="x * y")
    assert str(caught.value).startswith(
        "axes 'batch' and 'heads' are both assigned to mesh axis 'data', but they meet in the result of x * y "
        "(a value with axes 'batch@data heads@data')"
    )


def test_a_reduction_over_a_split_axis_is_an_all_reduce_over_its_mesh_axes() -> None:
    placed = reduce_placement({"batch": DATA, "embed": ("x", "y")}, ["embed"], operation="tnp.sum(x, 'embed')")
    assert placed.placement == {"batch": DATA}
    assert placed.collectives == (
        Collective(CollectiveKind.ALL_REDUCE, ("x", "y"), "tnp.sum(x, 'embed') reduces 'embed', split over (x,y)"),
    )
    assert reduce_placement({"batch": DATA}, ["embed"], operation="sum").collectives == ()


def test_a_contraction_over_a_split_axis_all_reduces_or_all_gathers() -> None:
    x, w = {"batch": DATA, "embed": MODEL}, {"embed": MODEL}
    placed = contract_placement(["batch", "mlp"], ["embed"], [x, w], operation="einsum")
    assert placed.placement == {"batch": DATA}
    assert [(c.kind, c.mesh_axes) for c in placed.collectives] == [(CollectiveKind.ALL_REDUCE, MODEL)]
    scattered = contract_placement(["batch", "mlp"], ["embed"], [x, {"mlp": MODEL}], operation="einsum")
    assert scattered.placement == {"batch": DATA, "mlp": MODEL}
    assert [(c.kind, c.mesh_axes) for c in scattered.collectives] == [(CollectiveKind.ALL_GATHER, MODEL)]
    assert str(scattered.collectives[0]) == (
        "all-gather over model: einsum contracts 'embed', split over model, where the result is split too"
    )


def test_a_contraction_whose_result_meets_two_names_on_one_mesh_axis_conflicts() -> None:
    with pytest.raises(AxisResourceConflict, match="'batch' and 'heads' are both assigned to mesh axis 'data'"):
        contract_placement(["batch", "heads"], ["embed"], [{"batch": DATA}, {"heads": DATA}], operation="einsum")


def test_unknown_placement_never_conflicts() -> None:
    assert broadcast_placement(["batch", "heads"], [{}, {}], operation="x + y").placement == {}
    assert contract_placement(["batch"], ["embed"], [{}, {"batch": DATA}], operation="einsum").collectives == ()


def test_rename_moves_the_placement_with_the_name() -> None:
    assert rename_placement({"seq": DATA, "embed": MODEL}, {"seq": "kv_seq"}) == {"kv_seq": DATA, "embed": MODEL}


def test_hovers_show_placements() -> None:
    """The language server's hovers show what ``dmypy inspect`` prints (mypy's ``format_type``: the shape's
    text, placements included) in the annotation notation, as mypy's errors do."""
    from typed_xmap._tools._lsp._format import format_type

    inspected = "\"NamedArray_[floating[_32Bit], Shape_[Literal['batch@data=8 seq heads@(data,model)']], tuple[()]]\""
    assert format_type(inspected) == 'NamedArray[f32, "batch@data=8 seq heads@(data,model)"]'


def test_structure_keeps_the_axes_the_call_does_not_name() -> None:
    placement = {"batch": DATA, "height": MODEL}
    assert keep_placement(["batch", "height", "chan"], placement).placement == placement
    assert keep_placement(["batch", "height"], placement, changed=["height"]).placement == {"batch": DATA}
    assert keep_placement(["hw", "chan"], placement).placement == {}  # merged away: the new axis unknown


def test_stack_and_concatenate_meet_their_items_the_new_axis_unknown() -> None:
    placed = stack_placement(["layers", "batch", "seq"], [{"batch": DATA}, {"seq": MODEL}], "layers", operation="s")
    assert placed.placement == {"batch": DATA, "seq": MODEL}
    joined = stack_placement(["batch", "seq"], [{"seq": DATA}, {"seq": DATA, "batch": MODEL}], "seq", operation="c")
    assert joined.placement == {"batch": MODEL}
    with pytest.raises(AxisResourceConflict, match="'batch' and 'seq'"):
        stack_placement(["layers", "batch", "seq"], [{"batch": DATA}, {"seq": DATA}], "layers", operation="s")


def test_overlapping_windows_over_a_split_axis_exchange_halos() -> None:
    placement = {"batch": DATA, "height": MODEL}
    pooled = window_placement(placement, {"height": 3, "width": 3}, {"height": 1, "width": 1}, operation="p")
    assert pooled.placement == placement
    assert [(c.kind, c.mesh_axes) for c in pooled.collectives] == [(CollectiveKind.COLLECTIVE_PERMUTE, MODEL)] * 2
    assert window_placement(placement, {"height": 2}, {"height": 2}, operation="p").collectives == ()
    assert window_placement(placement, {"height": None}, {"height": 1}, operation="p").collectives == ()


def test_a_conv_leaves_its_split_spatial_axes_whole() -> None:
    placement = {"batch": DATA, "height": MODEL}
    contracted = contract_placement(["batch", "height", "out"], ["chan"], [placement], operation="c")
    conv = conv_placement(contracted, placement, {"height": 1, "width": 3}, {"height": 1, "width": 1}, operation="c")
    assert conv.placement == {"batch": DATA}  # a 1x1 window too: the runtime asks for the batch's and features' only
    assert [(c.kind, c.mesh_axes) for c in conv.collectives] == [(CollectiveKind.RESHARD, MODEL)]


def test_a_move_places_by_its_target_and_swaps_or_gathers_mesh_axes() -> None:
    names = ["batch", "expert", "slot", "embed"]
    tokens, experts = {"batch": ("data", "model")}, {"batch": DATA, "expert": MODEL}
    dispatch = move_placement(names, tokens, experts, operation="d")
    assert dispatch.placement == experts
    assert [(c.kind, c.mesh_axes) for c in dispatch.collectives] == [(CollectiveKind.ALL_TO_ALL, MODEL)]
    gathered = move_placement(names, {"batch": DATA, "embed": MODEL}, {"batch": DATA}, operation="m")
    assert [(c.kind, c.mesh_axes) for c in gathered.collectives] == [(CollectiveKind.ALL_GATHER, MODEL)]
    assert move_placement(names, {}, experts, operation="m").collectives == ()  # unknown source: none listed
    with pytest.raises(AxisResourceConflict):
        move_placement(names, {}, {"batch": MODEL, "expert": MODEL}, operation="m")


def test_a_move_lists_its_collectives_per_named_axis() -> None:
    """Each named axis's change on its own (as XLA compiles it): an all-gather per axis made whole, an all-to-all
    per pair of axes a mesh axis moves between, a reshard where another mesh axis takes one's place."""
    names, placed = ["batch", "seq", "embed"], {"batch": DATA, "seq": MODEL}

    def listed(source: dict[str, tuple[str, ...]], target: dict[str, tuple[str, ...]]) -> list[tuple[str, str]]:
        return [(c.kind.value, c.why) for c in move_placement(names, source, target, operation="m").collectives]

    assert listed(placed, {}) == [
        ("all-gather", "m leaves 'batch' whole, split over data"),
        ("all-gather", "m leaves 'seq' whole, split over model"),
    ]
    assert listed(placed, {"seq": DATA, "embed": MODEL}) == [
        ("all-to-all", "m moves data from one axis to another ('batch' -> 'seq')"),
        ("all-to-all", "m moves model from one axis to another ('seq' -> 'embed')"),
    ]
    assert listed({"batch": DATA}, {"batch": MODEL}) == [
        ("reshard", "m puts model where data split 'batch' (moved as XLA chooses)")
    ]
    assert listed({"batch": DATA}, {"batch": ("data", "model")}) == []  # a local slice
    assert listed(placed, {"batch": MODEL, "seq": DATA}) == [  # a swap: XLA's moves depend on the mesh's sizes
        ("reshard", "m exchanges (data,model) among 'batch', 'seq' (moved as XLA chooses)")
    ]
    three = {"batch": ("a",), "seq": ("b",), "embed": ("c",)}
    assert listed(three, {"batch": ("b",), "seq": ("c",), "embed": ("a",)}) == [  # a cycle of three
        ("reshard", "m exchanges (a,b,c) among 'batch', 'seq', 'embed' (moved as XLA chooses)")
    ]
    assert listed(three, {"batch": ("b",), "seq": ("a",)}) == [  # a swap, and a third axis gathered
        ("reshard", "m exchanges (a,b) among 'batch', 'seq' (moved as XLA chooses)"),
        ("all-gather", "m leaves 'embed' whole, split over c"),
    ]
