"""Broadcast by name (union), reduce by name and matching annotations: the pure algebra."""

import pytest
from hypothesis import given, strategies as st

from typed_xmap import NamedShapeError
from typed_xmap._algebra import (
    ErrorKind,
    Mismatch,
    broadcast_positional,
    einsum_result,
    match_shape_spec,
    meet_sizes,
    merge_bindings,
    parse_einsum,
    parse_shape_spec,
    reduce_named_shape,
    size_add,
    symbol,
    union_named_shapes,
)

SIZES = {"a": 2, "b": 3, "c": 4, "d": 5}
shapes = st.dictionaries(st.sampled_from(sorted(SIZES)), st.just(0)).map(lambda d: {k: SIZES[k] for k in d})
clashing = st.dictionaries(st.sampled_from(sorted(SIZES)), st.integers(1, 3))


def union(*shapes):
    return union_named_shapes(shapes, operation="test")


@given(shapes, shapes)
def test_union_is_commutative(x, y):
    assert union(x, y) == union(y, x)  # as dicts: order-free


@given(shapes, shapes, shapes)
def test_union_is_associative(x, y, z):
    assert union(union(x, y), z) == union(x, union(y, z)) == union(x, y, z)


@given(clashing, clashing)
def test_union_raises_exactly_on_a_clash(x, y):
    clash = any(x[k] != y[k] for k in x.keys() & y.keys())
    if clash:
        with pytest.raises(NamedShapeError):
            union(x, y)
    else:
        assert union(x, y) == {**x, **y}


def test_union_clash_message():
    with pytest.raises(NamedShapeError) as info:
        union_named_shapes([{"batch": 8, "in": 4}, {"batch": 6}], operation="`x + y`", operands=["x", "y"])
    assert str(info.value) == (
        "axis 'batch' has size 8 in x ('batch=8 in=4') but size 6 in y ('batch=6') in `x + y`; values "
        "broadcast by name, so one axis name must have one size. Fix: rename one of the axes, or slice "
        "the larger to the smaller size: x[{'batch': slice(0, 6)}]"
    )


def test_unknown_sizes_never_clash():
    assert union({"a": None}, {"a": 3}) == {"a": 3}
    assert union({"a": 3}, {"a": None}) == {"a": 3}


def test_reduce_removes_names_and_reports_missing():
    assert reduce_named_shape({"a": 2, "b": 3}, ["a"], operation="sum") == {"b": 3}
    with pytest.raises(NamedShapeError) as info:
        reduce_named_shape({"a": 2, "b": 3}, ["c"], operation="tnp.sum(x, 'c')", operand="x")
    assert str(info.value) == (
        "tnp.sum(x, 'c') reduces over axis 'c', but x has named axes 'a=2 b=3'. Fix: reduce over axes "
        "the value has, or check the axis name's spelling"
    )


def test_positional_broadcasting():
    assert broadcast_positional([(3, 1), (4,), ()], operation="t") == (3, 4)
    with pytest.raises(NamedShapeError, match=r"dim -1: 3 vs 4"):
        broadcast_positional([(3,), (4,)], operation="t")


def test_match_binds_and_detects():
    spec = parse_shape_spec("batch in=4", "n 3")
    assert match_shape_spec(spec, {"batch": 8, "in": 4}, (5, 3), {}) == {"batch": 8, "in": 4, "n": 5}
    bad = match_shape_spec(spec, {"batch": 8, "in": 4}, (5, 3), {"batch": 6})
    assert bad == Mismatch(
        "axis 'batch' has size 8 but was bound to 6 earlier in this call", ErrorKind.AXIS_SIZE, "batch"
    )
    assert match_shape_spec(spec, {"batch": 8, "in": 4}, (5, 3), {"n": 7}) == Mismatch(
        "positional dim 'n' has size 5 but was bound to 7 earlier in this call", ErrorKind.POSITIONAL, "n"
    )
    assert isinstance(match_shape_spec(spec, {"batch": 8, "in": 5}, (5, 3), {}), Mismatch)
    assert isinstance(match_shape_spec(spec, {"batch": 8}, (5, 3), {}), Mismatch)
    assert isinstance(match_shape_spec(spec, {"batch": 8, "in": 4}, (5, 2), {}), Mismatch)
    assert isinstance(match_shape_spec(spec, {"batch": 8, "in": 4}, (5,), {}), Mismatch)


def test_match_variadic_positional():
    spec = parse_shape_spec("", "n ... 3")
    assert match_shape_spec(spec, {}, (2, 7, 7, 3), {}) == {"n": 2}
    assert isinstance(match_shape_spec(spec, {}, (3,), {}), Mismatch)


@given(shapes, st.dictionaries(st.sampled_from(sorted(SIZES)), st.integers(1, 9)))
def test_merge_equals_direct_match(named, bindings):
    spec = parse_shape_spec(" ".join(named))
    direct = match_shape_spec(spec, named, (), bindings)
    cached = match_shape_spec(spec, named, (), {})
    merged = merge_bindings(spec, cached, bindings)
    if isinstance(direct, Mismatch):
        assert isinstance(merged, Mismatch)
    else:
        assert {**bindings, **direct} == {**bindings, **merged}


def test_size_clashes_of_broadcast_einsum_and_symbols_record_their_axis():
    """A size clash names the axis it is on (``error.axes``), as a missing axis does: the plugin reads it to
    tell a clash on declared axes (certain, whatever a ``*rest`` group holds) and which rule reports it."""
    with pytest.raises(NamedShapeError) as broadcast:
        union_named_shapes([{"batch": 4, "embed": 3}, {"batch": 8}], operation="a + b")
    spec = parse_einsum("{batch,embed},{batch}->{embed}")
    with pytest.raises(NamedShapeError) as contraction:
        einsum_result(spec, [{"batch": 4, "embed": 3}, {"batch": 8}], [(), ()], operation="einsum")
    n = symbol("cfg.n")
    with pytest.raises(NamedShapeError) as symbolic:
        meet_sizes([{"e": size_add(n, 1), "f": 2}, {"e": n}], operation="a * b")
    for error in (broadcast, contraction, symbolic):
        assert error.value.kind is ErrorKind.AXIS_SIZE
    assert (broadcast.value.axes, contraction.value.axes, symbolic.value.axes) == (("batch",), ("batch",), ("e",))
