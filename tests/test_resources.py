"""The axis-resource conflict rule and resource validation (pure)."""

import pytest

import typed_xmap as tx
from typed_xmap import AxisResourceConflict, NamedShapeError
from typed_xmap._algebra import Conflict, conflict_error, normalize_axis_resources, resource_conflicts


def test_normalize():
    loop = tx.SerialLoop(2)
    assert normalize_axis_resources({"a": "x", "b": ("x", "y"), "c": loop}) == {
        "a": ("x",),
        "b": ("x", "y"),
        "c": (loop,),
    }
    assert normalize_axis_resources(None) == {}


def test_repeated_resource_for_one_axis():
    with pytest.raises(NamedShapeError) as info:
        normalize_axis_resources({"a": ("x", "x")})
    assert str(info.value) == (
        "axis_resources['a'] = ('x', 'x'): a single axis must be assigned a tuple of distinct resources. "
        "Fix: list each mesh axis once"
    )


def test_conflicts_only_when_axes_meet():
    resources = normalize_axis_resources({"a": "x", "b": ("y", "x"), "c": "y", "d": "z"})
    assert resource_conflicts(["a", "d"], resources) == []
    assert resource_conflicts(["a", "b"], resources) == [Conflict("a", "b", "x")]
    assert resource_conflicts(["b", "c", "a"], resources) == [Conflict("b", "c", "y"), Conflict("b", "a", "x")]
    assert resource_conflicts(["a"], resources) == []


def test_conflict_error_wording():
    error = conflict_error(Conflict("a", "b", "x"), "input x of f")
    assert isinstance(error, AxisResourceConflict) and isinstance(error, TypeError)
    assert str(error) == (
        "axes 'a' and 'b' are both assigned to mesh axis 'x', but they meet in input x of f: one value "
        "cannot be split over one mesh axis along two of its axes. Fix: assign 'b' to another mesh axis, "
        "or keep the two axes in separate values (reduce one of them first)"
    )


def test_serial_loops_are_distinct_resources():
    first, second = tx.SerialLoop(2), tx.SerialLoop(2)
    resources = normalize_axis_resources({"a": first, "b": second})
    assert resource_conflicts(["a", "b"], resources) == []
    with pytest.raises(NamedShapeError, match="positive int"):
        tx.SerialLoop(0)
