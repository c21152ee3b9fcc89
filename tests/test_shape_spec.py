"""The annotation spec language: parsing, formatting, pinned syntax errors, round trip."""

import pytest
from hypothesis import given, strategies as st

from typed_xmap import NamedShapeError, NamedShapeSyntaxError
from typed_xmap._algebra import (
    AxisSpec,
    ErrorKind,
    Mismatch,
    ShapeSpec,
    parse_named_axes,
    parse_positional,
    parse_shape_spec,
)


def test_parses_names_and_sizes():
    assert parse_named_axes("batch=32 in_features") == (AxisSpec("batch", 32), AxisSpec("in_features"))
    assert parse_named_axes("") == ()
    assert parse_named_axes("a, b=2") == (AxisSpec("a"), AxisSpec("b", 2))


def test_parses_positional_dims():
    assert parse_positional("n 3 _ ...") == ("n", 3, "_", "...")
    assert parse_shape_spec("left", "n 3") == ShapeSpec((AxisSpec("left"),), ("n", 3))
    assert parse_shape_spec("left").positional is None


def test_syntax_error_points_at_bad_size():
    with pytest.raises(NamedShapeSyntaxError) as info:
        parse_named_axes("batch=3x in")
    assert str(info.value) == (
        "invalid spec 'batch=3x in': the size of axis 'batch' must be a non-negative integer, got '3x'\n"
        "    batch=3x in\n"
        "          ^^\n"
        "fix: write batch=SIZE with an integer SIZE, or just batch"
    )


def test_syntax_error_points_at_bad_name():
    with pytest.raises(NamedShapeSyntaxError) as info:
        parse_named_axes("batch 3d")
    assert str(info.value) == (
        "invalid spec 'batch 3d': '3d' is not an axis name\n"
        "    batch 3d\n"
        "          ^^\n"
        'fix: axis names are Python identifiers, optionally with a size: "batch=32 in_features"'
    )


def test_syntax_error_on_repeated_axis():
    with pytest.raises(NamedShapeSyntaxError, match="axis 'a' is listed twice") as info:
        parse_named_axes("a b a")
    assert "\n        ^\n" in str(info.value)


@pytest.mark.parametrize("spec", [",", ",,", " , ", ", ,"])
def test_separators_alone_are_a_syntax_error_not_the_empty_shape(spec):
    """Fuzz finding: ",," parsed as "" (no axes). "" is the empty shape; commas only separate names."""
    assert parse_named_axes("") == () and parse_positional("") == ()
    for parse in (parse_named_axes, parse_positional):
        with pytest.raises(NamedShapeSyntaxError) as info:
            parse(spec)
        assert info.value.kind is ErrorKind.SYNTAX
        first, last = spec.index(","), len(spec.rstrip())
        assert str(info.value) == (
            f"invalid spec {spec!r}: commas separate names, but there are none\n"
            f"    {spec}\n"
            f"    {' ' * first}{'^' * (last - first)}\n"
            'fix: write "" for no names, or names between the commas: "batch, features"'
        )


def test_syntax_errors_are_named_shape_errors_and_both_builtin_kinds():
    with pytest.raises(NamedShapeError):
        parse_positional("n 3.5")
    with pytest.raises(TypeError):
        parse_positional("... ...")
    with pytest.raises(ValueError):
        parse_named_axes("=3")


names = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)
axis_specs = st.lists(st.tuples(names, st.none() | st.integers(0, 99)), unique_by=lambda t: t[0], max_size=5).map(
    lambda items: tuple(AxisSpec(n, s) for n, s in items)
)
positional_dims = st.lists(st.integers(0, 99) | names | st.sampled_from(["_"]), max_size=4).flatmap(
    lambda dims: st.sampled_from([tuple(dims), (*dims, "...")])
)


@given(axis_specs, st.none() | positional_dims)
def test_parse_format_round_trip(axes, positional):
    spec = ShapeSpec(axes, positional)
    assert parse_shape_spec(spec.named_text(), spec.positional_text()) == spec


def test_parses_a_variadic_group():
    spec = parse_shape_spec("*rest embed")
    assert spec == ShapeSpec((AxisSpec("embed"),), None, "rest")
    assert spec.group_key == "*rest"
    assert spec.named_text() == "*rest embed"
    assert parse_shape_spec("embed *rest, n").axes == (AxisSpec("embed"), AxisSpec("n"))
    assert parse_shape_spec("*rest").axes == ()
    assert parse_shape_spec("embed").group is None


def test_a_group_binds_the_other_axes_and_two_uses_must_agree():
    from typed_xmap._algebra import match_shape_spec, merge_bindings

    spec = parse_shape_spec("*rest embed")
    found = match_shape_spec(spec, {"batch": 2, "seq": 3, "embed": 4}, (), {})
    assert not isinstance(found, Mismatch)
    assert dict(found["*rest"]) == {"batch": 2, "seq": 3}  # type: ignore[arg-type]
    assert found["batch"] == 2  # its axes are bound by name too: one name, one size per call
    assert match_shape_spec(parse_shape_spec("*rest"), {"batch": 2, "seq": 3}, (), found) == {}
    fewer = match_shape_spec(parse_shape_spec("*rest"), {"batch": 2}, (), found)
    assert isinstance(fewer, Mismatch) and fewer.kind is ErrorKind.AXIS_MISSING and fewer.axis == "seq"
    resized = match_shape_spec(spec, {"batch": 5, "seq": 3, "embed": 4}, (), found)
    assert isinstance(resized, Mismatch) and resized.kind is ErrorKind.AXIS_SIZE
    # the runtime's path (match against nothing, cached; merged per call) agrees with the direct match
    alone = match_shape_spec(spec, {"batch": 2, "embed": 4}, (), {})
    assert not isinstance(alone, Mismatch)
    merged = merge_bindings(spec, alone, found)
    assert (
        isinstance(merged, Mismatch)
        and merged.reason == match_shape_spec(spec, {"batch": 2, "embed": 4}, (), found).reason
    )  # type: ignore[union-attr]
    missing = match_shape_spec(spec, {"batch": 2}, (), {})
    assert isinstance(missing, Mismatch) and missing.axis == "embed"


def test_a_group_with_unknown_sizes_never_clashes():
    from typed_xmap._algebra import match_shape_spec

    spec = parse_shape_spec("*rest")
    assert match_shape_spec(spec, {"batch": None}, (), {"*rest": {"batch": 3}}) == {}
